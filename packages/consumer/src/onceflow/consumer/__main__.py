"""``python -m onceflow.consumer``: the consumer process (see :mod:`onceflow.consumer.cli.serve`)."""

import sys

from onceflow.consumer.cli.serve import main

sys.exit(main())
