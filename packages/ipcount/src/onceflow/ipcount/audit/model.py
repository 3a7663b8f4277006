"""The audit's values: the truth, what a sink holds, the differences, and the verdicts."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

#: A result key: ``(window_start, ip)``.
Key = tuple[int, str]


@dataclass(frozen=True)
class Truth:
    """The exact expected count per ``(window_start, ip)``.

    ``max_event_time`` is the newest event time seen (None: no events); it decides which windows
    are closed. ``dead_letters`` counts source records that could not be decoded (not counted).
    """

    source: str
    counts: dict[Key, int]
    events: int
    max_event_time: int | None
    dead_letters: int = 0


@dataclass(frozen=True)
class SinkRows:
    """What a sink holds: the counts stored per key. More than one count for a key means duplicate
    rows (a table that lost its primary key); a Kafka topic keeps the latest record per key.
    ``unreadable`` counts records or rows that could not be decoded."""

    rows: dict[Key, list[int]]
    unreadable: int = 0


class DifferenceKind(enum.Enum):
    MISSING = "missing"
    EXTRA = "extra"
    MISMATCH = "mismatch"
    DUPLICATE = "duplicate"


@dataclass(frozen=True)
class Difference:
    """One key where a sink differs from the truth. ``expected`` is None for an extra row; ``actual``
    is empty for a missing row and holds every stored count for a duplicated one."""

    kind: DifferenceKind
    window_start: int
    ip: str
    expected: int | None
    actual: tuple[int, ...]


@dataclass(frozen=True)
class SinkAudit:
    """One sink against the truth. ``windows_expected`` counts expected ``(window, ip)`` rows."""

    sink: str
    windows_expected: int
    matched: int = 0
    missing: int = 0
    extra: int = 0
    mismatched: int = 0
    duplicated: int = 0
    unreadable: int = 0
    examples: tuple[Difference, ...] = ()
    #: Why the sink could not be read at all ("" when it was read).
    error: str = ""

    @property
    def exact(self) -> bool:
        return not (self.error or self.missing or self.extra or self.mismatched or self.duplicated or self.unreadable)


@dataclass(frozen=True)
class Accounting:
    """Every input line accounted for: it is an event in the source topic or a dead letter.

    ``lines``, ``events`` and ``expected_dead_letters`` come from an independent recount of the input
    file; ``events_in_topic`` and ``dead_letters`` are what the pipeline committed (the source topic
    and the dead-letter topic, read_committed). Exact when the topic holds exactly the recount's
    events, and the dead-letter topic exactly its malformed lines, kind by kind.
    """

    lines: int
    events: int
    expected_dead_letters: dict[str, int]
    events_in_topic: int
    dead_letters: dict[str, int]

    @property
    def unaccounted(self) -> int:
        """Lines neither in the source topic nor in the dead-letter topic (negative: too many records)."""
        return self.lines - self.events_in_topic - sum(self.dead_letters.values())

    @property
    def exact(self) -> bool:
        return (
            self.unaccounted == 0
            and self.events_in_topic == self.events
            and {k: n for k, n in self.dead_letters.items() if n}
            == {k: n for k, n in self.expected_dead_letters.items() if n}
        )


@dataclass(frozen=True)
class AuditReport:
    """The truth's summary and one :class:`SinkAudit` per sink; exact when every sink is."""

    truth_source: str
    events: int
    dead_letters: int
    max_event_time: int | None
    closed_only: bool
    #: With ``closed_only``: windows ending after this were excluded from both sides.
    closed_end_limit: int | None
    excluded_open_rows: int
    sinks: tuple[SinkAudit, ...] = field(default_factory=tuple)
    #: The dead-letter topic per kind (None: not read).
    dead_letter_topic: str = ""
    dead_letters_by_kind: dict[str, int] | None = None
    #: With a file as the truth: every line of it accounted for (None: not a file audit).
    accounting: Accounting | None = None

    @property
    def exact(self) -> bool:
        accounted = self.accounting is None or self.accounting.exact
        audited = bool(self.sinks) or self.accounting is not None
        return audited and all(sink.exact for sink in self.sinks) and accounted
