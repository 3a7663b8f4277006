"""DescribeTransactions v0 response, as kio generates it except for ``transaction_start_time``.

Kafka sends -1 there for a transactional id that has no transaction (none yet, or none since its
last InitProducerId); kio's ``datetime_i64`` reader refuses negative timestamps, so the admin client
reads the field as a plain int64 (milliseconds since the epoch, -1 for none). No ``from __future__
import annotations`` here: kio reads the field types at runtime.
"""

from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.describe_transactions.v0.response import TopicData
from kio.schema.errors import ErrorCode
from kio.schema.response_header.v1.header import ResponseHeader
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32Timedelta, i64


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedTransaction:
    """One described transactional id."""

    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(65)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    transactional_id: str = field(metadata={"kafka_type": "string"})
    transaction_state: str = field(metadata={"kafka_type": "string"})
    transaction_timeout: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    transaction_start_time: i64 = field(metadata={"kafka_type": "int64"})
    producer_id: i64 = field(metadata={"kafka_type": "int64"})
    producer_epoch: i16 = field(metadata={"kafka_type": "int16"})
    topics: tuple[TopicData, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeTransactionsResponse:
    """The whole response."""

    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(65)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    transaction_states: tuple[DescribedTransaction, ...]
