"""AdminClient calls that survive the death of the broker they are sent to.

librdkafka sends CreateTopics, DescribeTopics and DescribeConfigs to the *controller* its cluster
metadata names (on KRaft, any live broker the last Metadata answer picked). When that broker dies,
the client goes on "waiting for controller" for the whole request timeout, and a request sent again
waits for it again: its metadata is not refreshed by the failure (seen with librdkafka 2.16 on a
three-broker KRaft cluster: minutes of ``Timed out waiting for controller`` while two brokers
served). A Metadata request (``list_topics``) names a live controller as soon as the dead broker is
fenced.

:func:`retry_admin` therefore runs each attempt with a short request timeout (:data:`ATTEMPT_S`),
asks for fresh metadata before every retry, and otherwise retries as
:func:`~onceflow.core.kafka.retry.retry_transient` does (a future that times out is a transient
``_TIMED_OUT``).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
from collections.abc import Callable
from typing import Final, TypeVar

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from onceflow.core.kafka.retry import DEFAULT_RETRY, RetryPolicy, retry_transient

T = TypeVar("T")

#: Request timeout of one attempt: a few broker session timeouts, short of the retry deadline.
ATTEMPT_S: Final = 10.0


def retry_admin(
    admin: AdminClient,
    request: Callable[[float], T],
    *,
    what: str,
    policy: RetryPolicy = DEFAULT_RETRY,
) -> T:
    """``request(attempt_timeout)`` (an admin call and its ``result``), retried through transient errors.

    Steps:
        1. Send the request with a request timeout of at most :data:`ATTEMPT_S` (and the future
           waited for a second longer, so the client's own timeout answers first).
        2. A transient error (or a future that timed out): refresh the client's metadata, so the
           next attempt goes to a live controller, and retry with :func:`retry_transient`'s backoff
           until the policy's deadline.
    """
    attempt_s = min(ATTEMPT_S, policy.timeout_s) if policy.timeout_s > 0 else ATTEMPT_S
    failed = False

    def attempt() -> T:
        nonlocal failed
        if failed:
            # Step 2 (if it fails, the request below fails too, and is retried)
            with contextlib.suppress(KafkaException):
                admin.list_topics(timeout=attempt_s)
        failed = True
        # Step 1
        try:
            result = request(attempt_s)
        except concurrent.futures.TimeoutError:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, f"{what}: no answer in {attempt_s}s")) from None
        failed = False
        return result

    return retry_transient(attempt, what=what, policy=policy)
