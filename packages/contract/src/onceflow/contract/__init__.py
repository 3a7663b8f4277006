"""The cross-process contract: what the Spark driver, the coordinator, the sink participants, the
consumer and the demo agree on. Transaction ids and states, participants' votes, what the coordinator
reports of a transaction (:mod:`onceflow.contract.report`), what sinks' commit records say
(:mod:`onceflow.contract.commits`), what the consumer's Results API answers
(:mod:`onceflow.contract.results`), participant refs, sink bindings (which
output goes to which table or topic, how), the output schemas they carry and how a sink served by
several participant processes splits a batch (:mod:`onceflow.contract.shards`) live here, and
:mod:`onceflow.contract.clients` holds the typed clients of the coordinator and the participants;
staged-file descriptors live in :mod:`onceflow.contract.staging`.
"""

from onceflow.contract.bindings import (
    DEAD_LETTERS_OUTPUT,
    DEFAULT_OUTPUT,
    InvalidBinding,
    SinkBinding,
    SinkMode,
    ValueFormat,
)
from onceflow.contract.commits import CommittedBatches, HostedCommits
from onceflow.contract.participant_ref import ParticipantRef
from onceflow.contract.report import ParticipantVote, TransactionOutcome, TransactionReport
from onceflow.contract.reserved import refuse_internal
from onceflow.contract.schema import (
    check_supported,
    schema_from_bytes,
    schema_to_bytes,
)
from onceflow.contract.shards import MAX_SHARDS, WHOLE_SINK, Shard
from onceflow.contract.state import Resolution, TransactionState
from onceflow.contract.txn import TransactionId
from onceflow.contract.vote import PrepareVote
from onceflow.core.errors import UnsupportedColumnType

__all__ = [
    "DEAD_LETTERS_OUTPUT",
    "DEFAULT_OUTPUT",
    "MAX_SHARDS",
    "WHOLE_SINK",
    "CommittedBatches",
    "HostedCommits",
    "InvalidBinding",
    "ParticipantRef",
    "ParticipantVote",
    "PrepareVote",
    "Resolution",
    "Shard",
    "SinkBinding",
    "SinkMode",
    "TransactionId",
    "TransactionOutcome",
    "TransactionReport",
    "TransactionState",
    "UnsupportedColumnType",
    "ValueFormat",
    "check_supported",
    "refuse_internal",
    "schema_from_bytes",
    "schema_to_bytes",
]
