"""Ports handed to services lie outside the kernel's ephemeral range, so a restarted service gets its port back."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from onceflow.core.process import ports
from onceflow.core.process.ports import DEFAULT_EPHEMERAL, LOWEST, ephemeral_range, free_port, free_ports


def test_a_free_port_is_below_the_ephemeral_range_and_bindable() -> None:
    low, _high = ephemeral_range()
    port = free_port()
    assert LOWEST <= port < low
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_free_ports_are_distinct_and_outside_the_ephemeral_range() -> None:
    low, high = ephemeral_range()
    found = free_ports(20)
    assert len(set(found)) == 20
    assert all(not low <= p <= high for p in found)


def test_a_port_already_bound_is_never_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        busy = taken.getsockname()[1]
        monkeypatch.setattr(ports, "_candidates", lambda: iter([busy, busy, *range(LOWEST, LOWEST + 50)]))
        assert free_port() != busy


def test_the_running_kernels_range_is_read_and_a_narrow_low_side_uses_the_high_side(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    range_file = tmp_path / "ip_local_port_range"
    range_file.write_text("20000\t50000\n")
    monkeypatch.setattr(ports, "_RANGE_FILE", range_file)
    assert ephemeral_range() == (20_000, 50_000)
    assert LOWEST <= free_port() < 20_000
    range_file.write_text("10500 60000\n")  # too few ports below: above it instead
    assert free_port() > 60_000


def test_an_unreadable_range_falls_back_to_linuxs_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ports, "_RANGE_FILE", tmp_path / "missing")
    assert ephemeral_range() == DEFAULT_EPHEMERAL
    (tmp_path / "garbage").write_text("not ports")
    monkeypatch.setattr(ports, "_RANGE_FILE", tmp_path / "garbage")
    assert ephemeral_range() == DEFAULT_EPHEMERAL
