"""``python -m onceflow.testing.consumer.held_audits``: ``onceflow consumer`` whose audits are held at
their start (:class:`~onceflow.testing.faults.HoldAt` on the directory ``HOLD_DIR_ENV`` names), for tests
of a consumer process in the middle of an audit that must not depend on the machine's speed."""

from __future__ import annotations

import dataclasses
import os
from typing import Final

from onceflow.consumer.audit.bounded import AUDIT_STARTED
from onceflow.consumer.command import COMMAND
from onceflow.consumer.service import ConsumerService
from onceflow.consumer.settings import ConsumerSettings
from onceflow.testing.faults import HoldAt

#: The environment variable naming the hold's directory (:attr:`HoldAt.directory`).
HOLD_DIR_ENV: Final = "ONCEFLOW_TEST_AUDIT_HOLD_DIR"


def held_consumer(settings: ConsumerSettings) -> ConsumerService:
    """The consumer service, its audits held at their start."""
    return ConsumerService(settings, faults=HoldAt(AUDIT_STARTED, directory=os.environ[HOLD_DIR_ENV]))


if __name__ == "__main__":
    held = dataclasses.replace(COMMAND, service="onceflow.testing.consumer.held_audits:held_consumer")
    raise SystemExit(held.main("python -m onceflow.testing.consumer.held_audits"))
