"""The audit: ground truth (generator or ``ip_count_source``) compared with every sink.

A library (used by ``RunAudit``, ``onceflow audit`` and the demo): :func:`run_audit` compares a
:class:`Truth` with :class:`SinkReader` s; :class:`Auditor` does it for configured sinks.
"""

from onceflow.consumer.audit.compare import compare
from onceflow.consumer.audit.model import (
    Accounting,
    AuditReport,
    Difference,
    DifferenceKind,
    Key,
    SinkAudit,
    SinkRows,
    Truth,
)
from onceflow.consumer.audit.report import DIFFERENT, EXACT, render
from onceflow.consumer.audit.runner import (
    STORE_SINK,
    Auditor,
    FileSource,
    GeneratorSource,
    TopicSource,
    TruthSource,
    run_audit,
    store_reader,
)
from onceflow.consumer.audit.sinks import KafkaTopicReader, PostgresTableReader, SinkReader, SqliteTableReader
from onceflow.consumer.audit.topic import TopicRecord, read_committed
from onceflow.consumer.audit.truth import generator_model, generator_truth, source_topic_truth

__all__ = [
    "DIFFERENT",
    "EXACT",
    "STORE_SINK",
    "Accounting",
    "AuditReport",
    "Auditor",
    "Difference",
    "DifferenceKind",
    "FileSource",
    "GeneratorSource",
    "KafkaTopicReader",
    "Key",
    "PostgresTableReader",
    "SinkAudit",
    "SinkReader",
    "SinkRows",
    "SqliteTableReader",
    "TopicRecord",
    "TopicSource",
    "Truth",
    "TruthSource",
    "compare",
    "generator_model",
    "generator_truth",
    "read_committed",
    "render",
    "run_audit",
    "source_topic_truth",
    "store_reader",
]
