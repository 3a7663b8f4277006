"""Delete-policy retention: which leading segments of a partition are past ``retention.ms`` or
``retention.bytes``. Deleting a segment deletes its indexes with it, ``.txnindex`` included: an
aborted transaction's entry lies with its marker, so once it is gone so is all of its data."""

from __future__ import annotations

from collections.abc import Sequence

from onceflow.broker.storage.config import LogConfig
from onceflow.broker.storage.segment import LogSegment


def expired_segment_count(segments: Sequence[LogSegment], config: LogConfig, now_ms: int) -> int:
    """How many segments, from the oldest, retention deletes now (never the active, last one)."""
    if not config.delete:
        return 0
    doomed = 0
    while (
        config.retention_ms >= 0
        and doomed < len(segments) - 1
        and now_ms - segments[doomed].largest_timestamp() > config.retention_ms
    ):
        doomed += 1
    if config.retention_bytes >= 0:
        excess = sum(s.size for s in segments[doomed:]) - config.retention_bytes
        while doomed < len(segments) - 1 and excess - segments[doomed].size >= 0:
            excess -= segments[doomed].size
            doomed += 1
    return doomed
