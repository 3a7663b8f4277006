"""Which coordinator instance is active: the owner of the log topic's partition in a Kafka consumer group.

Kafka Connect's distributed herder elects its leader through a consumer group; the coordinators do
the same with the plain consumer protocol: every instance subscribes to the one-partition decision
log topic in the group ``standby.group_id``, and the member that owns partition 0 is the active
one. The assignor is ``cooperative-sticky``: a standby that joins never takes the partition from
a live owner, so starting a standby causes no fail-over. The partition moves when its owner leaves
the group (a clean stop) or misses ``session.timeout.ms`` of heartbeats (``kill -9``, a paused
process, a network partition).

The group only decides *when to try*. Safety comes from the log: the new active instance's
``init_transactions`` on the log's transactional id fences the old one, whose next write fails,
and an owner that learns it lost the partition stops at once.

An unexpected error on the election thread (a callback that raised, a fatal consumer error, a bug)
never ends the membership silently: a dead poll loop behind a consumer that librdkafka keeps
heartbeating is a member the group gives the partition to and that never takes it. The member
leaves the group and joins again with a fresh consumer instead (see :meth:`LeaderElection._rejoin`),
as a Kafka Streams client replaces a failed stream thread; an owner reports ``on_lost`` first, and
the coordinator then ends as Connect's herder does after an uncaught error, for its supervisor to
restart it clean.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Callable
from typing import Any, Final

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from onceflow.core.logging import get_logger
from onceflow.core.settings import KafkaSettings

#: ``client.id`` of every member: this prefix, then the advertised gRPC target.
CLIENT_ID_PREFIX: Final = "onceflow-coordinator@"
_POLL_S: Final = 0.2
#: How often a standby looks up who is active (for the UNAVAILABLE answers that name it).
_LEADER_REFRESH_S: Final = 2.0
#: Pause before a member that failed joins again (a failure that repeats must not spin).
_REJOIN_BACKOFF_S: Final = 1.0

_log = get_logger(__name__)


class ElectionCallbackError(Exception):
    """A callback given to :class:`LeaderElection` raised (the cause): the member rejoins."""


class LeaderElection:
    """Membership of this instance (reachable at ``advertised``) in the election group of ``topic``.

    - ``on_elected()`` is called (on the election thread) when this instance gets the partition;
    - ``on_lost(reason)`` when it loses it after that: the instance must stop serving at once;
    - ``on_leader(target)`` whenever the active instance a standby sees changes (None: none right now).

    Callbacks must return quickly: they run on the thread that polls the group. One that raises is
    an unexpected error of the election: the member reports ``on_lost`` if it owned the partition,
    leaves the group and joins again.
    """

    def __init__(
        self,
        kafka: KafkaSettings,
        topic: str,
        *,
        group_id: str,
        session_timeout_ms: int,
        advertised: str,
        on_elected: Callable[[], None],
        on_lost: Callable[[str], None],
        on_leader: Callable[[str | None], None],
    ) -> None:
        self.topic = topic
        self.group_id = group_id
        self.advertised = advertised
        self._kafka = kafka
        self._on_elected = on_elected
        self._on_lost = on_lost
        self._on_leader = on_leader
        self._partition = TopicPartition(topic, 0)
        self._session_timeout_ms = session_timeout_ms
        self._consumer = self._new_consumer()
        admin_config: dict[str, Any] = kafka.client_config()
        self._admin = AdminClient(admin_config)
        self._elected = False
        self._closed = threading.Event()
        #: Held to replace or close the consumer: :meth:`close` and a rejoin never race.
        self._consumer_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="coordinator-election", daemon=True)

    @property
    def elected(self) -> bool:
        return self._elected

    def start(self) -> None:
        """Join the group; the callbacks start arriving."""
        self._subscribe()
        self._thread.start()

    def _new_consumer(self) -> Consumer:
        timeout_ms = self._session_timeout_ms
        return Consumer(
            self._kafka.client_config(
                **{
                    "group.id": self.group_id,
                    "client.id": CLIENT_ID_PREFIX + self.advertised,
                    "partition.assignment.strategy": "cooperative-sticky",
                    "session.timeout.ms": timeout_ms,
                    "heartbeat.interval.ms": max(100, timeout_ms // 5),
                    "enable.auto.commit": False,
                    "auto.offset.reset": "latest",
                }
            )
        )

    def _subscribe(self) -> None:
        self._consumer.subscribe([self.topic], on_assign=self._assigned, on_revoke=self._revoked, on_lost=self._revoked)
        _log.info("election.joined", group=self.group_id, topic=self.topic, member=self.advertised)

    def _assigned(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if any(p.topic == self.topic and p.partition == 0 for p in partitions) and not self._elected:
            self._elected = True
            _log.info("election.elected", group=self.group_id, member=self.advertised)
            try:
                self._on_elected()
            except Exception as exc:
                raise ElectionCallbackError(f"on_elected of member {self.advertised} raised {exc!r}") from exc

    def _revoked(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if self._closed.is_set():
            return  # our own clean leave: nobody to tell
        if any(p.topic == self.topic and p.partition == 0 for p in partitions) and self._elected:
            self._elected = False
            _log.error("election.lost", group=self.group_id, member=self.advertised)
            self._on_lost(f"member {self.advertised} lost the leadership of consumer group {self.group_id}")

    def _run(self) -> None:
        """Poll the group until :meth:`close`; an unexpected error makes the member rejoin.

        Nothing may end this loop but :meth:`close`: librdkafka keeps heartbeating without it, so a
        dead loop would leave a member that the group gives the partition to and that never takes
        it, and no coordinator would ever be active.
        """
        while not self._closed.is_set():
            try:
                self._poll_until_failure()
            except Exception as exc:  # a callback, a fatal consumer error or a bug: never a silent zombie
                self._rejoin(exc)

    def _poll_until_failure(self) -> None:
        """Poll the group (its rebalance callbacks run here); a standby also refreshes who leads."""
        paused = False
        last_leader: str | None = ""
        next_refresh = 0.0
        while not self._closed.is_set():
            try:
                self._consumer.poll(_POLL_S)  # records are never read: the partition is paused once owned
                if self._elected and not paused:
                    self._consumer.pause([self._partition])
                paused = self._elected
            except KafkaException as exc:
                if exc.args and exc.args[0].fatal():
                    raise  # this consumer is unusable: rejoin with a new one
                _log.warning("election.poll_failed", group=self.group_id, member=self.advertised, error=exc)
            if self._elected or self._closed.wait(0):
                continue
            now = time.monotonic()
            if now >= next_refresh:
                next_refresh = now + _LEADER_REFRESH_S
                try:
                    leader = self.leader()
                except Exception as exc:  # who leads is advisory: the loop must go on
                    _log.warning("election.leader_refresh_failed", group=self.group_id, error=repr(exc))
                    continue
                if leader != last_leader:
                    last_leader = leader
                    self._on_leader(leader)

    def _rejoin(self, error: Exception) -> None:
        """Leave the group and join it again with a fresh consumer, after an unexpected ``error``.

        Steps:
            1. Log the error with the group and the member.
            2. An owner of the partition reports ``on_lost``: whatever it started as the active
               instance must stop, since this member no longer knows what it holds.
            3. Close the consumer: the member leaves the group and the partition moves to a
               standby at once, without waiting for the session timeout.
            4. After a short pause (unless closed meanwhile), join with a new consumer.
        """
        # Step 1
        _log.error(
            "election.failed", group=self.group_id, member=self.advertised, elected=self._elected, error=repr(error)
        )
        # Step 2
        if self._elected:
            self._elected = False
            try:
                self._on_lost(f"the election of member {self.advertised} in group {self.group_id} failed: {error!r}")
            except Exception as exc:
                _log.error("election.on_lost_failed", group=self.group_id, member=self.advertised, error=repr(exc))
        # Step 3
        self._close_consumer()
        # Step 4
        if self._closed.wait(_REJOIN_BACKOFF_S):
            return
        with self._consumer_lock:
            if self._closed.is_set():
                return
            self._consumer = self._new_consumer()
            self._subscribe()
        _log.info("election.rejoined", group=self.group_id, member=self.advertised)

    def _close_consumer(self) -> None:
        with self._consumer_lock:
            try:
                self._consumer.close()
            except Exception as exc:  # already closed, or a callback raised while leaving: it left anyway
                _log.warning("election.close_failed", group=self.group_id, member=self.advertised, error=repr(exc))

    def leader(self) -> str | None:
        """The advertised target of the member that owns the partition (None if nobody does, or unknown)."""
        try:
            future = self._admin.describe_consumer_groups([self.group_id], request_timeout=5)[self.group_id]
            group = future.result(5)
        except (KafkaException, concurrent.futures.TimeoutError) as exc:  # a broker still loading the group
            _log.warning("election.describe_failed", group=self.group_id, error=exc)
            return None
        for member in group.members:
            owned = member.assignment.topic_partitions if member.assignment is not None else []
            if any(p.topic == self.topic and p.partition == 0 for p in owned):
                client_id = str(member.client_id)
                return client_id.removeprefix(CLIENT_ID_PREFIX) if client_id.startswith(CLIENT_ID_PREFIX) else client_id
        return None

    def close(self) -> None:
        """Leave the group (a standby takes over at once, without waiting for the session timeout)."""
        if self._closed.is_set():
            return
        self._closed.set()
        if self._thread.is_alive():
            self._thread.join(5)
        self._close_consumer()
