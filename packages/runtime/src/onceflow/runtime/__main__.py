"""``python -m onceflow.runtime --config worker.toml [connector files]``: a connect worker process
(the same as ``onceflow connect-worker``, see :mod:`onceflow.runtime.command`)."""

import sys

from onceflow.runtime.command import COMMAND

sys.exit(COMMAND.main("python -m onceflow.runtime"))
