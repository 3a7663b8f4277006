"""``python -m onceflow.spark``: the same as ``onceflow spark run`` (see :mod:`onceflow.spark.command`)."""

import sys

from onceflow.spark.command import COMMAND

if __name__ == "__main__":
    sys.exit(COMMAND.main("python -m onceflow.spark"))
