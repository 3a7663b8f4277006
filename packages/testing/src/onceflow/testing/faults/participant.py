"""The participant's crash points: ``ONCEFLOW_PARTICIPANT_TEST_CRASH_AT=<point>`` in its environment.

The servicer and the sinks reach these points through the :class:`~onceflow.core.faults.FaultInjector`
they are given; ``onceflow participant`` asks :func:`~onceflow.core.faults.installed_faults` for it
once at start, which calls :func:`from_env` (the ``participant`` plug-in of this package). Each is a
step of the protocol as one participant (or one shard of a sharded sink) sees it:

- ``prepare-received``: a Prepare arrived and was checked; nothing is durable, no vote was sent;
- ``prepare-midway``: inside the sink's prepare. Delta Lake and Iceberg: the batch's data files are
  written, not yet journaled (no vote will be sent);
- ``prepare-durable``: the batch is prepared durably and the yes vote is about to be sent;
- ``commit-received``: the participant voted yes and the Commit arrived; nothing is committed yet;
- ``commit-midway``: inside the sink's commit. Kafka: the Kafka transaction is committed, the
  journal entry not yet removed; SQLite: the rows are written in the open SQLite transaction, which
  is not committed; PostgreSQL: just before ``COMMIT PREPARED``, which is atomic; Delta Lake and
  Iceberg: a table commit landed, the journal entry not yet removed (``before-table-commit``: the
  table was read and the table commit is next);
- ``commit-applied``: the commit is done and the acknowledgement is about to be sent.
"""

from __future__ import annotations

from typing import Final

from onceflow.core.faults import FaultInjector
from onceflow.testing.faults.crash import crash_from_env

CRASH_ENV: Final = "ONCEFLOW_PARTICIPANT_TEST_CRASH_AT"
CRASH_POINTS: Final = (
    "prepare-received",
    "prepare-midway",
    "prepare-durable",
    "commit-received",
    "before-table-commit",
    "commit-midway",
    "commit-applied",
)


def from_env() -> FaultInjector:
    """The crash :data:`CRASH_ENV` asks for, else none."""
    return crash_from_env(CRASH_ENV, CRASH_POINTS)
