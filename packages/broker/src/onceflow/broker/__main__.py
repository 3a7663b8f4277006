"""``python -m onceflow.broker``: the broker process (see :mod:`onceflow.broker.cli`)."""

import sys

from onceflow.broker.cli import main

sys.exit(main())
