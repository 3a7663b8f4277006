"""``python -m onceflow.spark``: the same as ``onceflow spark run`` (see :mod:`onceflow.spark.runner.cli`)."""

import argparse
import sys

from onceflow.spark.runner.cli import add_arguments, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m onceflow.spark")
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
