"""The demo's verdict: every sink against two independent truths.

1. **Input truth**: the generator's first N events for the run's seed (recomputed from the traffic
   model, never read back from Kafka), or with ``--input`` a plain-Python recount of the file that
   also accounts for every line (an event in ``ip_count_source`` or a dead letter, kind by kind).
   Every window counts: the end of input closed them all, so every sink must hold exactly these rows.
2. **Source-topic truth**: ``ip_count_source`` recounted with read_committed. It catches an event
   produced twice, or lost, by the log producer. The dead-letter topic is tallied with it.

Sinks: ``kafka`` (ip_count_sink, read_committed, latest record per key), ``sqlite`` (the
participant's table), ``postgres`` and ``delta`` (``--lakehouse``) when enabled, and ``consumer``
(the consumer's store).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from onceflow.consumer.settings import AuditSettings, AuditSinkSettings, StoreSettings
from onceflow.core import defaults
from onceflow.core.settings import KafkaSettings
from onceflow.core.topics import DEAD_LETTER_TOPIC, SINK_TOPIC, SOURCE_TOPIC
from onceflow.demo.components import Context, generator_config
from onceflow.demo.components.participant import DELTA_SINK, KAFKA_SINK, POSTGRES_SINK, SQLITE_SINK
from onceflow.demo.run_dir import RunState
from onceflow.ipcount.audit import report as audit_report
from onceflow.ipcount.audit.model import AuditReport
from onceflow.ipcount.audit.runner import Auditor, FileSource, GeneratorSource, TopicSource


@dataclass(frozen=True)
class Verdict:
    """Both audits; exact only when every sink matched both truths."""

    generator: AuditReport
    source_topic: AuditReport

    @property
    def exact(self) -> bool:
        return self.generator.exact and self.source_topic.exact

    def per_sink(self) -> dict[str, bool]:
        """Sink name -> exact against both truths."""
        verdicts: dict[str, bool] = {}
        for report in (self.generator, self.source_topic):
            for sink in report.sinks:
                verdicts[sink.sink] = verdicts.get(sink.sink, True) and sink.exact
        return verdicts

    def render(self) -> str:
        """Both reports in full, then one verdict line per sink and the overall verdict."""
        word = {True: audit_report.EXACT, False: audit_report.DIFFERENT}
        lines = [
            f"== audit 1: input truth ({self.generator.truth_source}, {self.generator.events} events)",
            audit_report.render(self.generator).rstrip(),
            "",
            f"== audit 2: source-topic truth ({self.source_topic.truth_source})",
            audit_report.render(self.source_topic).rstrip(),
            "",
            "== verdict",
        ]
        lines += [f"{sink:<10} {word[exact]}" for sink, exact in self.per_sink().items()]
        accounting = self.generator.accounting
        if accounting is not None:
            lines.append(f"{'lines':<10} {word[accounting.exact]} ({accounting.lines} lines, "
                         f"{accounting.unaccounted} unaccounted for)")  # fmt: skip
        lines.append(f"{'overall':<10} {word[self.exact]}")
        return "\n".join(lines)


def auditor(context: Context) -> Auditor:
    """An :class:`Auditor` of every sink of the run, plus the consumer's store."""
    sinks = [
        AuditSinkSettings(name=KAFKA_SINK, kind="kafka", topic=SINK_TOPIC),
        AuditSinkSettings(name=SQLITE_SINK, kind="sqlite", path=str(context.sqlite_sink_path)),
    ]
    if context.postgres_enabled:
        sinks.append(AuditSinkSettings(name=POSTGRES_SINK, kind="postgres", dsn=context.state.postgres_dsn))
    if context.state.lakehouse:
        sinks.append(AuditSinkSettings(name=DELTA_SINK, kind="delta", path=str(context.delta_root)))
    settings = AuditSettings(
        window_ms=defaults.WINDOW_MS,
        allowed_lateness_ms=defaults.ALLOWED_LATENESS_MS,
        generator=generator_config(context.state),
        include_store=True,
        sinks=sinks,
    )
    store = StoreSettings(backend="sqlite", path=str(context.consumer_store_path))
    kafka = KafkaSettings(bootstrap_servers=context.bootstrap, properties=dict(context.state.kafka_properties))
    return Auditor(kafka, settings, store)


def rotated_files(state: RunState) -> tuple[str, ...]:
    """With ``--follow``: the files rotated away from the input while it was read, oldest first (the
    tailer finds them the same way: siblings whose name starts with the file's name)."""
    if not state.follow:
        return ()
    path = Path(state.input_path)
    siblings = [p for p in path.parent.iterdir() if p.name.startswith(path.name) and p.name != path.name]
    return tuple(str(p) for p in sorted(siblings, key=lambda p: (p.stat().st_mtime, p.name)))


def run_final_audit(context: Context, *, events: int | None = None) -> Verdict:
    """Steps 1 and 2 of the module docstring. ``events`` defaults to the run's N."""
    audit = auditor(context)
    state = context.state
    # Step 1
    if state.input_path:
        source = FileSource(state.input_path, SOURCE_TOPIC, DEAD_LETTER_TOPIC, rotated=rotated_files(state))
        first = audit.run(source, closed_only=False)
    else:
        count = state.events if events is None else events
        first = audit.run(GeneratorSource(state.seed, count, generator_config(state)), closed_only=False)
    # Step 2
    source_topic = audit.run(TopicSource(SOURCE_TOPIC, DEAD_LETTER_TOPIC), closed_only=False)
    return Verdict(first, source_topic)


def run_partial_audit(context: Context) -> AuditReport:
    """An interrupted run: closed windows of the source topic only (the sinks may still be behind)."""
    return auditor(context).run(TopicSource(SOURCE_TOPIC), closed_only=True)
