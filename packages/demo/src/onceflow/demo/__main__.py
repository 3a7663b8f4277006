"""``python -m onceflow.demo``: the same as ``onceflow demo``."""

import argparse
import sys

from onceflow.demo.cli import add_arguments, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m onceflow.demo")
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
