"""Source offsets: the per-partition positions Spark writes to its offset log, and admission control.

A source offset is ``{"<topic>": {"<partition>": <next offset>}}`` (Spark's own Kafka source uses the
same shape), plus, once a restarted query had to force a batch, ``"onceflow.restarts": <n>``
(:data:`RESTARTS`, see ``KafkaStreamReader.latestOffset``). A micro-batch reads ``[start[p], end[p])``
of every partition ``p``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from onceflow.core.errors import InvalidConfig

#: Sentinels of ``startingOffsets`` JSON, as in Spark's Kafka source.
EARLIEST = -2
LATEST = -1

PartitionOffsets = dict[int, int]
#: Key of the count of batches forced after a restart; readers of the partitions ignore it.
RESTARTS = "onceflow.restarts"


def to_spark(topic: str, offsets: Mapping[int, int]) -> dict[str, dict[str, int]]:
    """The offset dict Spark stores: partitions as strings, sorted."""
    return {topic: {str(p): int(offsets[p]) for p in sorted(offsets)}}


def with_extras(start: Mapping[str, object], end: dict[str, object], *, bump_restarts: bool) -> dict[str, object]:
    """``end`` with :data:`RESTARTS` carried over from ``start`` (an offset that changes only there is
    still a new batch to Spark); ``bump_restarts`` adds one when ``end`` has no new record."""
    restarts = start.get(RESTARTS)
    count = int(restarts) if isinstance(restarts, int) else 0
    if bump_restarts and all(end.get(key) == value for key, value in start.items() if key != RESTARTS):
        count += 1
    return {**end, RESTARTS: count} if count else end


def from_spark(topic: str, offset: Mapping[str, object]) -> PartitionOffsets:
    """The partitions of ``topic`` in an offset dict written by :func:`to_spark`."""
    partitions = offset.get(topic, {})
    if not isinstance(partitions, Mapping):
        raise ValueError(f"malformed source offset {offset!r}: expected {{topic: {{partition: offset}}}}")
    return {int(p): int(o) for p, o in partitions.items()}


def parse_starting_offsets(value: str, topic: str) -> PartitionOffsets | None:
    """``None`` for ``earliest``/``latest``; otherwise the JSON's partitions (EARLIEST/LATEST sentinels kept)."""
    if value in ("earliest", "latest"):
        return None
    try:
        doc = json.loads(value)
    except json.JSONDecodeError as exc:
        raise InvalidConfig("startingOffsets", f"not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or set(doc) != {topic} or not isinstance(doc[topic], dict):
        raise InvalidConfig("startingOffsets", f'expected {{"{topic}": {{"<partition>": <offset>, ...}}}}, got {value}')
    offsets: PartitionOffsets = {}
    for p, o in doc[topic].items():
        try:
            partition, offset = int(p), int(o)
        except (TypeError, ValueError):
            raise InvalidConfig("startingOffsets", f"partition {p!r}: offsets are integers, got {o!r}") from None
        if partition < 0 or offset < EARLIEST:
            raise InvalidConfig(
                "startingOffsets", f"partition {p}: offset {o} is not >= 0, -1 (latest) or -2 (earliest)"
            )
        offsets[partition] = offset
    return offsets


def rate_limit(start: Mapping[int, int], available: Mapping[int, int], max_offsets: int) -> PartitionOffsets:
    """End offsets that admit at most ``max_offsets`` offsets in total beyond ``start``.

    The budget is shared in proportion to each partition's backlog (largest remainder), so
    partitions advance together and event time stays aligned across them. Any partition with a
    backlog gets at least one offset while the budget lasts, so every batch makes progress.
    """
    backlog = {p: max(0, available[p] - start.get(p, available[p])) for p in available}
    total = sum(backlog.values())
    if total <= max_offsets:
        return dict(available)
    shares = {p: max_offsets * n / total for p, n in backlog.items()}
    granted = {p: min(int(share), backlog[p]) for p, share in shares.items()}
    left = max_offsets - sum(granted.values())
    for p in sorted(backlog, key=lambda q: (shares[q] - granted[q], backlog[q]), reverse=True):
        if left <= 0:
            break
        if granted[p] < backlog[p]:
            granted[p] += 1
            left -= 1
    return {p: start.get(p, available[p]) + granted[p] for p in available}
