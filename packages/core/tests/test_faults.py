"""Fault injection: nothing by default, a crash (exit 137, the point logged) only at the named point."""

from __future__ import annotations

import subprocess
import sys

from onceflow.core.faults import CRASH_EXIT_CODE, NO_FAULTS, CrashAt, faults_from_env


def test_no_environment_means_no_faults() -> None:
    assert faults_from_env("ONCEFLOW_X", env={}) is NO_FAULTS
    assert faults_from_env("ONCEFLOW_X", env={"ONCEFLOW_X": "  "}) is NO_FAULTS
    NO_FAULTS.at("anything", txn="j:1")  # does nothing
    crash = faults_from_env("ONCEFLOW_X", point=lambda v: f"after:{v}", env={"ONCEFLOW_X": "4"})
    assert isinstance(crash, CrashAt) and crash.point == "after:4"
    crash.at("after:3")  # another point: nothing happens


def test_the_named_point_crashes_the_process_after_logging_it() -> None:
    code = (
        "from onceflow.core.logging import configure_logging\n"
        "from onceflow.core.faults import CrashAt\n"
        "configure_logging()\n"
        "faults = CrashAt('b', before_exit=lambda: print('before exit', flush=True))\n"
        "faults.at('a'); faults.at('b', txn='job:7'); print('alive')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == CRASH_EXIT_CODE
    assert "fault.crash point=b txn=job:7" in result.stderr
    assert result.stdout == "before exit\n"
