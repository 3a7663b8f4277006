"""The participant contract: :class:`SinkParticipant`, transaction ids, votes and outcomes."""

from onceflow.sinks.base.participant import SinkParticipant
from onceflow.sinks.base.rows import BoundRows, last_row_per_key, load_outputs, output_rows
from onceflow.sinks.base.txn import Outcome, PrepareResult, TxnId

__all__ = [
    "BoundRows",
    "Outcome",
    "PrepareResult",
    "SinkParticipant",
    "TxnId",
    "last_row_per_key",
    "load_outputs",
    "output_rows",
]
