"""The ``access-log-file`` connector: tail a file, follow rotation, parse lines, dead-letter the bad ones."""

from onceflow.logproducer.tailer.connector import AccessLogFileConnector, AccessLogFileTask
from onceflow.logproducer.tailer.position import FilePosition
from onceflow.logproducer.tailer.reader import Line, RotatingFileReader

__all__ = ["AccessLogFileConnector", "AccessLogFileTask", "FilePosition", "Line", "RotatingFileReader"]
