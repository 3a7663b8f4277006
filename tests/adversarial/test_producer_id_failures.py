"""An InitProducerId whose producer-id block cannot be written is refused, not a dropped connection
(issue 14).

The allocator reserves id blocks through ``producer-ids.tmp``; a directory planted at that path
makes the write fail for real. The answer is COORDINATOR_NOT_AVAILABLE (clients retry), and once the
path is free the next request gets an id.
"""

# Raw kio requests take plain ints where kio declares NewType wrappers (ProducerId).
# mypy: disable-error-code="arg-type"

from __future__ import annotations

import datetime

from kio.schema.errors import ErrorCode
from kio.schema.init_producer_id.v4 import InitProducerIdRequest
from kio.static.primitive import i16, i32Timedelta

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.testing.broker.wire import WireClient

REQUEST = InitProducerIdRequest(
    transactional_id=None,
    transaction_timeout=i32Timedelta.parse(datetime.timedelta(seconds=60)),
    producer_id=-1,
    producer_epoch=i16(-1),
)


def test_init_producer_id_on_an_unwritable_id_block_is_retriable(broker: EmbeddedBroker) -> None:
    blocker = broker.data_dir / "producer-ids.tmp"
    blocker.mkdir()
    with WireClient(broker.bootstrap_servers) as client:
        refused = client.request(REQUEST)
        assert refused.error_code is ErrorCode.coordinator_not_available
        blocker.rmdir()
        granted = client.request(REQUEST)
        assert granted.error_code is ErrorCode.none
        assert granted.producer_id >= 0
