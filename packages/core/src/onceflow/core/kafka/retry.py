"""Transient Kafka errors, and retrying a client call through them as Kafka's own clients do.

When a broker dies, a leader moves, a coordinator loads or moves, or a request times out, Kafka's
Java clients retry the request with exponential backoff (``retry.backoff.ms`` 100 ms up to
``retry.backoff.max.ms`` 1 s, 20 % jitter) until ``default.api.timeout.ms`` (60 s) has passed, and
Kafka Connect's ``TopicAdmin`` and ``KafkaBasedLog`` retry their reads of end offsets the same way.
librdkafka retries produce and fetch inside the client, but its one-shot calls (``list_topics``,
``get_watermark_offsets``, ``init_transactions``, admin futures, ...) hand the error to the caller,
and several of its local errors are such moments without being flagged retriable:
``_UNKNOWN_PARTITION`` while a partition has no leader, ``_DESTROY_BROKER`` when a dead broker
leaves the metadata, ``_TRANSPORT``, ``_ALL_BROKERS_DOWN``.

- :func:`is_transient`: whether an error (a ``KafkaError``, or the one inside a ``KafkaException``)
  is one of those moments, to be retried;
- :func:`retry_transient`: call until it returns, raises something that is not transient, or the
  policy's deadline passes: then :class:`KafkaUnavailable`, a ``KafkaException`` with the last
  error's code and a message that says what was tried and for how long;
- :class:`RetryPolicy`: the deadline and the backoff (:data:`DEFAULT_RETRY` is the Java client's).

Every service's Kafka calls go through here: one list of transient errors, one backoff.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, TypeVar

from confluent_kafka import KafkaError, KafkaException

from onceflow.core.logging import get_logger

T = TypeVar("T")
_log = get_logger(__name__)

#: Errors that say "not now, ask again": a broker, leader or coordinator is away or moving, or a
#: request timed out. Fencing, authorization, a missing topic and a bad request are not among them.
TRANSIENT_CODES: Final = frozenset(
    {
        # librdkafka's local errors
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._DESTROY_BROKER,
        KafkaError._UNKNOWN_PARTITION,
        KafkaError._UNKNOWN_BROKER,
        KafkaError._TIMED_OUT,
        KafkaError._TIMED_OUT_QUEUE,
        KafkaError._MSG_TIMED_OUT,
        KafkaError._WAIT_COORD,
        KafkaError._RESOLVE,
        KafkaError._NODE_UPDATE,
        KafkaError._OUTDATED,
        KafkaError._INTR,
        # the broker's
        KafkaError.NOT_LEADER_FOR_PARTITION,  # NOT_LEADER_OR_FOLLOWER
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.BROKER_NOT_AVAILABLE,
        KafkaError.REPLICA_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.NOT_CONTROLLER,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.NETWORK_EXCEPTION,
        KafkaError.NOT_ENOUGH_REPLICAS,
        KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        KafkaError.KAFKA_STORAGE_ERROR,
        KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.OFFSET_NOT_AVAILABLE,
        KafkaError.CONCURRENT_TRANSACTIONS,
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.THROTTLING_QUOTA_EXCEEDED,
    }
)


class KafkaUnavailable(KafkaException):
    """Kafka kept answering with transient errors until the retry deadline passed.

    ``args[0]`` is a ``KafkaError`` with the last error's code, so code that checks codes still can;
    ``what`` names the call, ``waited_s`` how long it was retried.
    """

    def __init__(self, what: str, last: KafkaError, waited_s: float, attempts: int) -> None:
        self.what = what
        self.waited_s = waited_s
        self.attempts = attempts
        message = f"{what}: Kafka unavailable for {waited_s:.0f}s ({attempts} attempts); last error {last.str()}"
        super().__init__(KafkaError(last.code(), message))

    def __str__(self) -> str:
        error = self.args[0]
        return str(error.str()) if isinstance(error, KafkaError) else super().__str__()


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How long and how often to retry: until ``timeout_s`` (0: never give up), backing off
    exponentially from ``initial_backoff_s`` to ``max_backoff_s`` with ``jitter`` (a fraction)."""

    timeout_s: float = 60.0
    initial_backoff_s: float = 0.1
    max_backoff_s: float = 1.0
    jitter: float = 0.2

    def backoff(self, attempt: int) -> float:
        """The pause after failed attempt number ``attempt`` (1-based)."""
        base = min(self.max_backoff_s, self.initial_backoff_s * 2.0 ** max(0, attempt - 1))
        return base * (1 + random.uniform(-self.jitter, self.jitter))


#: Kafka's Java clients: default.api.timeout.ms 60 s, retry.backoff.ms 100 ms up to 1 s.
DEFAULT_RETRY: Final = RetryPolicy()
#: How often a call still retrying logs again.
LOG_EVERY_S: Final = 10.0


def kafka_error(error: BaseException | KafkaError | None) -> KafkaError | None:
    """The ``KafkaError`` of ``error`` (itself, or the one a ``KafkaException`` carries), else None."""
    if isinstance(error, KafkaError):
        return error
    if isinstance(error, KafkaException) and error.args and isinstance(error.args[0], KafkaError):
        return error.args[0]
    return None


def is_transient(error: BaseException | KafkaError | None) -> bool:
    """Whether ``error`` is a moment of a broker, leader or coordinator being away or moving: retry it.

    A fatal error, or one that says a transaction must be aborted, is never transient: retrying the
    same call cannot help. Nor is :class:`KafkaUnavailable`: it was retried until its deadline already.
    """
    if isinstance(error, KafkaUnavailable):
        return False
    found = kafka_error(error)
    if found is None or found.fatal() or found.txn_requires_abort():
        return False
    return found.code() in TRANSIENT_CODES or found.retriable()


def retry_transient(
    call: Callable[[], T],
    *,
    what: str,
    policy: RetryPolicy = DEFAULT_RETRY,
    stopping: Callable[[], bool] | None = None,
    transient: Callable[[BaseException], bool] = is_transient,
    refresh: Callable[[], object] | None = None,
) -> T:
    """``call()``, again after each transient error, until it returns or the policy's deadline passes.

    Steps:
        1. Call. A result is returned; an error that is not ``transient`` is raised as it came.
        2. A transient error is logged (``kafka.retrying``, then every :data:`LOG_EVERY_S`), and the
           call is made again after the policy's backoff, and after ``refresh()`` (if given; its
           Kafka errors are ignored): see :mod:`onceflow.core.kafka.routed`.
        3. Past the deadline (or once ``stopping()`` says so) raise :class:`KafkaUnavailable` naming
           ``what``, the time spent and the last error. A call that succeeds after retries logs
           ``kafka.recovered``.
    """
    started = time.monotonic()
    deadline = started + policy.timeout_s if policy.timeout_s > 0 else float("inf")
    attempt = 0
    last_log = 0.0
    while True:
        attempt += 1
        try:
            # Step 1
            result = call()
        except Exception as exc:
            error = kafka_error(exc)
            if error is None or not transient(exc):
                raise
            # Step 2
            now = time.monotonic()
            pause = policy.backoff(attempt)
            if now + pause > deadline or (stopping is not None and stopping()):
                # Step 3
                raise KafkaUnavailable(what, error, now - started, attempt) from exc
            if attempt == 1 or now - last_log >= LOG_EVERY_S:
                last_log = now
                _log.warning("kafka.retrying", what=what, error=error.name(), reason=error.str(), attempt=attempt,
                             waited_s=round(now - started, 1))  # fmt: skip
            time.sleep(pause)
            if refresh is not None:
                with contextlib.suppress(KafkaException):
                    refresh()
            continue
        if attempt > 1:
            _log.info("kafka.recovered", what=what, attempts=attempt, waited_s=round(time.monotonic() - started, 1))
        return result
