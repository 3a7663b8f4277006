"""The demo's verdict: every sink against two independent truths.

1. **Generator truth**: the counts of the generator's first N events for the run's seed (recomputed
   from the traffic model, never read back from Kafka). Every window counts: after the flush event
   every real window is closed, so every sink must hold exactly these rows.
2. **Source-topic truth**: ``ip_count_source`` recounted with read_committed, closed windows only
   (the flush event's own window stays open and is left out of both sides). It catches an event
   produced twice, or lost, by the log producer.

Sinks: ``kafka`` (ip_count_sink, read_committed, latest record per key), ``sqlite`` (the
participant's table), ``postgres`` when enabled, and ``consumer`` (the consumer's store).
"""

from __future__ import annotations

from dataclasses import dataclass

from onceflow.consumer.audit import report as audit_report
from onceflow.consumer.audit.model import AuditReport
from onceflow.consumer.audit.runner import Auditor, GeneratorSource, TopicSource
from onceflow.consumer.settings import AuditSettings, AuditSinkSettings, StoreSettings
from onceflow.core import defaults
from onceflow.core.settings import KafkaSettings
from onceflow.core.topics import SINK_TOPIC, SOURCE_TOPIC
from onceflow.demo.components import Context, generator_config
from onceflow.demo.components.participant import KAFKA_SINK, POSTGRES_SINK, SQLITE_SINK


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
            f"== audit 1: generator truth ({self.generator.truth_source}, {self.generator.events} events)",
            audit_report.render(self.generator).rstrip(),
            "",
            f"== audit 2: source-topic truth ({self.source_topic.truth_source}, closed windows only)",
            audit_report.render(self.source_topic).rstrip(),
            "",
            "== verdict",
        ]
        lines += [f"{sink:<10} {word[exact]}" for sink, exact in self.per_sink().items()]
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
    settings = AuditSettings(
        window_ms=defaults.WINDOW_MS,
        allowed_lateness_ms=defaults.ALLOWED_LATENESS_MS,
        generator=generator_config(context.state),
        include_store=True,
        sinks=sinks,
    )
    store = StoreSettings(backend="sqlite", path=str(context.consumer_store_path))
    return Auditor(KafkaSettings(bootstrap_servers=context.bootstrap), settings, store)


def run_final_audit(context: Context, *, events: int | None = None) -> Verdict:
    """Steps 1 and 2 of the module docstring. ``events`` defaults to the run's N."""
    audit = auditor(context)
    count = context.state.events if events is None else events
    # Step 1
    generator = audit.run(
        GeneratorSource(context.state.seed, count, generator_config(context.state)), closed_only=False
    )
    # Step 2
    source_topic = audit.run(TopicSource(SOURCE_TOPIC), closed_only=True)
    return Verdict(generator, source_topic)


def run_partial_audit(context: Context) -> AuditReport:
    """An interrupted run: closed windows of the source topic only (the sinks may still be behind)."""
    return auditor(context).run(TopicSource(SOURCE_TOPIC), closed_only=True)
