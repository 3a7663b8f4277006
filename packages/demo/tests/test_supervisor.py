"""The supervisor with real child processes: restarts after crashes, kill -9 of whole sessions, readiness."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from onceflow.demo.supervisor import (
    ChildProcess,
    EventKind,
    RestartPolicy,
    ServiceFailedError,
    ServiceState,
    SupervisedService,
    Supervisor,
    session_members,
)


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def ready_after_start(child: ChildProcess) -> bool:
    return "ready" in child.log_since_start()


SERVE = "import time; print('ready', flush=True); time.sleep(600)"


def service(tmp_path: Path, name: str, code: str, policy: RestartPolicy | None = None) -> SupervisedService:
    child = ChildProcess(name, python(code), tmp_path / f"{name}.log")
    return SupervisedService(child, ready_after_start, policy or RestartPolicy(delay_s=0.2))


def wait_for(predicate: object, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


@pytest.fixture
def supervisor() -> object:
    sup = Supervisor(tick_s=0.05)
    yield sup
    sup.stop(timeout=5)


def test_a_service_becomes_ready_and_is_stopped_gracefully(tmp_path: Path, supervisor: Supervisor) -> None:
    supervisor.add(service(tmp_path, "a", SERVE))
    supervisor.watch()
    supervisor.start("a")
    supervisor.wait_ready("a", 20)
    pid = supervisor.service("a").child.pid
    assert pid is not None
    supervisor.stop(timeout=5)
    assert supervisor.states()["a"] is ServiceState.STOPPED
    assert session_members(pid) == []
    kinds = [e.kind for e in supervisor.journal.all()]
    assert kinds == [EventKind.STARTED, EventKind.READY, EventKind.STOPPED]


def test_a_killed_service_is_restarted_after_the_delay_and_recovers(tmp_path: Path, supervisor: Supervisor) -> None:
    supervisor.add(service(tmp_path, "a", SERVE, RestartPolicy(delay_s=0.5)))
    supervisor.watch()
    supervisor.start("a")
    supervisor.wait_ready("a", 20)
    first = supervisor.service("a").child.pid
    killed_at = time.monotonic()
    assert supervisor.kill("a") == first
    wait_for(lambda: supervisor.journal.counts[EventKind.RECOVERED] == 1)
    assert time.monotonic() - killed_at >= 0.5
    assert supervisor.service("a").child.pid != first
    assert supervisor.service("a").restarts == 1
    events = [(e.kind, e.exit_code) for e in supervisor.journal.all()]
    assert (EventKind.KILLED, None) in events
    assert (EventKind.EXITED, -9) in events
    assert events[-1][0] is EventKind.RECOVERED


def test_a_crashing_service_is_restarted_and_its_exit_code_logged(tmp_path: Path, supervisor: Supervisor) -> None:
    marker = tmp_path / "crashed-once"
    code = (
        f"import os, sys, time; m = {str(marker)!r}\n"
        "if not os.path.exists(m): open(m, 'w').close(); sys.exit(3)\n"
        "print('ready', flush=True); time.sleep(600)"
    )
    supervisor.add(service(tmp_path, "a", code))
    supervisor.watch()
    supervisor.start("a")
    supervisor.wait_ready("a", 20)
    exits = [e for e in supervisor.journal.all() if e.kind is EventKind.EXITED]
    assert [e.exit_code for e in exits] == [3]
    # Ready for the first time after a crash during start-up: READY, not RECOVERED.
    assert supervisor.journal.counts[EventKind.READY] == 1


def test_kill_takes_the_whole_session_down(tmp_path: Path, supervisor: Supervisor) -> None:
    """A grandchild in a process group of its own (like Spark's Python daemon) dies with the service."""
    pid_file = tmp_path / "grandchild.pid"
    code = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], process_group=0)\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        "print('ready', flush=True); time.sleep(600)"
    )
    supervisor.add(service(tmp_path, "a", code, RestartPolicy(delay_s=60)))
    supervisor.watch()
    supervisor.start("a")
    supervisor.wait_ready("a", 20)
    grandchild = int(pid_file.read_text())
    supervisor.kill("a")
    wait_for(lambda: not os.path.exists(f"/proc/{grandchild}") or _zombie(grandchild))


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] == "Z"


def test_a_service_is_given_up_after_its_restarts(tmp_path: Path, supervisor: Supervisor) -> None:
    supervisor.add(service(tmp_path, "a", "import sys; print('boom'); sys.exit(7)", RestartPolicy(0.05, 2)))
    supervisor.watch()
    supervisor.start("a")
    with pytest.raises(ServiceFailedError, match="given up") as failure:
        supervisor.wait_ready("a", 20)
    assert "boom" in str(failure.value)
    assert supervisor.service("a").restarts == 2
    assert supervisor.journal.counts[EventKind.GAVE_UP] == 1


def test_wait_ready_times_out_with_the_log_tail(tmp_path: Path, supervisor: Supervisor) -> None:
    supervisor.add(service(tmp_path, "a", "import time; print('still warming up', flush=True); time.sleep(600)"))
    supervisor.watch()
    supervisor.start("a")
    with pytest.raises(ServiceFailedError, match="not ready within") as failure:
        supervisor.wait_ready("a", 1)
    assert "still warming up" in str(failure.value)


def test_restart_policy_rules() -> None:
    assert RestartPolicy(1.0, None).allows(10_000)
    assert RestartPolicy(1.0, 2).allows(1)
    assert not RestartPolicy(1.0, 2).allows(2)
    with pytest.raises(ValueError):
        RestartPolicy(-1)
