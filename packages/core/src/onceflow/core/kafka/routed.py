"""Calls that librdkafka sends to the broker its metadata names, when that broker has died.

librdkafka answers ``get_watermark_offsets`` with a ListOffsets request to the partition's leader,
and sends CreateTopics, DescribeTopics, DescribeConfigs and ListOffsets of the AdminClient to the
leader or to the *controller* its cluster metadata names (on KRaft, any live broker the last
Metadata answer picked). When that broker dies, the call waits for it for its whole timeout, and a
call made again waits for it again: the failure does not refresh the metadata. Seen with
librdkafka 2.16 on a three-broker KRaft cluster: a Spark driver's offset query and a coordinator's
topic check timed out for minutes while two brokers served. A Metadata request (``list_topics``)
names the new leader, or a live controller, as soon as the dead broker is fenced.

So each attempt here is short (:data:`ATTEMPT_S`) and the metadata is refreshed before every
retry; otherwise they retry as :func:`~onceflow.core.kafka.retry.retry_transient` does (a future
that times out is a transient ``_TIMED_OUT``).

- :func:`watermark_offsets`: ``(low, high)`` of a partition (high is the LSO for a read_committed
  client);
- :func:`retry_admin`: an AdminClient request and its result.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import Final, TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from onceflow.core.kafka.retry import DEFAULT_RETRY, RetryPolicy, is_transient, retry_transient

T = TypeVar("T")

#: Timeout of one attempt: about a broker session timeout (the time a dead broker keeps its roles), far short
#: of the retry deadline.
ATTEMPT_S: Final = 5.0


def _attempt_s(policy: RetryPolicy) -> float:
    return min(ATTEMPT_S, policy.timeout_s) if policy.timeout_s > 0 else ATTEMPT_S


def watermark_offsets(
    client: Consumer, partition: TopicPartition, *, what: str = "", policy: RetryPolicy = DEFAULT_RETRY
) -> tuple[int, int]:
    """``client.get_watermark_offsets(partition)`` from the brokers (never cached), retried through
    transient errors with the partition's leader looked up again before each retry."""
    attempt_s = _attempt_s(policy)
    low, high = retry_transient(
        lambda: client.get_watermark_offsets(partition, timeout=attempt_s, cached=False),
        what=what or f"offsets of {partition.topic}[{partition.partition}]",
        policy=policy,
        refresh=lambda: client.list_topics(partition.topic, timeout=attempt_s),
    )
    return int(low), int(high)


def retry_admin(
    admin: AdminClient,
    request: Callable[[float], T],
    *,
    what: str,
    policy: RetryPolicy = DEFAULT_RETRY,
    transient: Callable[[BaseException], bool] = is_transient,
) -> T:
    """``request(attempt_timeout)`` (an admin call and its ``result``), retried through ``transient`` errors.

    Steps:
        1. Send the request with a request timeout of at most :data:`ATTEMPT_S` (its future waited
           for a second longer, so the client's own timeout answers first).
        2. A transient error, or a future that timed out: refresh the client's metadata, so the next
           attempt goes to a live controller or leader, and retry with :func:`retry_transient`'s
           backoff until the policy's deadline.
    """
    attempt_s = _attempt_s(policy)

    def attempt() -> T:
        # Step 1
        try:
            return request(attempt_s)
        except concurrent.futures.TimeoutError:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, f"{what}: no answer in {attempt_s}s")) from None

    # Step 2
    return retry_transient(
        attempt, what=what, policy=policy, transient=transient, refresh=lambda: admin.list_topics(timeout=attempt_s)
    )
