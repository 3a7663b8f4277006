"""The end of input: one flush event that moves the job's watermark past every real window.

The job counts in append mode: a window is emitted once the watermark (the newest event time minus
the lateness) has passed its end, and the watermark only moves when newer events arrive. After the
generator's last event nothing newer comes, so the last windows would stay open forever. Spark
Structured Streaming has no "end of input" for an unbounded Kafka source (no final flush on stop),
so the demo writes, after the generator's N events are committed, one more event a minute of
event time after the last one:

- its watermark closes every real window, and Spark's no-data micro-batch emits them;
- its own window (ip ``0.0.0.0``) stays open for ever, so no sink ever holds it: the sinks hold
  exactly the generator's N events, which the generator truth checks;
- the source-topic truth counts it, but the audit runs that truth "closed windows only", which
  leaves its open window out of both sides;
- its event time is a function of (model, N), so writing it twice (a crash between its commit and
  ``run.json``) only adds to the same open window.
"""

from __future__ import annotations

from confluent_kafka import Producer

from onceflow.core import defaults
from onceflow.core.avro import ACCESS_EVENT_SERDE, AccessEvent
from onceflow.core.logging import get_logger
from onceflow.core.topics import SOURCE_TOPIC
from onceflow.logproducer.generator import TrafficModel
from onceflow.logproducer.generator.traffic import ip_and_time

_log = get_logger(__name__)

FLUSH_IP = "0.0.0.0"
#: How far (event time) after the last real event the flush event is.
FLUSH_AFTER_MS = 60_000
TRANSACTIONAL_ID = "onceflow-demo-flush"


def last_event_time(model: TrafficModel, count: int) -> int | None:
    """The newest event time among the model's first ``count`` events (None for no events).

    Events lag their sequence's time by at most ``max_disorder_ms``, so only the last events can hold
    the maximum: those within ``max_disorder_ms`` of event time (plus one block of slack).
    """
    if count <= 0:
        return None
    tail = (model.max_disorder_ms * model.event_rate) // 1000 + 5000
    return max(event_time for _, event_time in ip_and_time(model, max(0, count - tail), count))


def flush_event(model: TrafficModel, count: int) -> AccessEvent:
    """The flush event of a run of ``count`` events (see the module docstring)."""
    last = last_event_time(model, count)
    base = model.start_ms if last is None else last
    assert FLUSH_AFTER_MS >= 2 * defaults.WINDOW_MS + defaults.ALLOWED_LATENESS_MS
    return AccessEvent(
        event_time=base + FLUSH_AFTER_MS,
        ip=FLUSH_IP,
        method="GET",
        path="/",
        status=200,
        bytes=0,
        user_agent="onceflow-demo-flush",
    )


def write_flush_event(bootstrap: str, model: TrafficModel, count: int, timeout: float = 60.0) -> int:
    """Produce the flush event in a Kafka transaction (a retry fences a half-done earlier attempt).

    Returns its event time.
    """
    event = flush_event(model, count)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": TRANSACTIONAL_ID, "enable.idempotence": True}
    )
    producer.init_transactions(timeout)
    producer.begin_transaction()
    producer.produce(
        SOURCE_TOPIC,
        key=FLUSH_IP.encode(),
        value=ACCESS_EVENT_SERDE.encode(event),
        partition=0,
        timestamp=event["event_time"],
    )
    producer.commit_transaction(timeout)
    _log.info("flush.written", topic=SOURCE_TOPIC, event_time=event["event_time"], events=count)
    return int(event["event_time"])
