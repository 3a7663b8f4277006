"""What the transaction coordinator answers: plain, immutable values with no protocol types in them."""

from __future__ import annotations

from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from onceflow.broker.transactions.metadata import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_START_TIME


@dataclass(frozen=True)
class InitProducerIdResult:
    """The answer to InitProducerId: the producer id and epoch to use, or an error (then both are -1)."""

    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True)
class TransactionListing:
    """One line of ListTransactions."""

    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True)
class TransactionDescription:
    """One entry of DescribeTransactions. ``groups`` (not in Kafka's response) names the consumer
    groups whose offsets are in the transaction; Kafka shows them as ``__consumer_offsets`` partitions.
    """

    error: ErrorCode
    transactional_id: str
    state: str = ""
    timeout_ms: int = 0
    start_time_ms: int = NO_START_TIME
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    topics: dict[str, list[int]] = field(default_factory=dict)
    groups: list[str] = field(default_factory=list)
