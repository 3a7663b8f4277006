"""Raw requests that ask a secured broker for one decision each, answered as plain error-code names.

Each probe sends one request at a fixed version (the ones librdkafka and Kafka's admin client use)
over a connection logged in with SASL/PLAIN, and returns what the broker answered, so the ACL
differential tests compare the embedded broker with Apache Kafka's StandardAuthorizer decision by
decision.
"""

from __future__ import annotations

import time
from typing import Any

from kio.schema.create_topics.v7.request import CreateTopicsRequest
from kio.schema.delete_groups.v2.request import DeleteGroupsRequest
from kio.schema.delete_records.v2.request import DeleteRecordsRequest
from kio.schema.delete_topics.v5.request import DeleteTopicsRequest
from kio.schema.describe_acls.v3.request import DescribeAclsRequest
from kio.schema.describe_configs.v4.request import DescribeConfigsRequest
from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchRequest
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.incremental_alter_configs.v1.request import IncrementalAlterConfigsRequest
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.list_groups.v4.request import ListGroupsRequest
from kio.schema.list_offsets.v7.request import ListOffsetsRequest
from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.offset_commit.v8.request import OffsetCommitRequest
from kio.schema.offset_fetch.v8.request import OffsetFetchRequest
from kio.schema.produce.v9.request import ProduceRequest

from onceflow.broker.protocol.shapes import build_entity
from onceflow.broker.storage import SimpleRecord, build_batch
from onceflow.testing.broker.wire import WireClient

RETRIABLE = {ErrorCode.coordinator_not_available, ErrorCode.coordinator_load_in_progress, ErrorCode.not_coordinator}


def _name(code: Any) -> str:
    return ErrorCode(code).name


def _ask(client: WireClient, request_cls: type[Any], values: dict[str, Any]) -> Any:
    return client.request(build_entity(request_cls, values))


def _retrying(client: WireClient, request_cls: type[Any], values: dict[str, Any], code_of: Any) -> Any:
    """Ask until the answer is not a coordinator still loading (a fresh Apache Kafka creates its
    internal topics on first use), as clients do."""
    deadline = time.monotonic() + 30
    while True:
        answer = _ask(client, request_cls, values)
        if code_of(answer) not in RETRIABLE or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def topic_decisions(client: WireClient, topic: str) -> dict[str, str]:
    """What ``client`` may do with an existing topic: produce, fetch, list offsets, describe it, read
    and change its configs, delete records."""
    batch = build_batch([SimpleRecord(key=None, value=b"probe")], timestamp_ms=int(time.time() * 1000))
    produce = _ask(
        client,
        ProduceRequest,
        {
            "acks": -1,
            "timeout": 5000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
        },
    )
    fetch = _ask(
        client,
        FetchRequest,
        {
            "max_wait": 0,
            "min_bytes": 0,
            "topics": [
                {"topic": topic, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1024}]}
            ],
        },
    )
    offsets = _ask(
        client,
        ListOffsetsRequest,
        {"replica_id": -1, "topics": [{"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]},
    )
    configs = _ask(
        client,
        DescribeConfigsRequest,
        {"resources": [{"resource_type": 2, "resource_name": topic, "configuration_keys": ["retention.ms"]}]},
    )
    alter = _ask(
        client,
        IncrementalAlterConfigsRequest,
        {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": topic,
                    "configs": [{"name": "retention.ms", "config_operation": 0, "value": "86400000"}],
                }
            ]
        },
    )
    records = _ask(
        client,
        DeleteRecordsRequest,
        {"timeout": 5000, "topics": [{"name": topic, "partitions": [{"partition_index": 0, "offset": 0}]}]},
    )
    return {
        "produce": _name(produce.responses[0].partition_responses[0].error_code),
        "fetch": _name(fetch.responses[0].partitions[0].error_code),
        "list_offsets": _name(offsets.topics[0].partitions[0].error_code),
        "metadata": metadata_decision(client, topic),
        "describe_configs": _name(configs.results[0].error_code),
        "alter_configs": _name(alter.responses[0].error_code),
        "delete_records": _name(records.topics[0].partitions[0].error_code),
    }


def metadata_decision(client: WireClient, topic: str) -> str:
    """Metadata for ``topic`` by name, never creating it."""
    answer = _ask(client, MetadataRequest, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
    return _name(answer.topics[0].error_code)


def visible_topics(client: WireClient) -> set[str]:
    """The topics an all-topics Metadata request lists."""
    answer = _ask(client, MetadataRequest, {"topics": None, "allow_auto_topic_creation": False})
    return {t.name for t in answer.topics}


def group_decisions(client: WireClient, group: str, topic: str) -> dict[str, str]:
    """What ``client`` may do with a group (a simple offset commit of ``topic``'s partition 0)."""
    find = _retrying(
        client,
        FindCoordinatorRequest,
        {"key_type": 0, "coordinator_keys": [group]},
        lambda a: a.coordinators[0].error_code,
    )
    commit = _retrying(
        client,
        OffsetCommitRequest,
        {
            "group_id": group,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 0}]}],
        },
        lambda a: a.topics[0].partitions[0].error_code,
    )
    fetch = _retrying(
        client,
        OffsetFetchRequest,
        {"groups": [{"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]}]},
        lambda a: a.groups[0].error_code,
    )
    fetched = fetch.groups[0]
    topic_code = fetched.topics[0].partitions[0].error_code if fetched.topics else ErrorCode.none
    describe = _ask(client, DescribeGroupsRequest, {"groups": [group], "include_authorized_operations": False})
    return {
        "find_coordinator": _name(find.coordinators[0].error_code),
        "offset_commit": _name(commit.topics[0].partitions[0].error_code),
        "offset_fetch": _name(fetched.error_code),
        "offset_fetch_topic": _name(topic_code),
        "describe_group": _name(describe.groups[0].error_code),
    }


def delete_group(client: WireClient, group: str) -> str:
    answer = _ask(client, DeleteGroupsRequest, {"groups_names": [group]})
    return _name(answer.results[0].error_code)


def listed_groups(client: WireClient) -> set[str]:
    return {g.group_id for g in _ask(client, ListGroupsRequest, {"states_filter": []}).groups}


def init_producer_id(client: WireClient, transactional_id: str | None) -> str:
    """InitProducerId, retried as clients do while the transaction coordinator loads (asking for it
    with FindCoordinator, which makes a fresh Apache Kafka create its transaction state topic)."""
    values = {"transactional_id": transactional_id, "transaction_timeout": 60_000}
    deadline = time.monotonic() + 30
    while True:
        code = ErrorCode(_ask(client, InitProducerIdRequest, values).error_code)
        if code not in {*RETRIABLE, ErrorCode.concurrent_transactions} or time.monotonic() > deadline:
            return code.name
        if transactional_id is not None:
            find_transaction_coordinator(client, transactional_id)
        time.sleep(0.2)


def find_transaction_coordinator(client: WireClient, transactional_id: str) -> str:
    values = {"key_type": 1, "coordinator_keys": [transactional_id]}
    answer = _retrying(client, FindCoordinatorRequest, values, lambda a: a.coordinators[0].error_code)
    return _name(answer.coordinators[0].error_code)


def create_topic(client: WireClient, topic: str) -> str:
    answer = _ask(
        client,
        CreateTopicsRequest,
        {"timeout": 10_000, "topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1}]},
    )
    return _name(answer.topics[0].error_code)


def delete_topic(client: WireClient, topic: str) -> str:
    answer = _ask(client, DeleteTopicsRequest, {"timeout": 10_000, "topic_names": [topic]})
    return _name(answer.responses[0].error_code)


def describe_acls(client: WireClient) -> str:
    answer = _ask(
        client,
        DescribeAclsRequest,
        {
            "resource_type_filter": 1,
            "resource_name_filter": None,
            "pattern_type_filter": 1,
            "principal_filter": None,
            "host_filter": None,
            "operation": 1,
            "permission_type": 1,
        },
    )
    return _name(answer.error_code)
