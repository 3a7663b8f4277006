"""``onceflow version``: the installed onceflow distributions and their versions."""

from __future__ import annotations

import argparse
import platform
from importlib.metadata import distributions
from typing import Any


def installed_versions() -> dict[str, str]:
    """{distribution name: version} of every installed ``onceflow-*`` distribution."""
    found = {}
    for dist in distributions():
        name = dist.metadata["Name"] or ""
        if name.startswith("onceflow-") and name != "onceflow-workspace":
            found[name] = dist.version
    return dict(sorted(found.items()))


def _run(args: argparse.Namespace) -> int:
    print(f"onceflow {installed_versions().get('onceflow-cli', 'unknown')} (Python {platform.python_version()})")
    for name, version in installed_versions().items():
        print(f"  {name} {version}")
    return 0


def add_version_command(subparsers: Any) -> None:
    """Add ``onceflow version``."""
    parser = subparsers.add_parser("version", help="print the installed onceflow packages and versions")
    parser.set_defaults(func=_run)
