"""``python -m onceflow.runtime --config worker.toml [connector files]``: a connect worker process
(the same as ``onceflow connect-worker``, without loading the other CLI plugins)."""

from __future__ import annotations

import argparse
import sys

from onceflow.core.errors import OnceflowError
from onceflow.runtime.cli.worker_command import add_arguments, run


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m onceflow.runtime")
    add_arguments(parser)
    try:
        return run(parser.parse_args())
    except OnceflowError as exc:
        print(f"onceflow connect-worker: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
