"""Transient Kafka errors are retried with backoff until a deadline; everything else is raised at once."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.core.kafka import KafkaUnavailable, RetryPolicy, TopicSpec, ensure_topics, is_transient, retry_transient

FAST = RetryPolicy(timeout_s=0.5, initial_backoff_s=0.01, max_backoff_s=0.05)


@pytest.mark.parametrize(
    "code",
    [
        KafkaError._UNKNOWN_PARTITION,
        KafkaError._DESTROY_BROKER,
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._TIMED_OUT,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.NOT_ENOUGH_REPLICAS,
    ],
)
def test_a_broker_leader_or_coordinator_away_or_moving_is_transient(code: int) -> None:
    assert is_transient(KafkaError(code))
    assert is_transient(KafkaException(KafkaError(code)))


@pytest.mark.parametrize(
    "error",
    [
        KafkaError(KafkaError.PRODUCER_FENCED),
        KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED),
        KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART),
        KafkaError(KafkaError._TRANSPORT, fatal=True),
        KafkaError(KafkaError._TIMED_OUT, txn_requires_abort=True),
    ],
)
def test_fencing_authorization_a_missing_topic_and_fatal_or_abortable_errors_are_not(error: KafkaError) -> None:
    assert not is_transient(error)


def test_an_error_already_retried_to_its_deadline_is_not_retried_again() -> None:
    assert not is_transient(KafkaUnavailable("x", KafkaError(KafkaError._TRANSPORT), 60, 10))
    assert not is_transient(ValueError("not Kafka's"))


def test_a_call_is_made_again_until_it_succeeds() -> None:
    answers = [KafkaError._UNKNOWN_PARTITION, KafkaError._DESTROY_BROKER]
    calls: list[int] = []

    def call() -> str:
        calls.append(1)
        if answers:
            raise KafkaException(KafkaError(answers.pop(0)))
        return "offsets"

    assert retry_transient(call, what="offsets of t[0]", policy=FAST) == "offsets"
    assert len(calls) == 3


def test_past_the_deadline_the_call_fails_naming_what_was_tried_with_the_last_code() -> None:
    def call() -> None:
        raise KafkaException(KafkaError(KafkaError._ALL_BROKERS_DOWN, "all brokers are down"))

    started = time.monotonic()
    with pytest.raises(KafkaUnavailable, match=r"metadata of t: Kafka unavailable for \d+s \(\d+ attempts\)") as info:
        retry_transient(call, what="metadata of t", policy=FAST)
    assert time.monotonic() - started < 2
    assert info.value.args[0].code() == KafkaError._ALL_BROKERS_DOWN
    assert "all brokers are down" in str(info.value)


def test_an_error_that_is_not_transient_is_raised_at_once() -> None:
    calls: list[int] = []

    def call() -> None:
        calls.append(1)
        raise KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))

    with pytest.raises(KafkaException) as info:
        retry_transient(call, what="x", policy=FAST)
    assert not isinstance(info.value, KafkaUnavailable)
    assert len(calls) == 1


def test_stopping_ends_the_wait_early() -> None:
    def call() -> None:
        raise KafkaException(KafkaError(KafkaError._TRANSPORT))

    with pytest.raises(KafkaUnavailable):
        retry_transient(call, what="x", policy=RetryPolicy(timeout_s=60), stopping=lambda: True)


def test_a_watermark_query_waits_through_a_broker_restart(broker: EmbeddedBroker) -> None:
    """A real librdkafka call against a broker that is killed and comes back a second later."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": f"g-{uuid.uuid4().hex}"})
    try:
        partition = TopicPartition("retry-topic", 0)
        ensure_topics({"bootstrap.servers": broker.bootstrap_servers}, [TopicSpec("retry-topic")])
        assert consumer.get_watermark_offsets(partition, timeout=10, cached=False) == (0, 0)
        broker.kill()
        restarter = threading.Timer(1.0, broker.start)
        restarter.start()
        bounds = retry_transient(
            lambda: consumer.get_watermark_offsets(partition, timeout=2, cached=False),
            what="offsets of retry-topic[0]",
            policy=RetryPolicy(timeout_s=30),
        )
        restarter.join()
        assert bounds == (0, 0)
    finally:
        consumer.close()


def test_refresh_runs_before_every_retry_and_its_errors_are_ignored() -> None:
    events: list[str] = []

    def call() -> str:
        events.append("call")
        if events.count("call") < 3:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT))
        return "done"

    def refresh() -> None:
        events.append("refresh")
        raise KafkaException(KafkaError(KafkaError._TRANSPORT))

    assert retry_transient(call, what="x", policy=FAST, refresh=refresh) == "done"
    assert events == ["call", "refresh", "call", "refresh", "call"]
