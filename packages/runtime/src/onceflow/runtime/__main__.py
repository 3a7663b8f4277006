"""``python -m onceflow.runtime --config worker.toml [connector files]``: a connect worker process
(the same as ``onceflow connect-worker``, without loading the other CLI plugins)."""

from __future__ import annotations

import argparse
import sys

from onceflow.runtime.cli.worker_command import add_arguments, run


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m onceflow.runtime")
    add_arguments(parser)
    return run(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
