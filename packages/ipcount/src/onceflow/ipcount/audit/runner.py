"""Run an audit: a truth, the sinks to compare with it, and which windows count."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import psycopg
from confluent_kafka import KafkaException

from onceflow.consumer.exceptions import InvalidQuery
from onceflow.consumer.settings import AuditSettings, StoreSettings
from onceflow.core import defaults
from onceflow.core.logging import get_logger
from onceflow.core.settings import KafkaSettings
from onceflow.core.topics import DEAD_LETTER_TOPIC, SOURCE_TOPIC
from onceflow.ipcount.audit.compare import compare
from onceflow.ipcount.audit.dead_letters import DeadLetterTally, tally_dead_letters
from onceflow.ipcount.audit.logfile import FileRecount, merge_recounts, recount_file
from onceflow.ipcount.audit.model import Accounting, AuditReport, Key, SinkAudit, Truth
from onceflow.ipcount.audit.sinks import (
    DeltaTableReader,
    KafkaTopicReader,
    PostgresTableReader,
    SinkReader,
    SqliteTableReader,
)
from onceflow.ipcount.audit.truth import file_truth, generator_model, generator_truth, source_topic_truth

_log = get_logger(__name__)

#: The consumer's own store, when audited, is the sink of this name.
STORE_SINK = "consumer"

#: Errors that mean "this sink cannot be read"; the audit reports them per sink instead of failing.
SINK_READ_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    TimeoutError,
    sqlite3.Error,
    psycopg.Error,
    KafkaException,
)


def run_audit(
    truth: Truth,
    readers: Sequence[SinkReader],
    *,
    window_ms: int = defaults.WINDOW_MS,
    allowed_lateness_ms: int = defaults.ALLOWED_LATENESS_MS,
    closed_only: bool = False,
    examples: int = 5,
) -> AuditReport:
    """Compare every sink with ``truth``.

    Steps:
        1. With ``closed_only``, keep only closed windows: ``window_end + allowed_lateness <= max
           event time`` of the truth (the watermark has passed them, so no event can still change
           them). Open windows are left out of both sides.
        2. Read each sink; a sink that cannot be read is reported as such (DIFFERENT), the others
           are still audited.
        3. Classify every key per sink (:func:`~onceflow.ipcount.audit.compare.compare`).
    """
    # Step 1
    end_limit: int | None = None
    include = None
    if closed_only:
        end_limit = None if truth.max_event_time is None else truth.max_event_time - allowed_lateness_ms

        def include(key: Key) -> bool:
            return end_limit is not None and key[0] + window_ms <= end_limit

    excluded = 0 if include is None else sum(1 for key in truth.counts if not include(key))
    audits: list[SinkAudit] = []
    for reader in readers:
        # Step 2
        try:
            rows = reader.read()
        except SINK_READ_ERRORS as exc:
            _log.warning("audit.sink_unreadable", sink=reader.name, error=f"{type(exc).__name__}: {exc}")
            audits.append(SinkAudit(reader.name, windows_expected=len(truth.counts) - excluded, error=str(exc)))
            continue
        # Step 3
        audit = compare(reader.name, truth.counts, rows, examples=examples, include=include)
        _log.info(
            "audit.sink", sink=reader.name, exact=audit.exact, expected=audit.windows_expected, matched=audit.matched,
            missing=audit.missing, extra=audit.extra, mismatched=audit.mismatched, duplicated=audit.duplicated,
        )  # fmt: skip
        audits.append(audit)
    return AuditReport(
        truth_source=truth.source,
        events=truth.events,
        dead_letters=truth.dead_letters,
        max_event_time=truth.max_event_time,
        closed_only=closed_only,
        closed_end_limit=end_limit,
        excluded_open_rows=excluded,
        sinks=tuple(audits),
    )


@dataclass(frozen=True)
class GeneratorSource:
    """Truth from the generator: its first ``count`` events for ``seed`` (and its connector settings)."""

    seed: int
    count: int
    settings: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TopicSource:
    """Truth recounted from a source topic (``ip_count_source``), read with read_committed; the
    report also tallies the dead-letter topic ("" = do not read it)."""

    topic: str
    dead_letter_topic: str = DEAD_LETTER_TOPIC


@dataclass(frozen=True)
class FileSource:
    """Truth recounted from the access-log file the pipeline read, with an independent plain-Python
    parse (:mod:`onceflow.ipcount.audit.logfile`). The report accounts for every line of it: an
    event in ``source_topic`` or a dead letter in ``dead_letter_topic``, kind by kind."""

    path: str
    source_topic: str = SOURCE_TOPIC
    dead_letter_topic: str = DEAD_LETTER_TOPIC
    #: The tailer's ``max.line.bytes``: longer lines reach the pipeline in pieces.
    max_line_bytes: int = 1 << 20
    #: The tailer's ``container.log``: auto, none, docker or cri.
    container_log: str = "auto"
    #: Files rotated away from ``path`` while it was read (oldest first): they hold the input's start.
    rotated: tuple[str, ...] = ()


TruthSource = GeneratorSource | TopicSource | FileSource


class Auditor:
    """Audits configured sinks (:class:`AuditSettings`) and, optionally, the consumer's store."""

    def __init__(self, kafka: KafkaSettings, settings: AuditSettings, store: StoreSettings | None = None) -> None:
        self.kafka = kafka
        self.settings = settings
        self.store = store if settings.include_store else None

    def sink_names(self) -> list[str]:
        names = [sink.name for sink in self.settings.sinks]
        return [*names, STORE_SINK] if self.store is not None else names

    def readers(self, names: Sequence[str] = ()) -> list[SinkReader]:
        """Readers of the sinks named (all configured ones when ``names`` is empty)."""
        known = self.sink_names()
        unknown = [name for name in names if name not in known]
        if unknown:
            raise InvalidQuery(
                "sinks", f"unknown sink(s) {', '.join(unknown)}; configured: {', '.join(known) or 'none'}"
            )
        wanted = list(dict.fromkeys(names)) or known
        timeout = self.settings.read_timeout_s
        readers: list[SinkReader] = []
        for sink in self.settings.sinks:
            if sink.name not in wanted:
                continue
            if sink.kind == "kafka":
                readers.append(KafkaTopicReader(sink.name, self.kafka, sink.topic, timeout=timeout))
            elif sink.kind == "sqlite":
                readers.append(SqliteTableReader(sink.name, sink.path, sink.table))
            elif sink.kind == "delta":
                readers.append(DeltaTableReader(sink.name, sink.path, sink.table))
            else:
                readers.append(PostgresTableReader(sink.name, sink.dsn, sink.table))
        if self.store is not None and STORE_SINK in wanted:
            readers.append(store_reader(self.store))
        return readers

    def truth(self, source: TruthSource) -> Truth:
        window_ms = self.settings.window_ms
        if isinstance(source, GeneratorSource):
            settings = {**self.settings.generator, **source.settings}
            return generator_truth(generator_model(source.seed, settings), source.count, window_ms)
        if isinstance(source, FileSource):
            return file_truth(self._recount(source))
        return source_topic_truth(self.kafka, source.topic, window_ms, timeout=self.settings.read_timeout_s)

    def _recount(self, source: FileSource) -> FileRecount:
        """The recount of the input: the rotated files (oldest first), then the file itself."""
        parts: list[FileRecount] = []
        for path in (*source.rotated, source.path):
            try:
                recount = recount_file(
                    path, self.settings.window_ms, max_line_bytes=source.max_line_bytes, container=source.container_log
                )
                parts.append(recount)
            except OSError as exc:
                raise InvalidQuery("input", f"cannot read {path}: {exc.strerror or exc}") from None
        return merge_recounts(parts) if len(parts) > 1 else parts[0]

    def accounting(self, source: FileSource, recount: FileRecount, dead_letters: DeadLetterTally) -> Accounting:
        """Every line of the file: an event in the source topic or a dead letter (see :class:`Accounting`)."""
        in_topic = source_topic_truth(
            self.kafka, source.source_topic, self.settings.window_ms, timeout=self.settings.read_timeout_s
        )
        return Accounting(
            lines=recount.lines,
            events=recount.events,
            expected_dead_letters=dict(recount.dead_letters),
            events_in_topic=in_topic.events,
            dead_letters=dict(dead_letters.by_kind),
        )

    def run(self, source: TruthSource, sinks: Sequence[str] = (), *, closed_only: bool | None = None) -> AuditReport:
        """Audit; ``closed_only`` defaults to on for topic truth (a live run) and off for generator truth."""
        readers = self.readers(sinks)
        if not readers and not isinstance(source, FileSource):
            raise InvalidQuery("sinks", "no sinks to audit: configure audit.sinks or pass sinks")
        if closed_only is None:
            closed_only = isinstance(source, TopicSource)
        recount = self._recount(source) if isinstance(source, FileSource) else None
        report = run_audit(
            file_truth(recount) if recount is not None else self.truth(source),
            readers,
            window_ms=self.settings.window_ms,
            allowed_lateness_ms=self.settings.allowed_lateness_ms,
            closed_only=closed_only,
            examples=self.settings.examples,
        )
        if isinstance(source, GeneratorSource) or not source.dead_letter_topic:
            return report
        dead = tally_dead_letters(self.kafka, source.dead_letter_topic, timeout=self.settings.read_timeout_s)
        report = replace(report, dead_letter_topic=dead.topic, dead_letters_by_kind=dict(dead.by_kind))
        if isinstance(source, FileSource) and recount is not None:
            report = replace(report, accounting=self.accounting(source, recount, dead))
        return report


def store_reader(store: StoreSettings, name: str = STORE_SINK) -> SinkReader:
    """A reader of the consumer store's ``results`` table."""
    if store.backend == "postgres":
        return PostgresTableReader(name, store.dsn, "results", connect_timeout_s=store.connect_timeout_s)
    return SqliteTableReader(name, store.path, "results")
