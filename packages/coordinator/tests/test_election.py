"""The standby election on a real broker: a standby whose look-ups of the leader fail keeps its place in
the group, and takes over when the active member leaves.

Found by the compose deploy test: after a restart of every container, the brokers were still loading
the group when a standby asked who leads; the look-up timed out, the exception ended the election
thread, and librdkafka went on heartbeating for a member that was then given the partition and never
took it. No coordinator was active, and every job waited for ever.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.coordinator.service.election import LeaderElection
from onceflow.core.settings import KafkaSettings
from onceflow.testing.broker.clients import create_topic

TOPIC = "_election_log"
GROUP = "election-test"
#: A bound on a take-over after a clean leave, on a loaded machine: it measures the mechanism only.
TAKEOVER_S = 60.0


class _Member:
    def __init__(self, kafka: KafkaSettings, name: str) -> None:
        self.elected = threading.Event()
        self.leaders: list[str | None] = []
        self.election = LeaderElection(
            kafka,
            TOPIC,
            group_id=GROUP,
            session_timeout_ms=6_000,
            advertised=name,
            on_elected=self.elected.set,
            on_lost=lambda reason: None,
            on_leader=self.leaders.append,
        )


class _Unanswered:
    """An admin client whose group look-ups never answer (a broker still loading the group)."""

    def __init__(self) -> None:
        self.asked = threading.Event()

    def describe_consumer_groups(self, groups: list[str], **_: Any) -> dict[str, concurrent.futures.Future[Any]]:
        self.asked.set()
        return {group: concurrent.futures.Future() for group in groups}


@pytest.fixture
def kafka(broker: EmbeddedBroker) -> Iterator[KafkaSettings]:
    create_topic(broker.bootstrap_servers, TOPIC)
    yield KafkaSettings(bootstrap_servers=broker.bootstrap_servers)


def test_a_standby_whose_leader_lookups_time_out_still_takes_over(kafka: KafkaSettings) -> None:
    """Steps:
    1. ``active`` joins first and owns the partition.
    2. ``standby`` joins; every look-up of the leader times out (the future never completes).
    3. After such a time-out, ``active`` leaves: ``standby`` is elected, its election thread alive.
    """
    active, standby = _Member(kafka, "active:1"), _Member(kafka, "standby:2")
    # Step 1
    active.election.start()
    try:
        assert active.elected.wait(TAKEOVER_S), "the first member was never elected"
        # Step 2
        unanswered = _Unanswered()
        standby.election._admin = unanswered  # type: ignore[assignment]
        standby.election.start()
        try:
            assert unanswered.asked.wait(TAKEOVER_S), "the standby never looked up the leader"
            thread = standby.election._thread
            thread.join(6.0)  # the look-up waits 5 s for its answer, then times out
            assert thread.is_alive(), "a timed-out look-up ended the election thread"
            # Step 3
            active.election.close()
            assert standby.elected.wait(TAKEOVER_S), "the standby never took the partition"
            assert thread.is_alive()
        finally:
            standby.election.close()
    finally:
        active.election.close()
