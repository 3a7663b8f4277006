"""The standby election on a real broker: a standby whose look-ups of the leader fail keeps its place in
the group, and takes over when the active member leaves; a member whose ``on_elected`` raises leaves
the group and rejoins, so the partition never stays with a dead member.

Found by the compose deploy test: after a restart of every container, the brokers were still loading
the group when a standby asked who leads; the look-up timed out, the exception ended the election
thread, and librdkafka went on heartbeating for a member that was then given the partition and never
took it. No coordinator was active, and every job waited for ever.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.coordinator.election import LeaderElection
from onceflow.core.settings import KafkaSettings
from onceflow.testing.broker.clients import create_topic

TOPIC = "_election_log"
GROUP = "election-test"
#: A bound on a take-over after a clean leave, on a loaded machine: it measures the mechanism only.
TAKEOVER_S = 60.0


class _Member:
    """A member; with ``failures``, its first ``on_elected`` calls raise."""

    def __init__(self, kafka: KafkaSettings, name: str, *, failures: int = 0) -> None:
        self.name = name
        self.elected = threading.Event()
        self.failed = threading.Event()
        self.lost: list[str] = []
        self.leaders: list[str | None] = []
        self._failures = failures
        self.election = LeaderElection(
            kafka,
            TOPIC,
            group_id=GROUP,
            session_timeout_ms=6_000,
            advertised=name,
            on_elected=self._on_elected,
            on_lost=self.lost.append,
            on_leader=self.leaders.append,
        )

    def _on_elected(self) -> None:
        if self._failures > 0:
            self._failures -= 1
            self.failed.set()
            raise RuntimeError(f"{self.name}: the take-over could not start")
        self.elected.set()


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


def test_a_member_whose_on_elected_raises_leaves_the_partition_to_a_live_member(kafka: KafkaSettings) -> None:
    """Steps:
    1. ``failing`` joins alone and is given the partition; its ``on_elected`` raises.
    2. It reports ``on_lost`` (it owned the partition) and its election thread lives on.
    3. ``standby`` joins: within the bound, one of the two (the standby, or ``failing`` after it
       rejoined) is elected for real, and the group names that member as the partition's owner.
    """
    failing, standby = _Member(kafka, "failing:1", failures=1), _Member(kafka, "standby:2")
    # Step 1
    failing.election.start()
    try:
        assert failing.failed.wait(TAKEOVER_S), "the first member was never given the partition"
        # Step 2
        deadline = time.monotonic() + TAKEOVER_S
        while not failing.lost and time.monotonic() < deadline:
            time.sleep(0.1)
        assert failing.lost and "on_elected" in failing.lost[0], failing.lost
        assert failing.election._thread.is_alive(), "the failed callback ended the election thread"
        # Step 3
        standby.election.start()
        try:
            active = _first_elected([failing, standby], TAKEOVER_S)
            assert active is not None, "the partition stayed with the member whose on_elected raised"
            assert active.election.elected
            assert active.election._thread.is_alive()
            owner = _owner(active, TAKEOVER_S)
            assert owner == active.name, f"the group gives the partition to {owner}, not to {active.name}"
        finally:
            standby.election.close()
    finally:
        failing.election.close()


def _first_elected(members: list[_Member], timeout_s: float) -> _Member | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for member in members:
            if member.elected.is_set():
                return member
        time.sleep(0.1)
    return None


def _owner(member: _Member, timeout_s: float) -> str | None:
    """The partition's owner as the group describes it (a describe may fail while the group settles)."""
    deadline = time.monotonic() + timeout_s
    owner = member.election.leader()
    while owner is None and time.monotonic() < deadline:
        time.sleep(0.5)
        owner = member.election.leader()
    return owner
