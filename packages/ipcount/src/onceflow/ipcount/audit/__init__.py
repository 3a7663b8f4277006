"""The IP-count audit: ground truth (generator, ``ip_count_source`` or the access-log file) compared
with every sink's IP-count results.

A library (used by the example's ``RunAudit``, ``onceflow audit`` and the demo): :func:`run_audit` compares a
:class:`Truth` with :class:`SinkReader` s; :class:`Auditor` does it for configured sinks.
"""

from onceflow.ipcount.audit.compare import compare
from onceflow.ipcount.audit.model import (
    Accounting,
    AuditReport,
    Difference,
    DifferenceKind,
    Key,
    SinkAudit,
    SinkRows,
    Truth,
)
from onceflow.ipcount.audit.report import DIFFERENT, EXACT, render
from onceflow.ipcount.audit.runner import (
    STORE_SINK,
    Auditor,
    FileSource,
    GeneratorSource,
    TopicSource,
    TruthSource,
    run_audit,
    store_reader,
)
from onceflow.ipcount.audit.sinks import KafkaTopicReader, PostgresTableReader, SinkReader, SqliteTableReader
from onceflow.ipcount.audit.truth import generator_model, generator_truth, source_topic_truth

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
    "TopicSource",
    "Truth",
    "TruthSource",
    "compare",
    "generator_model",
    "generator_truth",
    "render",
    "run_audit",
    "source_topic_truth",
    "store_reader",
]
