"""``onceflow demo`` as a child process for the end-to-end tests: run it, read its plain output, stop it."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from onceflow.demo.components.postgres import fallback_base

ONCEFLOW = Path(sys.executable).parent / "onceflow"
PRODUCED = re.compile(r" events=(\d+)")
CHAOS_LINE = re.compile(r"^chaos: (\d+) kills: (\{.*\})$", re.MULTILINE)


class DemoProcess:
    """One ``onceflow demo --plain`` invocation; stdout and stderr are collected line by line."""

    def __init__(self, run_dir: Path, *args: str) -> None:
        self.run_dir = run_dir
        self.lines: list[str] = []
        #: When each line arrived (time.monotonic()).
        self.arrivals: list[float] = []
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            [str(ONCEFLOW), "demo", "--plain", "--run-dir", str(run_dir), *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.arrivals.append(time.monotonic())
            self.lines.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def produced(self) -> int:
        """Events produced according to the last progress line (0 before the first)."""
        for line in reversed(self.lines):
            match = PRODUCED.search(line)
            if match:
                return int(match.group(1))
        return 0

    def wait(self, timeout: float) -> int:
        """Wait for the demo to exit; on timeout interrupt it (it stops its services) and fail."""
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.interrupt()
            self.process.wait(120)
            raise AssertionError(f"demo did not finish within {timeout}s:\n{self.tail()}") from None
        self._reader.join(10)
        return code

    def interrupt(self) -> None:
        """Ctrl-C."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGINT)

    def stop(self, timeout: float = 180) -> None:
        """If it still runs: Ctrl-C (it stops its services), and kill -9 everything if that takes too long."""
        if self.process.poll() is None:
            self.interrupt()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill_everything()

    def kill_everything(self) -> None:
        """Last resort after a failed test: kill -9 the demo's session (its services have their own)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(30)

    def tail(self, lines: int = 80) -> str:
        text = "\n".join(self.lines[-lines:])
        demo_log = self.run_dir / "logs" / "demo.log"
        if demo_log.exists():
            text += "\n--- demo.log ---\n" + "\n".join(demo_log.read_text(errors="replace").splitlines()[-40:])
        return text

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def remove_postgres_fallback(self) -> None:
        """Delete the PostgreSQL data the demo kept under the temp dir (pytest's run dirs are 0700,
        out of reach of the ``postgres`` user the server runs as)."""
        shutil.rmtree(fallback_base(self.run_dir / "data" / "postgres"), ignore_errors=True)


def verdicts(output: str) -> dict[str, str]:
    """The verdict block at the end: sink -> EXACT/DIFFERENT (``overall`` included)."""
    block = output.rsplit("== verdict", 1)
    if len(block) < 2:
        return {}
    result: dict[str, str] = {}
    for line in block[1].splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1] in ("EXACT", "DIFFERENT"):
            result[parts[0]] = parts[1]
    return result
