"""One demo run from start to verdict: :class:`DemoRun`."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import TextIO

from onceflow.core.end_of_input import END_OF_INPUT_TIME_MS
from onceflow.core.logging import get_logger
from onceflow.demo.chaos import ChaosMonkey
from onceflow.demo.components import Context
from onceflow.demo.components.postgres import LocalPostgres
from onceflow.demo.dashboard import MetricsCollector, Snapshot, progress_line, render
from onceflow.demo.final_audit import Verdict, run_final_audit, run_partial_audit
from onceflow.demo.observe import Observer
from onceflow.demo.options import DemoOptions
from onceflow.demo.pipeline import Pipeline
from onceflow.demo.run_dir import RunDir, RunState, assign_ports, default_run_root
from onceflow.demo.supervisor import RestartPolicy, ServiceState, Supervisor

_log = get_logger(__name__)

EXIT_EXACT = 0
EXIT_DIFFERENT = 1
EXIT_INTERRUPTED = 130
#: How long counts must stand still, after the end of input, before a run that is not complete is
#: taken as drained (then audited).
DRAIN_QUIET_S = 30.0


def is_complete(snap: Snapshot) -> bool:
    """The input ended, every one of its events is counted in the consumer store and the SQLite
    sink, and no 2PC transaction is in doubt."""
    n = snap.produced
    return (
        snap.input_ended
        and n >= snap.target_events
        and snap.counted_in_store >= n
        and snap.counted_in_sqlite >= n
        and snap.transactions_in_doubt == 0
    )


def is_drained(snap: Snapshot, quiet_s: float) -> bool:
    """The input ended, the job's watermark reached the end of input (every window is closed and
    emitted), nothing is in doubt, and the counts have not moved for ``quiet_s``: events the job
    dropped as too late will never be counted, and the audit says which."""
    spark = snap.spark
    at_end = spark is not None and spark.watermark_ms >= END_OF_INPUT_TIME_MS - 86_400_000
    return snap.input_ended and at_end and snap.transactions_in_doubt == 0 and quiet_s >= DRAIN_QUIET_S


class DemoRun:
    """Runs the pipeline until the run is complete, interrupted or out of time, then audits it.

    Steps (:meth:`run`):
        1. Create the run dir (fresh ports, event time starting now) or load it (``--resume``:
           same data dirs, checkpoints and offsets; the generator resumes after its committed
           position, so no event is generated twice; ``--rate`` sets a new pace, nothing else).
        2. PostgreSQL: start the local server (``--postgres``) or use the DSN given.
        3. Start the pipeline in dependency order (see :class:`~onceflow.demo.pipeline.Pipeline`).
        4. Chaos on, when asked for.
        5. Watch and show progress until the source ends its input (the generator after its N events,
           a file at its end or after its idle timeout) and the job has counted it all
           (:func:`is_complete`, or :func:`is_drained` when the job dropped late events).
        6. Chaos off; wait until every service is up again (the audit reads the broker).
        7. Audit every sink against the generator and the source topic; print the verdicts.
        8. Stop the pipeline (producer first, broker last) and PostgreSQL.
    """

    def __init__(self, options: DemoOptions, out: TextIO = sys.stdout) -> None:
        self.options = options
        self.out = out
        self.plain = options.plain if options.plain is not None else not out.isatty()
        root = options.run_dir or default_run_root()
        self.run_dir = RunDir(root)
        self.state: RunState
        self.supervisor = Supervisor()
        self.pipeline: Pipeline | None = None
        self.postgres: LocalPostgres | None = None
        self.chaos: ChaosMonkey | None = None
        self.verdict: Verdict | None = None

    # Step 1
    def prepare_run_dir(self) -> Context:
        if self.options.resume:
            self.state = self.run_dir.load()
            self.say(f"resuming run {self.state.run_id} in {self.run_dir.root}")
            if self.options.rate is not None and self.options.rate != self.state.rate:
                self.say(f"pace: {self.options.rate:g} events/s (was {self.state.rate:g})")
                self.state.rate = self.options.rate
                self.run_dir.save(self.state)
        else:
            self.state = self.run_dir.create(self.options.new_state(self.run_dir.root.name))
            self.say(f"run {self.state.run_id} in {self.run_dir.root}")
        _log.info("demo.run", run=self.state.run_id, dir=str(self.run_dir.root), events=self.state.events,
                  seed=self.state.seed, rate=self.state.rate, resume=self.options.resume)  # fmt: skip
        return Context(self.run_dir, self.state, self.options.service_log_level)

    # Step 2
    def start_postgres(self) -> None:
        if self.state.postgres != "local":
            return
        if "postgres" not in self.state.ports:
            assign_ports(self.state.ports, ["postgres"])
        port = self.state.ports["postgres"]
        self.postgres = LocalPostgres(self.run_dir.data("postgres"), port)
        self.state.postgres_dsn = self.postgres.start()
        self.run_dir.save(self.state)

    def run(self) -> int:
        context = self.prepare_run_dir()
        try:
            self.start_postgres()
            # Step 3
            self.pipeline = Pipeline(context, self.supervisor, RestartPolicy(self.options.restart_delay_s))
            source = f"the tailer of {self.state.input_path}" if self.state.input_path else "the generator"
            self.say(f"starting broker, coordinator, participant, consumer, Spark job and {source} ...")
            started = time.monotonic()
            self.pipeline.start(input_after_job=self.options.chaos or self.options.input_after_job)
            self.say(f"pipeline up in {time.monotonic() - started:.0f}s; logs in {self.run_dir.root / 'logs'}")
            # Step 4
            if self.options.chaos:
                self.chaos = ChaosMonkey(
                    self.supervisor, self.pipeline.service_names, self.options.chaos_interval_s,
                    seed=self.options.chaos_seed,
                ).start()  # fmt: skip
            # Step 5
            outcome = self.watch(context)
            # Step 6
            self.stop_chaos()
            if outcome == "interrupted":
                return self.finish_interrupted(context)
            self.wait_all_up()
            # Step 7
            truth = "a recount of the input file" if self.state.input_path else "the generator"
            self.say(f"auditing every sink against {truth} and the source topic ...")
            self.verdict = run_final_audit(context)
            self.say(self.verdict.render())
            return EXIT_EXACT if self.verdict.exact and outcome == "complete" else EXIT_DIFFERENT
        finally:
            # Step 8
            self.stop_chaos()
            if self.pipeline is not None:
                self.pipeline.stop()
            if self.postgres is not None:
                self.postgres.stop()
            self.say(f"stopped; resume with: onceflow demo --resume --run-dir {self.run_dir.root}")

    def watch(self, context: Context) -> str:
        """Step 5: returns ``complete``, ``timeout`` or ``interrupted``."""
        target = 0 if self.state.input_path else self.state.events
        collector = MetricsCollector(Observer(context), self.supervisor, target)
        deadline = None if self.options.timeout_s is None else time.monotonic() + self.options.timeout_s
        counts, changed_at = (-1, -1), time.monotonic()
        try:
            with self.display(collector) as show:
                while True:
                    collector.refresh()
                    snap = collector.snapshot("draining" if collector.input.ended else "reading")
                    show(snap)
                    if (snap.counted_in_store, snap.counted_in_sqlite) != counts:
                        counts, changed_at = (snap.counted_in_store, snap.counted_in_sqlite), time.monotonic()
                    done = collector.snapshot("complete")
                    if is_complete(done) or is_drained(done, time.monotonic() - changed_at):
                        show(done)
                        _log.info("demo.complete", run=self.state.run_id, lines=done.lines_read, events=done.produced,
                                  dead_letters=done.dead_letters, counted=done.counted_in_store)  # fmt: skip
                        return "complete"
                    if deadline is not None and time.monotonic() > deadline:
                        _log.error("demo.timeout", run=self.state.run_id, timeout_s=self.options.timeout_s)
                        self.say(f"the run did not complete within {self.options.timeout_s:.0f}s")
                        return "timeout"
                    time.sleep(1.0)
        except KeyboardInterrupt:
            _log.warning("demo.interrupted", run=self.state.run_id)
            return "interrupted"

    @contextlib.contextmanager
    def display(self, collector: MetricsCollector) -> Iterator[Callable[[Snapshot], None]]:
        """A function showing a snapshot: a rich Live dashboard, or a plain line every few seconds."""
        if self.plain:
            last = 0.0

            def show_line(snap: Snapshot) -> None:
                nonlocal last
                if snap.at - last >= self.options.progress_interval_s or snap.phase == "complete":
                    last = snap.at
                    print(progress_line(snap), file=self.out, flush=True)

            yield show_line
            return
        from rich.console import Console
        from rich.live import Live

        run_id = self.state.run_id
        with Live(console=Console(file=self.out), refresh_per_second=2, transient=False) as live:

            def show_live(snap: Snapshot) -> None:
                live.update(render(snap, run_id))

            yield show_live

    def stop_chaos(self) -> None:
        if self.chaos is not None:
            self.chaos.stop()
            self.say(f"chaos: {sum(self.chaos.kills.values())} kills: {dict(sorted(self.chaos.kills.items()))}")
            self.chaos = None

    def wait_all_up(self, timeout: float = 180.0, exclude: tuple[str, ...] = ()) -> None:
        """Step 6: every service RUNNING (after the last kill)."""
        for name in self.supervisor.names():
            if name in exclude:
                continue
            if self.supervisor.states()[name] is not ServiceState.RUNNING:
                self.supervisor.wait_ready(name, timeout)

    def finish_interrupted(self, context: Context) -> int:
        """Ctrl-C: stop the generator, let the job drain briefly, audit the closed windows (partial)."""
        self.say("interrupted: stopping the generator and auditing the closed windows (a partial audit) ...")
        self.supervisor.stop_service("connect")
        try:
            self.wait_all_up(exclude=("connect",))
            time.sleep(2 * self.state.trigger_ms / 1000)
            from onceflow.ipcount.audit import report as audit_report

            self.say(audit_report.render(run_partial_audit(context)))
        except KeyboardInterrupt:
            self.say("audit skipped")
        return EXIT_INTERRUPTED

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)
