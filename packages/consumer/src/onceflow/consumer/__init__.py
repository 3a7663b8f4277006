"""onceflow.consumer: the read_committed results consumer, its Results gRPC API, and the audit.

Sub-packages, one concept each:

- :mod:`.store`: :class:`~onceflow.consumer.store.ResultsStore`, results and consumed offsets committed
  in one database transaction (SQLite by default, PostgreSQL as an option);
- :mod:`.loop`: :class:`~onceflow.consumer.loop.ResultsConsumer`, the consumer-group member that reads
  the stored topics with read_committed and applies each batch with its offsets;
- :mod:`.extension`: what installed extensions add (stored tables, their Results RPCs);
- :mod:`.api`: the ``onceflow.v1.Results`` servicer over the stored tables;
- :mod:`.audit`: ground truth (generator or ``ip_count_source``) compared with every sink;
- :mod:`.service`: store + consumer + API + metrics in one process (``onceflow consumer``);
- :mod:`.cli`: ``onceflow consumer``, ``onceflow results ...``, ``onceflow audit``.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("onceflow-consumer")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

__all__ = ["__version__"]
