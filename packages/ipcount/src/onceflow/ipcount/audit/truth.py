"""Ground truth for the audit: from the generator's seed, or recounted from ``ip_count_source``.

Both count every event once in the tumbling window ``[t - t % w, t - t % w + w)`` of its event time,
in plain Python, independently of the Spark job.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from onceflow.consumer.exceptions import InvalidQuery
from onceflow.core import defaults
from onceflow.core.avro import ACCESS_EVENT_SERDE
from onceflow.core.end_of_input import is_marker
from onceflow.core.errors import InvalidConfig, SerializationError
from onceflow.core.kafka import read_committed
from onceflow.core.logging import get_logger
from onceflow.core.settings import KafkaSettings
from onceflow.ipcount.audit.logfile import FileRecount
from onceflow.ipcount.audit.model import Key, Truth
from onceflow.ipcount.traffic import TrafficModel, expected_counts, ip_and_time, model_from_config, traffic_config_def

_log = get_logger(__name__)


def generator_model(seed: int, settings: Mapping[str, str] | None = None) -> TrafficModel:
    """The generator's traffic model for ``seed`` and its connector settings (``ips``, ``max.disorder.ms``, ...)."""
    raw = {**dict(settings or {}), "seed": str(seed)}
    try:
        return model_from_config(traffic_config_def().parse(raw))
    except InvalidConfig as exc:
        raise InvalidQuery(f"generator setting {exc.setting}", exc.reason) from None


def generator_truth(model: TrafficModel, count: int, window_ms: int = defaults.WINDOW_MS) -> Truth:
    """The counts of the generator's first ``count`` events (what ``onceflow ipcount truth`` prints)."""
    if count < 0:
        raise InvalidQuery("count", f"must be >= 0, got {count}")
    if window_ms < 1:
        raise InvalidQuery("window_ms", f"must be >= 1, got {window_ms}")
    counts: dict[Key, int] = {(row.window_start, row.ip): row.count for row in expected_counts(model, count, window_ms)}
    max_event_time = max((event_time for _, event_time in ip_and_time(model, 0, count)), default=None)
    return Truth(
        source=f"generator seed={model.seed} count={count}",
        counts=counts,
        events=count,
        max_event_time=max_event_time,
    )


def source_topic_truth(
    kafka: KafkaSettings, topic: str, window_ms: int = defaults.WINDOW_MS, *, timeout: float = 120.0
) -> Truth:
    """Recount ``topic`` (AccessEvent records) read with read_committed from the beginning to its end.

    A record that is not an AccessEvent is a dead letter: counted in ``dead_letters``, not in a window.
    End-of-input markers (:mod:`onceflow.core.end_of_input`) are not events and are skipped.
    """
    if not topic:
        raise InvalidQuery("topic", "must not be empty")
    if window_ms < 1:
        raise InvalidQuery("window_ms", f"must be >= 1, got {window_ms}")
    counts: Counter[Key] = Counter()
    events = dead_letters = 0
    max_event_time: int | None = None
    for record in read_committed(kafka, topic, timeout=timeout):
        if is_marker(record.headers):
            continue
        try:
            event = ACCESS_EVENT_SERDE.decode(record.value or b"")
        except SerializationError as exc:
            dead_letters += 1
            if dead_letters <= 5:
                _log.warning("truth.dead_letter", topic=topic, partition=record.partition, offset=record.offset,
                             reason=str(exc))  # fmt: skip
            continue
        events += 1
        event_time = event["event_time"]
        counts[(event_time - event_time % window_ms, event["ip"])] += 1
        if max_event_time is None or event_time > max_event_time:
            max_event_time = event_time
    return Truth(
        source=f"topic {topic} (read_committed)",
        counts=dict(counts),
        events=events,
        max_event_time=max_event_time,
        dead_letters=dead_letters,
    )


def file_truth(recount: FileRecount) -> Truth:
    """The counts of an access-log file's well-formed lines (an independent recount of the file)."""
    return Truth(
        source=f"file {recount.path} (independent recount: {recount.lines} lines)",
        counts=dict(recount.counts),
        events=recount.events,
        max_event_time=recount.max_event_time,
        dead_letters=sum(recount.dead_letters.values()),
    )
