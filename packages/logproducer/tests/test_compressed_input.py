"""A compressed access log named on the command line (a rotated ``access.log.2.gz``) is refused with
what to do, by ``onceflow demo --input`` and ``onceflow audit --input``, before anything starts;
plain text, even text that begins like a compression header, is read as ever."""

from __future__ import annotations

import bz2
import gzip
import lzma
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from onceflow.logproducer.compressed import compressed_input_reason

ONCEFLOW = Path(sys.executable).parent / "onceflow"
LINE = b'10.0.0.7 - - [22/Nov/2026:14:30:01 +0000] "GET / HTTP/1.1" 200 612 "-" "curl/8.5.0"\n'
ZSTD_FRAME = b"\x28\xb5\x2f\xfd" + b"\x00" * 12  # the frame magic, then what a real frame header would hold

COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.compress,
    "bzip2": bz2.compress,
    "xz": lzma.compress,
    "zstd": lambda data: ZSTD_FRAME,
}
TOOLS = {"gzip": "zcat", "bzip2": "bzcat", "xz": "xzcat", "zstd": "zstdcat"}


@pytest.mark.parametrize("kind", COMPRESSORS)
def test_a_compressed_file_is_named_with_its_format_and_the_way_out(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "access.log.2"
    path.write_bytes(COMPRESSORS[kind](LINE * 100))
    reason = compressed_input_reason(path)
    assert reason is not None
    assert f"{path} is {kind}-compressed" in reason
    assert f"{TOOLS[kind]} {path}" in reason


@pytest.mark.parametrize(
    "content", [LINE, b"BZh9 not bzip2, a log line\n", b"\x1f\x8b", b"", b"\xff\xfe garbage"], ids=repr
)
def test_anything_else_is_left_to_the_parser(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "access.log"
    path.write_bytes(content)
    assert compressed_input_reason(path) is None


def test_a_file_that_cannot_be_read_is_left_to_the_reader(tmp_path: Path) -> None:
    assert compressed_input_reason(tmp_path / "missing.log") is None
    assert compressed_input_reason(tmp_path) is None  # a directory


@pytest.mark.parametrize(
    "command",
    [
        ["demo", "--plain", "--run-dir", "{run}", "--input", "{log}"],
        ["audit", "--input", "{log}", "--bootstrap-servers", "127.0.0.1:1"],
    ],
    ids=["demo", "audit"],
)
def test_the_commands_refuse_a_gzip_file_before_starting_anything(tmp_path: Path, command: list[str]) -> None:
    log, run = tmp_path / "access.log.2.gz", tmp_path / "run"
    log.write_bytes(gzip.compress(LINE * 100))
    args = [part.format(log=log, run=run) for part in command]
    done = subprocess.run([str(ONCEFLOW), *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "--input" in done.stderr and "gzip-compressed" in done.stderr and f"zcat {log}" in done.stderr
    assert not run.exists()
