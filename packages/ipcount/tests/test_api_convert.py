"""The IP-count API's values (:mod:`onceflow.ipcount.api`) to their ``onceflow.v1.IpCounts`` messages and
back: what the example's servicer sends is what its client answers."""

from __future__ import annotations

from onceflow.ipcount.api import (
    AuditSummary,
    CountMismatch,
    GeneratorTruth,
    IpCount,
    IpCountsUpdate,
    SinkAuditSummary,
    SourceTopicTruth,
    TopIpCounts,
)
from onceflow.ipcount.api.convert import (
    audit_from_proto,
    audit_request_to_proto,
    audit_to_proto,
    audit_truth_from_proto,
    ip_counts_update_from_proto,
    ip_counts_update_to_proto,
    top_ips_from_proto,
    top_ips_to_proto,
)
from onceflow.proto.v1 import ipcount_pb2


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
    assert audit_truth_from_proto(ipcount_pb2.RunAuditRequest()) is None  # the consumer refuses it, naming truth
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
