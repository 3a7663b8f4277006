"""The whole pipeline on a three-broker Apache Kafka while brokers die: liveness is part of the guarantee.

``onceflow demo --bootstrap-servers`` runs against ``apache_kafka_cluster`` (three KRaft nodes, each a
broker and a controller; replication factor 3 and ``min.insync.replicas=2`` for every topic, the
offsets topic and the transaction state log) and follows an access log that the test writes at
:data:`LINES_PER_S` lines per second, so events flow for exactly as long as the disruptions take.
One run, in this order (the tests of this module share it and run in order):

(a)-(d) ``kill -9`` of the broker that leads a source partition, that leads the sink topic's
        partition, that is the transaction coordinator of the decision log's producer
        (``onceflow-coordinator``), that is the consumer group's coordinator. It stays down until
        every service has done new work without it (two of three brokers are a majority: events
        must keep flowing), then it is restarted;
(e)     a rolling restart: a controlled shutdown (SIGTERM) and a restart of every broker in turn, each
        time until every partition is fully replicated again.

**Every service resumes within** :data:`RESUME_BOUND_S`: after a kill, and again after the broker
is back, each of the demo's progress counters (lines read: the connect worker; micro-batches:
Spark; transactions committed: the coordinator; rows in the SQLite sink: the participant; events
counted from ``ip_count_sink``: the Kafka sink and the consumer) changes twice (the second change is
work begun after the disruption) within the bound; during the rolling restart none stands still
that long. The times are printed. At the end the writer stops, the input ends,
and **every sink is EXACT** against a plain recount of the file and against the source topic, every
line is accounted for (events + dead letters), and no service answered a gRPC call with a
traceback. One run for all five keeps the module at one Spark start; a loss or a duplicate caused by
any disruption stays in the sinks, so the final audit covers each of them.

Slow (a Spark JVM and three Kafka JVMs, about 7 minutes on two cores); it runs in ``make test``.
"""

from __future__ import annotations

import itertools
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource

from onceflow.core.kafka import Replication, TopicSpec, ensure_topics, retry_admin, watermark_offsets
from onceflow.logproducer.sample import write_sample_log
from onceflow.testing.broker.apache_kafka_cluster import ApacheKafkaCluster

from .demo_process import DemoProcess, verdicts

RESUME_BOUND_S = 60.0
LINES_PER_S = 60
#: Lines the writer has at hand (it writes them at LINES_PER_S): far more than the run takes.
SAMPLE_LINES = 60_000
CONSUMER_GROUP = "onceflow-demo-results"
COORDINATOR_TRANSACTIONAL_ID = "onceflow-coordinator"
#: Progress counters of the demo's plain output, by the service whose progress they show.
COUNTERS = {
    "connect": re.compile(r" lines=(\d+)"),
    "spark": re.compile(r" batches=(\d+)"),
    "coordinator": re.compile(r" txns committed=(\d+)"),
    "participant": re.compile(r" sqlite=(\d+)"),
    "consumer": re.compile(r" counted=(\d+)"),
}
SINKS = ("kafka", "sqlite", "consumer", "lines", "overall")


class LogWriter:
    """Appends the lines of ``source`` to ``target`` at ``rate`` lines per second on a thread, as a
    web server writes its access log, until :meth:`stop`."""

    def __init__(self, source: Path, target: Path, rate: int) -> None:
        self._lines = source.read_bytes().splitlines(keepends=True)
        self._target = target
        self._rate = rate
        self._stop = threading.Event()
        self.written = 0
        self._thread = threading.Thread(target=self._run, name="log-writer", daemon=True)

    def start(self) -> LogWriter:
        self._target.touch()
        self._thread.start()
        return self

    def _run(self) -> None:
        started = time.monotonic()
        with self._target.open("ab") as out:
            while not self._stop.wait(0.1) and self.written < len(self._lines):
                due = min(len(self._lines), int((time.monotonic() - started) * self._rate))
                out.write(b"".join(self._lines[self.written : due]))
                out.flush()
                self.written = max(self.written, due)

    def stop(self) -> int:
        """Stop writing; the number of lines written."""
        self._stop.set()
        self._thread.join(10)
        return self.written

    @property
    def exhausted(self) -> bool:
        return self.written >= len(self._lines)


@dataclass
class Run:
    cluster: ApacheKafkaCluster
    demo: DemoProcess
    writer: LogWriter

    def series(self, service: str) -> list[tuple[float, int]]:
        """(arrival, value) of the service's counter on every progress line so far."""
        pattern = COUNTERS[service]
        lines = list(zip(self.demo.arrivals, self.demo.lines, strict=False))
        return [(at, int(m.group(1))) for at, line in lines if (m := pattern.search(line))]

    def latest(self, service: str) -> int:
        """The service's counter on the last progress line (0 before the first)."""
        series = self.series(service)
        return series[-1][1] if series else 0

    def changes_after(self, service: str, since: float) -> list[float]:
        """Arrival times of the progress lines after ``since`` on which the service's counter changed."""
        current: int | None = None
        changed: list[float] = []
        for at, value in self.series(service):
            if at > since and current is not None and value != current:
                changed.append(at)
            current = value
        return changed

    def longest_stalls(self, since: float, until: float) -> dict[str, float]:
        """For each counter: the longest time it stood still between ``since`` and ``until``."""
        stalls: dict[str, float] = {}
        for service in COUNTERS:
            marks = [since, *(at for at in self.changes_after(service, since) if at <= until), until]
            stalls[service] = round(max(b - a for a, b in itertools.pairwise(marks)), 1)
        return stalls

    def timeline(self, since: float) -> str:
        """The demo's output, each line with its time relative to ``since``."""
        pairs = zip(self.demo.arrivals, self.demo.lines, strict=False)
        return "\n".join(f"{at - since:+7.1f}s {line}" for at, line in pairs)

    def wait_until(self, done: Callable[[], bool], timeout: float, what: str, since: float) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            assert self.demo.process.poll() is None, f"the demo ended early:\n{self.timeline(since)}"
            assert not self.writer.exhausted, "the writer ran out of lines: raise SAMPLE_LINES"
            assert time.monotonic() < deadline, f"{what} within {timeout:.0f}s:\n{self.timeline(since)}"
            time.sleep(0.5)

    def whole(self) -> None:
        """Every broker up and every partition fully replicated (an earlier test may have failed midway)."""
        self.cluster.start()
        self.cluster.wait_fully_replicated()

    def resumed(self, since: float, what: str) -> dict[str, float]:
        """Wait until every service did new work after ``since``, and return how long each took.

        New work is a second change of the service's counter after ``since``: the first may finish
        what was under way at ``since``, the second was begun after it. Each must come within
        RESUME_BOUND_S. A value first seen on a progress line changed at most one line interval
        (5 s) earlier, so the times err on the long side.
        """
        self.wait_until(
            lambda: all(len(self.changes_after(service, since)) >= 2 for service in COUNTERS),
            RESUME_BOUND_S + 10,
            f"every service did not do new work within {RESUME_BOUND_S:.0f}s after {what}",
            since,
        )
        times = {service: round(self.changes_after(service, since)[1] - since, 1) for service in COUNTERS}
        print(f"{what}: every service did new work after {times} (bound {RESUME_BOUND_S:.0f}s)")
        slow = {service: t for service, t in times.items() if t >= RESUME_BOUND_S}
        assert slow == {}, f"{what}: services resumed late {slow}:\n{self.timeline(since)}"
        return times


@pytest.fixture(scope="module")
def run(apache_kafka_cluster: ApacheKafkaCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """The demo on the cluster, following a log written at LINES_PER_S, once every service made progress."""
    base = tmp_path_factory.mktemp("kafka-cluster-run")
    write_sample_log(base / "sample.log", SAMPLE_LINES, seed=21, lines_per_second=LINES_PER_S,
                     start_ms=int(time.time() * 1000))  # fmt: skip
    writer = LogWriter(base / "sample.log", base / "access.log", LINES_PER_S).start()
    demo = DemoProcess(
        base / "run",
        "--bootstrap-servers", apache_kafka_cluster.bootstrap_servers,
        "--input", str(base / "access.log"), "--follow", "--idle-timeout", "10",
        "--trigger-ms", "2000", "--timeout", "900",
    )  # fmt: skip
    state = Run(apache_kafka_cluster, demo, writer)
    try:
        started = time.monotonic()
        state.wait_until(
            lambda: state.latest("participant") > 0 and state.latest("consumer") > 0,
            420,
            "no event reached the sinks",
            started,
        )
        yield state
    finally:
        writer.stop()
        demo.stop()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_offset_queries_and_admin_calls_reach_a_live_broker_after_theirs_died(
    apache_kafka_cluster: ApacheKafkaCluster,
) -> None:
    """librdkafka sends a ListOffsets to the partition leader and DescribeTopics or CreateTopics to the
    controller its metadata names, and keeps waiting for that broker when it died (minutes, every
    retry); onceflow's calls refresh the metadata between attempts (onceflow.core.kafka.routed)."""
    cluster = apache_kafka_cluster
    config: dict[str, str | int | float | bool] = {"bootstrap.servers": cluster.bootstrap_servers}
    admin = AdminClient(config)
    victim = admin.list_topics(timeout=10).controller_id
    # three partitions on three brokers: one of them is led by the admin client's controller
    ensure_topics(config, [TopicSpec("routing-probe", 3)])
    led = [p for p in range(3) if cluster.leader_of("routing-probe", p) == victim]
    assert led, "the controller leads no partition of the probe"
    consumer = Consumer({**config, "group.id": "routing-probe"})
    partition = TopicPartition("routing-probe", led[0])
    assert watermark_offsets(consumer, partition) == (0, 0)
    cluster.kill(victim)
    try:
        started = time.monotonic()
        assert watermark_offsets(consumer, partition) == (0, 0)
        offsets_after = time.monotonic() - started
        described = retry_admin(
            admin,
            lambda t: admin.describe_topics(TopicCollection(["routing-probe"]), request_timeout=t)[
                "routing-probe"
            ].result(t + 1),
            what="describe routing-probe",
        )
        assert described.name == "routing-probe"
        assert ensure_topics(config, [TopicSpec("routing-probe-2")], replication=Replication(2)) == ["routing-probe-2"]
        took = time.monotonic() - started
        print(f"node {victim} killed: offsets answered after {offsets_after:.1f}s, admin calls after {took:.1f}s")
        assert took < RESUME_BOUND_S
    finally:
        consumer.close()
        cluster.restart(victim)
    cluster.wait_fully_replicated()


def source_leader(cluster: ApacheKafkaCluster) -> int:
    return cluster.leader_of("ip_count_source", 0)


def sink_leader(cluster: ApacheKafkaCluster) -> int:
    return cluster.leader_of("ip_count_sink", 0)


def decision_log_transaction_coordinator(cluster: ApacheKafkaCluster) -> int:
    return cluster.transaction_coordinator(COORDINATOR_TRANSACTIONAL_ID)


def consumer_group_coordinator(cluster: ApacheKafkaCluster) -> int:
    return cluster.group_coordinator(CONSUMER_GROUP)


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    "victim",
    [source_leader, sink_leader, decision_log_transaction_coordinator, consumer_group_coordinator],
    ids=["a-source-leader", "b-sink-leader", "c-decision-log-txn-coordinator", "d-consumer-group-coordinator"],
)
def test_every_service_resumes_after_a_kill_of_the_broker(
    run: Run, victim: Callable[[ApacheKafkaCluster], int]
) -> None:
    """The victim stays down until every service did new work without it (two brokers of three are a
    majority: events must keep flowing), then comes back, and every service goes on again."""
    run.whole()
    node = victim(run.cluster)
    killed_at = time.monotonic()
    run.cluster.kill(node)
    try:
        run.resumed(killed_at, f"kill -9 of node {node} ({victim.__name__})")
        assert not run.cluster.node(node).is_running()
    finally:
        run.cluster.restart(node)
    run.cluster.wait_fully_replicated()
    run.resumed(time.monotonic(), f"node {node} back")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_every_service_resumes_through_a_rolling_restart(run: Run) -> None:
    """Every broker in turn: a controlled shutdown, a start on the same data, and a wait until every
    partition is fully replicated again, as an operator rolls a cluster. No service stands still for
    RESUME_BOUND_S meanwhile, and each does new work after the last broker is back."""
    run.whole()
    started = time.monotonic()
    for node in sorted(run.cluster.nodes):
        code = run.cluster.controlled_shutdown(node)
        assert code != -9, f"node {node} did not shut down within its stop timeout:\n{run.cluster.log_tails()}"
        run.cluster.restart(node)
        run.cluster.wait_fully_replicated()
    back = time.monotonic()
    run.resumed(back, "the rolling restart")
    stalls = run.longest_stalls(started, time.monotonic())
    print(f"rolling restart took {back - started:.0f}s; longest stall per service {stalls}")
    assert {service: t for service, t in stalls.items() if t >= RESUME_BOUND_S} == {}, run.timeline(started)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_every_sink_is_exact_and_every_line_accounted_for(run: Run) -> None:
    lines = run.writer.stop()
    code = run.demo.wait(480)
    output = run.demo.output
    assert code == 0, run.demo.tail()
    assert verdicts(output) == dict.fromkeys(SINKS, "EXACT"), run.demo.tail()
    assert re.search(rf"input: {lines} lines = \d+ events \+ \d+ malformed", output), run.demo.tail()
    tracebacks = [
        f"{log.name}: {line[:300]}"
        for log in sorted((run.demo.run_dir / "logs").glob("*.log"))
        for line in log.read_text(errors="replace").splitlines()
        if "Exception calling application" in line
    ]
    assert tracebacks == [], "a service answered a gRPC call with a traceback"


@pytest.mark.slow
def test_every_topic_the_services_created_has_3_replicas_and_min_isr_2(run: Run) -> None:
    admin = AdminClient({"bootstrap.servers": run.cluster.bootstrap_servers})
    topics = {
        name: t
        for name, t in admin.list_topics(timeout=10).topics.items()
        if name.startswith(("_onceflow_", "ip_count_"))
    }
    internal = {"_onceflow_coordinator_log", "_onceflow_connect_offsets", "_onceflow_sink_commits"}
    assert internal <= set(topics), sorted(topics)
    replication = {name: {len(p.replicas) for p in t.partitions.values()} for name, t in topics.items()}
    assert replication == {name: {3} for name in topics}
    resources = [ConfigResource(ConfigResource.Type.TOPIC, name) for name in topics]
    entries = {resource.name: future.result(10) for resource, future in admin.describe_configs(resources).items()}
    # set on each topic by the service that created it, not inherited from the brokers' default
    min_isr = {
        name: (
            e["min.insync.replicas"].value,
            getattr(e["min.insync.replicas"].source, "value", e["min.insync.replicas"].source),
        )
        for name, e in entries.items()
    }
    assert min_isr == dict.fromkeys(topics, ("2", ConfigSource.DYNAMIC_TOPIC_CONFIG.value))
