"""The run directory: a run is created once, resumed with its state, and keeps working ports."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from onceflow.core.errors import InvalidConfig
from onceflow.demo.options import DemoOptions
from onceflow.demo.run_dir import PORT_NAMES, RunDir, assign_ports


def test_create_then_load_gives_the_same_run(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    state = run.create(DemoOptions(events=1234, rate=500, seed=9).new_state("run"))
    assert set(state.ports) == set(PORT_NAMES)
    assert state.event_time_start_ms % 5000 == 0
    assert state.event_time_rate == 500
    loaded = RunDir(tmp_path / "run").load()
    assert loaded == state
    with pytest.raises(InvalidConfig, match="use --resume"):
        run.create(DemoOptions().new_state("again"))


def test_load_replaces_ports_taken_meanwhile(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    state = run.create(DemoOptions().new_state("run"))
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", state.ports["broker"]))
        squatter.listen()
        loaded = run.load()
    assert loaded.ports["broker"] != state.ports["broker"]
    assert run.load().ports["broker"] == loaded.ports["broker"]


def test_load_of_a_directory_without_a_run_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfig, match="holds no run"):
        RunDir(tmp_path).load()


def test_postgres_mode_follows_the_options() -> None:
    assert DemoOptions().new_state("r").postgres == "off"
    assert DemoOptions(postgres=True).new_state("r").postgres == "local"
    assert DemoOptions(postgres_dsn="host=db").new_state("r").postgres == "dsn"


def test_a_resumed_run_takes_a_new_pace_and_keeps_its_events(tmp_path: Path) -> None:
    """``--resume --rate N``: the stored pace changes; the seed, the event count and event time do not."""
    import io

    from onceflow.demo.runner import DemoRun

    created = DemoRun(DemoOptions(run_dir=tmp_path / "run", events=60_000, rate=1_000, seed=3)).prepare_run_dir()
    out = io.StringIO()
    resumed = DemoRun(DemoOptions(run_dir=tmp_path / "run", resume=True, rate=20_000, events=5), out)
    state = resumed.prepare_run_dir().state
    assert "pace: 20000 events/s (was 1000)" in out.getvalue()
    assert (state.rate, state.events, state.seed) == (20_000, 60_000, 3)
    assert state.event_time_start_ms == created.state.event_time_start_ms
    assert state.event_time_rate == created.state.event_time_rate == 1_000
    assert RunDir(tmp_path / "run").load().rate == 20_000
    again = DemoRun(DemoOptions(run_dir=tmp_path / "run", resume=True)).prepare_run_dir().state
    assert again.rate == 20_000, "a resume without --rate keeps the last pace"


def test_a_runs_ports_are_distinct_even_when_every_search_starts_at_the_same_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's services bind their ports only when they start, so a port picked for one must not be
    picked again for another: the broker and the participant once both got 17260, and the
    participant could not start."""
    # every search for a free port starts at the bottom of the range
    monkeypatch.setattr("onceflow.core.process.ports.random.randint", lambda first, last: first)
    run = RunDir(tmp_path / "run")
    state = run.create(DemoOptions().new_state("run"))
    assert len(set(state.ports.values())) == len(PORT_NAMES)
    assign_ports(state.ports, ["postgres"])
    assert len(set(state.ports.values())) == len(PORT_NAMES) + 1


def test_a_port_replaced_on_load_is_none_of_the_runs_other_ports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    run = RunDir(tmp_path / "run")
    state = run.create(DemoOptions().new_state("run"))
    lowest_other = min(port for name, port in state.ports.items() if name != "broker")
    monkeypatch.setattr("onceflow.core.process.ports.random.randint", lambda first, last: lowest_other)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", state.ports["broker"]))
        squatter.listen()
        loaded = run.load()
    assert loaded.ports["broker"] not in (state.ports["broker"], lowest_other)
    assert len(set(loaded.ports.values())) == len(PORT_NAMES)
