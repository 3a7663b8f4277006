"""onceflow.core: shared pieces of every onceflow package.

Sub-modules, one concept each:

- :mod:`onceflow.core.settings`: typed settings from a file plus environment overrides;
- :mod:`onceflow.core.avro`: the Avro schemas and single-object serde;
- :mod:`onceflow.core.topics` and :mod:`onceflow.core.defaults`: names and defaults from docs/design.md;
- :mod:`onceflow.core.errors`: domain exceptions;
- :mod:`onceflow.core.logging`: structured logging;
- :mod:`onceflow.core.metrics`: Prometheus helpers.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("onceflow-core")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

__all__ = ["__version__"]
