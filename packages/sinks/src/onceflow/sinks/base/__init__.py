"""The participant contract: :class:`SinkParticipant`, votes and outcomes (transaction ids are
``onceflow.core.contract.TransactionId``)."""

from onceflow.sinks.base.participant import SinkParticipant
from onceflow.sinks.base.rows import BoundRows, last_row_per_key, load_outputs, output_rows
from onceflow.sinks.base.txn import Outcome, PrepareResult

__all__ = [
    "BoundRows",
    "Outcome",
    "PrepareResult",
    "SinkParticipant",
    "last_row_per_key",
    "load_outputs",
    "output_rows",
]
