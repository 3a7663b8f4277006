"""The participant contract: :class:`SinkParticipant`, transaction ids, votes and outcomes."""

from onceflow.sinks.base.participant import SinkParticipant
from onceflow.sinks.base.rows import load_batch
from onceflow.sinks.base.txn import Outcome, PrepareResult, TxnId

__all__ = ["Outcome", "PrepareResult", "SinkParticipant", "TxnId", "load_batch"]
