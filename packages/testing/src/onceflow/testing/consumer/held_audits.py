"""``python -m onceflow.testing.consumer.held_audits``: ``onceflow consumer`` whose audits are held at
their start (:class:`~onceflow.testing.faults.HoldAt` on the directory ``HOLD_DIR_ENV`` names), for tests
of a consumer process in the middle of an audit that must not depend on the machine's speed."""

from __future__ import annotations

import argparse
import os
from typing import Final

from onceflow.consumer.audit.bounded import AUDIT_STARTED
from onceflow.consumer.cli.serve import add_arguments
from onceflow.consumer.service import ConsumerService
from onceflow.consumer.settings import ConsumerSettings
from onceflow.core.service import run_service
from onceflow.core.settings import load_settings
from onceflow.testing.faults import HoldAt

#: The environment variable naming the hold's directory (:attr:`HoldAt.directory`).
HOLD_DIR_ENV: Final = "ONCEFLOW_TEST_AUDIT_HOLD_DIR"


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m onceflow.testing.consumer.held_audits", description=__doc__)
    add_arguments(parser)
    args = parser.parse_args()
    hold = HoldAt(AUDIT_STARTED, directory=os.environ[HOLD_DIR_ENV])
    return run_service(
        "consumer",
        lambda: load_settings(ConsumerSettings, args.config),
        lambda settings: ConsumerService(settings, faults=hold),
        ready_file=args.ready_file,
    )


if __name__ == "__main__":
    raise SystemExit(main())
