"""The ready-file services of the demo (consumer, coordinator, participant): command line and probe."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from onceflow.core.service import write_ready_file
from onceflow.demo.components.base import Context, ReadyFileComponent
from onceflow.demo.components.consumer import ConsumerComponent
from onceflow.demo.components.coordinator import CoordinatorComponent
from onceflow.demo.components.participant import ParticipantComponent
from onceflow.demo.run_dir import RunDir, RunState


@pytest.fixture
def context(tmp_path: Path) -> Context:
    run = RunDir(tmp_path / "run")
    state = RunState(run_id="r", seed=1, events=10, rate=1.0, event_time_start_ms=0, event_time_rate=1, trigger_ms=1000)
    return Context(run, run.create(state))


@pytest.mark.parametrize("kind", [ConsumerComponent, CoordinatorComponent, ParticipantComponent])
def test_serves_once_its_own_child_wrote_the_ready_file(kind: type[ReadyFileComponent], context: Context) -> None:
    component = kind(context)
    stale = component.ready_path
    stale.parent.mkdir(parents=True, exist_ok=True)
    write_ready_file(stale, {"port": 1})
    component.prepare()  # before every start: the config is written, a stale ready file removed
    assert not stale.exists()
    assert component.config_path.is_file()
    command = component.command()
    assert command[-5:] == [component.name, "--config", str(component.config_path), "--ready-file", str(stale)]
    child: Any = SimpleNamespace(pid=os.getpid())
    assert not component.probe(child)
    write_ready_file(component.ready_path, {"port": 1})
    assert component.probe(child)
    other: Any = SimpleNamespace(pid=os.getpid() + 1_000_000)
    assert not component.probe(other)  # another instance's file
