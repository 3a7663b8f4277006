"""``python -m onceflow.coordinator``: the coordinator process (see :mod:`onceflow.coordinator.command`)."""

import sys

from onceflow.coordinator.command import COMMAND

sys.exit(COMMAND.main("python -m onceflow.coordinator"))
