"""``python -m onceflow.sinks``: the participant process (see :mod:`onceflow.sinks.command`)."""

import sys

from onceflow.sinks.command import COMMAND

sys.exit(COMMAND.main("python -m onceflow.sinks"))
