"""The Results API's contract values (:mod:`onceflow.contract.results`) to their messages and back:
what the consumer serves is what the :class:`ResultsClient` answers."""

from __future__ import annotations

from onceflow.contract.proto import (
    audit_from_proto,
    audit_request_to_proto,
    audit_to_proto,
    audit_truth_from_proto,
    ip_counts_update_from_proto,
    ip_counts_update_to_proto,
    rows_page_from_proto,
    rows_page_to_proto,
    rows_update_from_proto,
    rows_update_to_proto,
    table_from_proto,
    table_to_proto,
    top_ips_from_proto,
    top_ips_to_proto,
)
from onceflow.contract.results import (
    AuditSummary,
    CountMismatch,
    GeneratorTruth,
    IpCount,
    IpCountsUpdate,
    RowsPage,
    RowsUpdate,
    SinkAuditSummary,
    SourceTopicTruth,
    TableColumn,
    TableDescription,
    TopIpCounts,
)
from onceflow.proto.v1 import results_pb2


def test_tables_and_rows_round_trip_through_proto() -> None:
    table = TableDescription(
        "events", "events_topic", "upsert", ("id",), "json", True,
        (TableColumn("id", "int64", nullable=False), TableColumn("at", "timestamp[us, tz=UTC]")),
    )  # fmt: skip
    assert table_from_proto(table_to_proto(table)) == table
    assert table_from_proto(table_to_proto(TableDescription("late", "t", "append"))).created is False
    page = RowsPage(('{"id": 1, "at": "2026-01-01T00:00:00+00:00"}', '{"id": 2, "at": null}'), "token-2")
    assert rows_page_from_proto(rows_page_to_proto(page)) == page
    assert page.records() == [{"id": 1, "at": "2026-01-01T00:00:00+00:00"}, {"id": 2, "at": None}]
    update = RowsUpdate(('{"id": 3}',), {0: 12, 1: 7})
    assert rows_update_from_proto(rows_update_to_proto(update)) == update
    assert rows_update_from_proto(rows_update_to_proto(RowsUpdate((), {0: 5}))).records() == []


def test_ip_counts_round_trip_through_proto() -> None:
    counts = (IpCount(5_000, 10_000, "10.0.0.1", 7), IpCount(5_000, 10_000, "10.0.0.2", 3))
    top = TopIpCounts(5_000, counts)
    assert top_ips_from_proto(top_ips_to_proto(top)) == top
    update = IpCountsUpdate(counts, {0: 4})
    assert ip_counts_update_from_proto(ip_counts_update_to_proto(update)) == update


def test_the_audit_request_and_summary_round_trip_through_proto() -> None:
    truths: list[GeneratorTruth | SourceTopicTruth] = [
        GeneratorTruth(3, 3_000),
        SourceTopicTruth("s"),
        SourceTopicTruth(),
    ]
    for truth in truths:
        request = audit_request_to_proto(truth, ["kafka", "sqlite"])
        assert audit_truth_from_proto(request) == truth and list(request.sinks) == ["kafka", "sqlite"]
    assert audit_truth_from_proto(results_pb2.RunAuditRequest()) is None  # the consumer refuses it, naming truth
    summary = AuditSummary(
        sinks=(
            SinkAuditSummary("kafka", 40, matched=40, exact=True),
            SinkAuditSummary(
                "sqlite", 40, matched=38, missing=1, mismatched=1,
                examples=(CountMismatch(5_000, "10.0.0.1", 7, 0), CountMismatch(10_000, "10.0.0.3", 2, 4)),
            ),
        ),
        exact=False,
    )  # fmt: skip
    assert audit_from_proto(audit_to_proto(summary)) == summary
