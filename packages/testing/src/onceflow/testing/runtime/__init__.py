"""Test support shared by the packages that run connectors: a counting source connector, a reader
that keeps headers, and a worker running as a real child process (for ``kill -9``)."""

from onceflow.core.process import free_port
from onceflow.testing.runtime.counter import CounterSourceConnector, CounterSourceTask
from onceflow.testing.runtime.process import WorkerProcess
from onceflow.testing.runtime.reader import Record, read_records

__all__ = ["CounterSourceConnector", "CounterSourceTask", "Record", "WorkerProcess", "free_port", "read_records"]
