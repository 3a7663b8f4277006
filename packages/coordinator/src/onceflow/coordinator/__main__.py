"""``python -m onceflow.coordinator``: the coordinator process (see :mod:`onceflow.coordinator.cli.serve`)."""

import sys

from onceflow.coordinator.cli.serve import main

sys.exit(main())
