"""``python -m onceflow.sinks --config FILE``: the participant server without the ``onceflow`` command."""

from __future__ import annotations

import argparse
import sys

from onceflow.sinks.cli import add_arguments, main


def _main() -> int:
    parser = argparse.ArgumentParser(prog="python -m onceflow.sinks", description="onceflow sink participant server")
    add_arguments(parser)
    return main(parser.parse_args())


if __name__ == "__main__":
    sys.exit(_main())
