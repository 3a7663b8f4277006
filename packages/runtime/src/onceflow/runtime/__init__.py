"""onceflow.runtime: a Kafka-Connect-like worker runtime.

Layering, as in Kafka Connect:

- :mod:`onceflow.runtime.api`: what plugin authors implement (connectors, tasks, records);
- :mod:`onceflow.runtime.config`: declared, validated configuration (connector and worker);
- :mod:`onceflow.runtime.storage`: offset, config and status backing stores (memory, file, Kafka);
- :mod:`onceflow.runtime.worker`: the data plane, which runs tasks on threads;
- :mod:`onceflow.runtime.herder`: the control plane, which decides what runs where (standalone or
  distributed through Kafka consumer-group membership);
- :mod:`onceflow.runtime.admin`: the ``Connect`` gRPC service, a thin adapter over a herder.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("onceflow-runtime")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

__all__ = ["__version__"]
