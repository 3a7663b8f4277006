"""Compare one sink's rows with the truth."""

from __future__ import annotations

from collections.abc import Callable

from onceflow.ipcount.audit.model import Difference, DifferenceKind, Key, SinkAudit, SinkRows


def compare(
    sink: str,
    expected: dict[Key, int],
    actual: SinkRows,
    *,
    examples: int = 5,
    include: Callable[[Key], bool] | None = None,
) -> SinkAudit:
    """Classify every key of either side: matched, missing (expected, absent), extra (present, not
    expected), mismatched (one row, another count) or duplicated (several rows). ``include`` limits
    both sides (e.g. to closed windows). ``examples`` differences are kept, in key order."""
    keep = include or (lambda key: True)
    wanted = {key: count for key, count in expected.items() if keep(key)}
    found = {key: counts for key, counts in actual.rows.items() if keep(key)}
    matched = missing = extra = mismatched = duplicated = 0
    differences: list[Difference] = []

    def note(kind: DifferenceKind, key: Key, want: int | None, got: tuple[int, ...]) -> None:
        if len(differences) < examples:
            differences.append(Difference(kind, key[0], key[1], want, got))

    for key in sorted(wanted.keys() | found.keys()):
        want = wanted.get(key)
        got = tuple(found.get(key, ()))
        if want is None:
            extra += 1
            note(DifferenceKind.EXTRA, key, None, got)
        elif not got:
            missing += 1
            note(DifferenceKind.MISSING, key, want, got)
        elif len(got) > 1:
            duplicated += 1
            note(DifferenceKind.DUPLICATE, key, want, got)
        elif got[0] != want:
            mismatched += 1
            note(DifferenceKind.MISMATCH, key, want, got)
        else:
            matched += 1
    return SinkAudit(
        sink=sink,
        windows_expected=len(wanted),
        matched=matched,
        missing=missing,
        extra=extra,
        mismatched=mismatched,
        duplicated=duplicated,
        unreadable=actual.unreadable,
        examples=tuple(differences),
    )
