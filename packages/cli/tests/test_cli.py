"""The onceflow command: help, version, plugin subcommands and clear errors."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from onceflow.cli import app as cli_main
from onceflow.core.errors import InvalidConfig
from onceflow.testing.plugins import installed_entry_points

ONCEFLOW = Path(sys.executable).parent / "onceflow"


def test_help_lists_commands() -> None:
    result = subprocess.run([str(ONCEFLOW), "--help"], capture_output=True, text=True, timeout=60, check=True)
    assert "usage: onceflow" in result.stdout
    assert "version" in result.stdout


def test_version_lists_installed_packages() -> None:
    result = subprocess.run([str(ONCEFLOW), "version"], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.startswith("onceflow ")
    for name in ("onceflow-core", "onceflow-proto", "onceflow-cli"):
        assert name in result.stdout


def test_no_command_prints_help_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main.main([]) == 2
    assert "usage: onceflow" in capsys.readouterr().out


def test_domain_errors_become_a_clear_message_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def register(subparsers: Any) -> None:
        parser = subparsers.add_parser("boom")

        def run(args: argparse.Namespace) -> int:
            raise InvalidConfig("kafka.bootstrap_servers", "expected host:port")

        parser.set_defaults(func=run)

    build = cli_main.build_parser

    def build_with_boom() -> argparse.ArgumentParser:
        parser = build()
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        register(sub)
        return parser

    monkeypatch.setattr(cli_main, "build_parser", build_with_boom)
    assert cli_main.main(["boom"]) == 2
    err = capsys.readouterr().err
    assert "invalid setting 'kafka.bootstrap_servers'" in err
    assert "expected host:port" in err


def test_unknown_command_is_an_argparse_error() -> None:
    result = subprocess.run([str(ONCEFLOW), "frobnicate"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "invalid choice: 'frobnicate'" in result.stderr


def test_a_subcommand_with_its_own_log_level_flag_still_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """``onceflow broker`` defines ``--log-level`` (default None) too; that must not break logging."""
    ran: list[str] = []

    def build_with_flagged() -> argparse.ArgumentParser:
        parser = build()
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        flagged = sub.add_parser("flagged")
        flagged.add_argument("--log-level", default=None)
        flagged.set_defaults(func=run)
        return parser

    def run(args: argparse.Namespace) -> int:
        ran.append("yes")
        return 0

    build = cli_main.build_parser
    monkeypatch.setattr(cli_main, "build_parser", build_with_flagged)
    assert cli_main.main(["flagged"]) == 0
    assert ran == ["yes"]


def test_a_closed_pipe_ends_a_command_quietly() -> None:
    """``onceflow ipcount truth ... | head -1``: no BrokenPipeError traceback, the shell's 141."""
    result = subprocess.run(
        f"'{ONCEFLOW}' ipcount truth --seed 3 --count 200000 | head -n 1; echo \"status=${{PIPESTATUS[0]}}\"",
        shell=True, executable="/bin/bash", capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert "Traceback" not in result.stderr and "BrokenPipeError" not in result.stderr, result.stderr
    first, status = result.stdout.splitlines()[0], result.stdout.splitlines()[-1]
    assert first.strip()
    assert status in ("status=141", "status=0")


def test_a_broken_command_plugin_leaves_the_others(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plugins = {cli_main.ENTRY_POINT_GROUP: {"broken": "onceflow.nowhere:register", "text": "onceflow.cli.app:__doc__"}}
    with installed_entry_points(tmp_path, plugins):
        parser = cli_main.build_parser()
    err = capsys.readouterr().err
    assert "onceflow: warning: command 'broken' is unavailable: onceflow.cli entry point 'broken'" in err
    assert "No module named 'onceflow.nowhere'" in err
    assert "command 'text' is unavailable: onceflow.cli entry point 'text' (onceflow.cli.app:__doc__) is not" in err
    assert parser.parse_args(["version"]).func is not None
