"""Access-log line formats: nginx ``combined`` and the reference lesson's minimal "time ip"."""

from onceflow.logproducer.formats.combined import parse_combined
from onceflow.logproducer.formats.errors import MalformedLine
from onceflow.logproducer.formats.parser import FORMATS, LineParser
from onceflow.logproducer.formats.time_ip import parse_time_ip

__all__ = ["FORMATS", "LineParser", "MalformedLine", "parse_combined", "parse_time_ip"]
