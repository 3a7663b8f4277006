"""The audit report as text: a block per sink with a verdict line, then the overall verdict."""

from __future__ import annotations

from onceflow.ipcount.audit.model import Accounting, AuditReport, Difference, SinkAudit

EXACT = "EXACT"
DIFFERENT = "DIFFERENT"


def _difference(diff: Difference) -> str:
    expected = "-" if diff.expected is None else str(diff.expected)
    if not diff.actual:
        actual = "-"
    elif len(diff.actual) == 1:
        actual = str(diff.actual[0])
    else:
        actual = f"{len(diff.actual)} rows: " + ", ".join(str(n) for n in diff.actual)
    return f"    {diff.kind.value:<9} window_start={diff.window_start} ip={diff.ip} expected={expected} actual={actual}"


def _sink(audit: SinkAudit) -> list[str]:
    if audit.error:
        return [f"sink {audit.sink}: cannot read: {audit.error}", f"sink {audit.sink}: {DIFFERENT}"]
    lines = [
        f"sink {audit.sink}: windows expected {audit.windows_expected}, matched {audit.matched}, "
        f"missing {audit.missing}, extra {audit.extra}, count mismatches {audit.mismatched}, "
        f"duplicated {audit.duplicated}" + (f", unreadable records {audit.unreadable}" if audit.unreadable else "")
    ]
    lines.extend(_difference(diff) for diff in audit.examples)
    lines.append(f"sink {audit.sink}: {EXACT if audit.exact else DIFFERENT}")
    return lines


def _kinds(by_kind: dict[str, int]) -> str:
    total = sum(by_kind.values())
    parts = ", ".join(f"{kind} {n}" for kind, n in sorted(by_kind.items()) if n)
    return f"{total}" + (f" ({parts})" if parts else "")


def _accounting(acc: Accounting) -> list[str]:
    in_dlq = sum(acc.dead_letters.values())
    lines = [
        f"input: {acc.lines} lines = {acc.events} events + {sum(acc.expected_dead_letters.values())} malformed "
        f"(independent recount)",
        f"pipeline: {acc.events_in_topic} events in the source topic + {in_dlq} dead letters; "
        f"{acc.unaccounted} lines unaccounted for",
        f"malformed lines by kind: expected {_kinds(acc.expected_dead_letters)}, "
        f"dead-lettered {_kinds(acc.dead_letters)}",
    ]
    for kind in sorted(set(acc.dead_letters) | set(acc.expected_dead_letters)):
        got, want = acc.dead_letters.get(kind, 0), acc.expected_dead_letters.get(kind, 0)
        if got != want:
            lines.append(f"    {kind}: {got} dead letters, {want} malformed lines" + (
                " (well-formed lines were dead-lettered)" if got > want else ""))  # fmt: skip
    lines.append(f"accounting: {EXACT if acc.exact else DIFFERENT}")
    return lines


def render(report: AuditReport) -> str:
    """The report as printed by ``onceflow audit`` (one verdict line per sink and ``overall: ...``)."""
    lines = [
        f"truth: {report.truth_source}: {report.events} events, {report.dead_letters} dead letters, "
        f"max event time {report.max_event_time if report.max_event_time is not None else '-'}"
    ]
    if report.closed_only:
        limit = "-" if report.closed_end_limit is None else str(report.closed_end_limit)
        lines.append(
            f"closed windows only: window_end <= {limit} (max event time - allowed lateness); "
            f"{report.excluded_open_rows} expected rows of open windows excluded"
        )
    if report.dead_letters_by_kind is not None:
        lines.append(f"dead letters in {report.dead_letter_topic}: {_kinds(report.dead_letters_by_kind)}")
    if report.accounting is not None:
        lines.extend(_accounting(report.accounting))
    for audit in report.sinks:
        lines.extend(_sink(audit))
    different = sum(1 for audit in report.sinks if not audit.exact)
    if report.accounting is not None and not report.accounting.exact:
        lines.append(
            f"overall: {DIFFERENT} (input lines not accounted for; {different} of {len(report.sinks)} sinks differ)"
        )
    elif not report.sinks and report.accounting is None:
        lines.append(f"overall: {DIFFERENT} (no sinks to audit)")
    elif different:
        lines.append(f"overall: {DIFFERENT} ({different} of {len(report.sinks)} sinks differ)")
    else:
        lines.append(f"overall: {EXACT} ({len(report.sinks)} sinks)")
    return "\n".join(lines) + "\n"
