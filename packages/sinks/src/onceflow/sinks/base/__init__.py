"""The participant contract: :class:`SinkParticipant`, votes and outcomes (transaction ids, votes and
commit records are the contract's: ``onceflow.contract``)."""

from onceflow.sinks.base.commits import MAX_LISTED_BATCHES, committed_batches_query, group_committed
from onceflow.sinks.base.journal import PreparedJournal
from onceflow.sinks.base.participant import SinkParticipant
from onceflow.sinks.base.rows import BoundRows, last_row_per_key, load_outputs, output_rows

__all__ = [
    "MAX_LISTED_BATCHES",
    "BoundRows",
    "PreparedJournal",
    "SinkParticipant",
    "committed_batches_query",
    "group_committed",
    "last_row_per_key",
    "load_outputs",
    "output_rows",
]
