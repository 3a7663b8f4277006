"""``python -m onceflow.consumer``: the consumer process (see :mod:`onceflow.consumer.command`)."""

import sys

from onceflow.consumer.command import COMMAND

sys.exit(COMMAND.main("python -m onceflow.consumer"))
