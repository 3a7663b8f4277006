"""onceflow.logproducer: access-log source connectors for the onceflow runtime.

- ``access-log-file`` (:mod:`.tailer`): tails a file, follows rotation, parses nginx combined or the
  minimal "time ip" lines; malformed lines go to the dead-letter topic;
- :mod:`.encoding`: the AccessEvent encoding every access-log connector uses (the IP-count example's
  ``access-log-generator``, :mod:`onceflow.ipcount.generator`, too).

Records: key = ip, value = AccessEvent (Avro single-object encoding), timestamp = event time.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("onceflow-logproducer")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

__all__ = ["__version__"]
