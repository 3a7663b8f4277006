"""CreateTopics and DeleteTopics whose registry write fails change nothing (issue 14).

The registry (``topics.json``) is rewritten through ``.topics.json.tmp``; a directory planted at that
path makes the write fail for real. A failed create leaves no partition directory and no topic, a
failed delete leaves the topic served; both answer KAFKA_STORAGE_ERROR and work once the path is free.
"""

# Raw kio requests take plain ints/strs where kio declares NewType wrappers.
# mypy: disable-error-code="arg-type"

from __future__ import annotations

import datetime

from kio.schema.create_topics.v7 import CreateTopicsRequest
from kio.schema.create_topics.v7.request import CreatableTopic
from kio.schema.delete_topics.v4 import DeleteTopicsRequest
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12 import MetadataRequest
from kio.static.primitive import i16, i32, i32Timedelta

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.testing.broker.wire import WireClient

TIMEOUT = i32Timedelta.parse(datetime.timedelta(seconds=5))


def _create(client: WireClient, name: str) -> ErrorCode:
    topic = CreatableTopic(name=name, num_partitions=i32(2), replication_factor=i16(1), assignments=(), configs=())
    code: ErrorCode = client.request(CreateTopicsRequest(topics=(topic,), timeout=TIMEOUT)).topics[0].error_code
    return code


def _delete(client: WireClient, name: str) -> ErrorCode:
    code: ErrorCode = client.request(DeleteTopicsRequest(topic_names=(name,), timeout=TIMEOUT)).responses[0].error_code
    return code


def _topics(client: WireClient) -> set[str]:
    response = client.request(MetadataRequest(topics=None, include_topic_authorized_operations=False))
    return {t.name for t in response.topics}


def test_failed_registry_writes_change_nothing(broker: EmbeddedBroker) -> None:
    blocker = broker.data_dir / ".topics.json.tmp"
    with WireClient(broker.bootstrap_servers) as client:
        assert _create(client, "kept") is ErrorCode.none
        blocker.mkdir()
        assert _create(client, "never") is ErrorCode.kafka_storage_error
        assert _delete(client, "kept") is ErrorCode.kafka_storage_error
        assert _topics(client) == {"kept"}
        assert not any((broker.data_dir / "logs").glob("never-*"))
        blocker.rmdir()
        assert _delete(client, "kept") is ErrorCode.none
        assert _create(client, "never") is ErrorCode.none
        assert _topics(client) == {"never"}
