"""``GroupConfig``: the group coordinator's settings, named after the Kafka broker settings they mirror."""

from __future__ import annotations

from dataclasses import dataclass

from onceflow.core.errors import InvalidConfig


@dataclass(frozen=True)
class GroupConfig:
    """Group coordinator settings (Kafka defaults).

    * ``initial_rebalance_delay_ms``: ``group.initial.rebalance.delay.ms``;
    * ``min_session_timeout_ms``/``max_session_timeout_ms``: ``group.min/max.session.timeout.ms``;
    * ``new_member_join_timeout_ms``: how long a new member's parked JoinGroup may wait;
    * ``max_metadata_bytes``: ``offset.metadata.max.bytes``;
    * ``timer_tick_ms``: how often deadlines are checked (deadlines fire up to one tick late).
    """

    initial_rebalance_delay_ms: int = 3000
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    new_member_join_timeout_ms: int = 300_000
    max_metadata_bytes: int = 4096
    timer_tick_ms: int = 50

    def __post_init__(self) -> None:
        if self.initial_rebalance_delay_ms < 0:
            raise InvalidConfig("group.initial.rebalance.delay.ms", "must be >= 0")
        if not 0 < self.min_session_timeout_ms <= self.max_session_timeout_ms:
            raise InvalidConfig("group.min.session.timeout.ms", "must be > 0 and <= group.max.session.timeout.ms")
        if self.timer_tick_ms <= 0:
            raise InvalidConfig("timer_tick_ms", "must be > 0")
