"""``python -m onceflow.broker``: the broker process (see :mod:`onceflow.broker.command`)."""

import sys

from onceflow.broker.command import COMMAND

sys.exit(COMMAND.main("python -m onceflow.broker"))
