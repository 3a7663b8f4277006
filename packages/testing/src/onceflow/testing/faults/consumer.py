"""The consumer's audits held at their start: ``ONCEFLOW_TEST_AUDIT_HOLD_DIR=<directory>``.

``onceflow consumer`` asks :func:`~onceflow.core.faults.installed_faults` once at start, which calls
:func:`from_env` (the ``consumer`` plug-in of this package): with the variable set, every audit is held
at ``audit.started`` by a :class:`~onceflow.testing.faults.hold.HoldAt` on that directory until the
test releases the hold (:class:`~onceflow.testing.consumer.HeldAuditsConsumerProcess`), so a consumer
process in the middle of an audit does not depend on the machine's speed.
"""

from __future__ import annotations

import os
from typing import Final

from onceflow.core.faults import NO_FAULTS, FaultInjector
from onceflow.ipcount.audit.bounded import AUDIT_STARTED
from onceflow.testing.faults.hold import HoldAt

#: The environment variable naming the hold's directory (:attr:`HoldAt.directory`).
HOLD_DIR_ENV: Final = "ONCEFLOW_TEST_AUDIT_HOLD_DIR"


def from_env() -> FaultInjector:
    """A hold of the audits on the directory :data:`HOLD_DIR_ENV` names, else none."""
    directory = os.environ.get(HOLD_DIR_ENV, "").strip()
    return HoldAt(AUDIT_STARTED, directory=directory) if directory else NO_FAULTS
