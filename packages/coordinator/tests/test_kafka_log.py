"""The Kafka transaction log against a real broker process: replay, tombstones, zombie fencing."""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.contract import ParticipantRef, TransactionId, TransactionState
from onceflow.coordinator.exceptions import CoordinatorFenced, LogAppendRejected, TransactionLogError
from onceflow.coordinator.log.kafka import KafkaTransactionLog
from onceflow.coordinator.log.log_topic import LOG_TOPIC_CONFIG
from onceflow.coordinator.log.records import LogRecord, Tombstone, decode
from onceflow.coordinator.log.refusals import LogNotInitialised, LogTopicLost
from onceflow.coordinator.model import JobState, Transaction
from onceflow.core.kafka import read_committed
from onceflow.core.settings import KafkaSettings
from onceflow.core.topics import COORDINATOR_LOG_TOPIC
from onceflow.testing.coordinator import staged_files

JOB = "ipcount"


def _txn(batch: int, state: TransactionState) -> Transaction:
    return Transaction(
        id=TransactionId(JOB, batch),
        state=state,
        writer_epoch=1,
        files=tuple(staged_files(JOB, batch)),
        participants=(ParticipantRef("kafka", "127.0.0.1:7101"),),
        started_at=time.time(),
        updated_at=time.time(),
    )


def _log(broker: EmbeddedBroker, *, init_if_missing: bool = True) -> KafkaTransactionLog:
    settings = KafkaSettings(bootstrap_servers=broker.bootstrap_servers)
    return KafkaTransactionLog(settings, timeout=20, init_if_missing=init_if_missing)


def test_records_survive_a_restart_in_order(broker: EmbeddedBroker) -> None:
    first = _log(broker)
    assert first.open() == []
    job = JobState(JOB, epoch=1, writer_id="w", participants=(ParticipantRef("kafka", "127.0.0.1:7101"),))
    records: list[LogRecord] = [
        job,
        _txn(0, TransactionState.PREPARING),
        _txn(0, TransactionState.COMMITTING),
        _txn(1, TransactionState.ABORTED),
    ]
    first.append(records[:2])
    first.append(records[2:])
    first.append([Tombstone(TransactionId(JOB, 1))])
    first.close()

    second = _log(broker)
    assert second.open() == [*records, Tombstone(TransactionId(JOB, 1))]
    second.close()

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    resource = ConfigResource(ConfigResource.Type.TOPIC, COORDINATOR_LOG_TOPIC)
    configs = admin.describe_configs([resource])[resource].result(20)
    assert configs["cleanup.policy"].value == "compact"


def test_a_new_instance_fences_the_zombie_and_drops_its_open_transaction(broker: EmbeddedBroker) -> None:
    zombie = _log(broker)
    zombie.open()
    zombie.append([JobState(JOB, epoch=1)])

    successor = _log(broker)
    replayed = successor.open()
    assert replayed == [JobState(JOB, epoch=1)]
    with pytest.raises(CoordinatorFenced, match="fenced by a newer instance"):
        zombie.append([JobState(JOB, epoch=2)])
    with pytest.raises(CoordinatorFenced):  # and it stays fenced
        zombie.append([JobState(JOB, epoch=3)])
    successor.append([JobState(JOB, epoch=2)])
    successor.close()

    third = _log(broker)
    assert third.open() == [JobState(JOB, epoch=1), JobState(JOB, epoch=2)]
    third.close()


def test_a_too_large_append_fails_alone_and_the_log_keeps_working(broker: EmbeddedBroker) -> None:
    log = _log(broker)
    log.open()
    with pytest.raises(LogAppendRejected, match="more than the 900000"):
        log.append([JobState(JOB, epoch=1, writer_id="w" * 2_000_000)])
    log.append([JobState(JOB, epoch=1, writer_id="w")])
    log.close()

    again = _log(broker)
    assert again.open() == [JobState(JOB, epoch=1, writer_id="w")]
    again.close()


def test_an_empty_log_topic_is_refused_until_initialised_then_opens(broker: EmbeddedBroker) -> None:
    """A log topic created empty (by an operator's tooling, or re-created after a loss) holds no
    genesis record: the coordinator refuses it; once initialised it opens, empty."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    spec = NewTopic(COORDINATOR_LOG_TOPIC, 1, 1, config=dict(LOG_TOPIC_CONFIG))
    admin.create_topics([spec])[COORDINATOR_LOG_TOPIC].result(20)

    with pytest.raises(LogNotInitialised, match="onceflow txn init-log"):
        _log(broker, init_if_missing=False).open()
    initialising = _log(broker)
    assert initialising.open() == []
    initialising.close()
    opened = _log(broker, init_if_missing=False)
    assert opened.open() == []
    opened.close()


def test_confirm_owner_fails_once_a_newer_instance_took_the_log(broker: EmbeddedBroker) -> None:
    zombie = _log(broker)
    zombie.open()
    zombie.confirm_owner()
    successor = _log(broker)
    successor.open()
    with pytest.raises(CoordinatorFenced):
        zombie.confirm_owner()
    successor.confirm_owner()
    successor.close()


def test_a_decision_is_never_written_to_a_log_topic_re_created_after_bookkeeping_went_to_it(
    broker: EmbeddedBroker,
) -> None:
    """Bookkeeping appends (PREPARING, END, tombstones) skip the topic check; the next decision does
    not: a topic deleted and re-created under the log is found before COMMITTING is committed there."""
    log = _log(broker)
    log.open()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.delete_topics([COORDINATOR_LOG_TOPIC])[COORDINATOR_LOG_TOPIC].result(20)
    spec = NewTopic(COORDINATOR_LOG_TOPIC, 1, 1, config=dict(LOG_TOPIC_CONFIG))
    admin.create_topics([spec])[COORDINATOR_LOG_TOPIC].result(20)
    deadline = time.monotonic() + 20
    while True:  # the producer learns of the new topic from its metadata refresh
        try:
            log.append([_txn(0, TransactionState.PREPARING)])
            break
        except TransactionLogError:
            assert time.monotonic() < deadline
            time.sleep(0.5)
    with pytest.raises(LogTopicLost, match="re-created"):
        log.append([_txn(0, TransactionState.COMMITTING)])
    log.close()
    assert _read_states(broker) == [TransactionState.PREPARING]


def _read_states(broker: EmbeddedBroker) -> list[TransactionState]:
    """The states of the transaction records committed to the log topic, in order."""
    settings = KafkaSettings(bootstrap_servers=broker.bootstrap_servers)
    decoded = (decode(record.key or b"", record.value) for record in read_committed(settings, COORDINATOR_LOG_TOPIC))
    return [record.state for record in decoded if isinstance(record, Transaction)]
