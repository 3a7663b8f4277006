"""onceflow demo: the whole pipeline embedded as supervised child processes, a live dashboard, chaos, and
the final audit of every sink (``onceflow demo``)."""

from onceflow.demo.options import DemoOptions
from onceflow.demo.runner import DemoRun, is_complete

__all__ = ["DemoOptions", "DemoRun", "is_complete"]
