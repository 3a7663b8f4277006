"""The cross-process contract: what the Spark driver, the coordinator, the sink participants, the
consumer and the demo agree on. Transaction ids and states, participants' votes, what the coordinator
reports of a transaction (:mod:`onceflow.core.contract.report`), what sinks' commit records say
(:mod:`onceflow.core.contract.commits`), what the consumer's Results API answers
(:mod:`onceflow.core.contract.results`), participant refs, sink bindings (which
output goes to which table or topic, how), the output schemas they carry and how a sink served by
several participant processes splits a batch (:mod:`onceflow.core.contract.shards`) live here, and
:mod:`onceflow.core.contract.clients` holds the typed clients of the coordinator and the participants;
staged-file descriptors live in :mod:`onceflow.core.staging`.
"""

from onceflow.core.contract.bindings import (
    DEAD_LETTERS_OUTPUT,
    DEFAULT_OUTPUT,
    InvalidBinding,
    SinkBinding,
    SinkMode,
    ValueFormat,
)
from onceflow.core.contract.commits import CommittedBatches, HostedCommits
from onceflow.core.contract.participant_ref import ParticipantRef
from onceflow.core.contract.report import ParticipantVote, TransactionOutcome, TransactionReport
from onceflow.core.contract.reserved import refuse_internal
from onceflow.core.contract.schema import (
    UnsupportedColumnType,
    check_supported,
    schema_from_bytes,
    schema_to_bytes,
)
from onceflow.core.contract.shards import MAX_SHARDS, WHOLE_SINK, Shard
from onceflow.core.contract.state import Resolution, TransactionState
from onceflow.core.contract.txn import TransactionId
from onceflow.core.contract.vote import PrepareVote

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
