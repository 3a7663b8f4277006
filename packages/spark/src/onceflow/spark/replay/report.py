"""The replay audit's report: per binding EXACT / DIFFERENT with the first differences, then a verdict."""

from __future__ import annotations

from collections.abc import Sequence

from onceflow.spark.replay.audit import BindingAudit, JobAudit

EXACT = "EXACT"
DIFFERENT = "DIFFERENT"


def _binding_lines(checked: BindingAudit) -> list[str]:
    where = checked.binding.describe()
    if checked.error:
        return [f"  {where}: {DIFFERENT} ({checked.error})"]
    result = checked.comparison
    assert result is not None
    verdict = EXACT if result.exact else DIFFERENT
    lines = [
        f"  {where} [{checked.method}, committed through batch {checked.last_committed}]: {verdict}  "
        f"matching={result.matching} missing={result.missing} extra={result.extra} "
        f"different={result.different} duplicated={result.duplicated}"
    ]
    lines += [f"      {example}" for example in result.examples]
    return lines


def render_job(audit: JobAudit) -> str:
    """One job's section of the report."""
    replay, plan = audit.replay, audit.replay.plan
    lines = [
        f"job {audit.job}: replay of batches 0..{audit.batch} "
        f"({len(plan.boundaries)} logged offset ranges from {plan.start} to {plan.boundaries[-1].end})"
    ]
    for name, replayed in replay.outputs.items():
        lines.append(f"  output {name} ({replayed.role}): {len(replayed.rows)} rows in the replay")
    if plan.merged_batches:
        lines.append(
            f"  note: Spark no longer logs batches 0..{plan.merged_batches - 1}; they are read as one range, "
            "and their events are not checked against a watermark"
        )
    for checked in audit.bindings:
        lines += _binding_lines(checked)
        if checked.exact or checked.error:
            continue
        if checked.last_committed < audit.batch:
            lines.append(
                f"      note: this sink has committed through batch {checked.last_committed} only, "
                f"others through {audit.batch} (a commit still being delivered?)"
            )
    for output, agree in audit.agreement.items():
        lines.append(f"  sinks of output {output}: {'hold the same rows' if agree else 'DIFFER from one another'}")
    behind = replay.behind_watermark
    if behind is None:
        lines.append("  watermark: the job sets none through onceflow (until_end_of_input); nothing dropped as late")
    else:
        lines.append(f"  events at or behind their micro-batch's watermark: {behind}")
        lines += [f"      {row}" for row in replay.behind_examples]
        if behind and not audit.exact:
            lines.append(
                f"  note: the stream drops late events whose window had closed; the {behind} late event(s) above "
                "may be why the sinks differ from the batch replay"
            )
    lines.append(f"job {audit.job}: {EXACT if audit.exact else DIFFERENT}")
    return "\n".join(lines) + "\n"


def render(audits: Sequence[JobAudit]) -> str:
    """Every job's section, then the overall verdict line."""
    exact = all(a.exact for a in audits)
    return "".join(render_job(a) for a in audits) + f"verdict: {EXACT if exact else DIFFERENT}\n"
