"""CPU seconds of named process trees, from ``/proc``: a measure the machine's load does not change.

On a shared machine wall-clock rates move with the load average; the CPU a process spends on a fixed
amount of work barely does. :class:`CpuMeter` follows the process trees of named components (the
Spark JVM and its Python workers, the broker, the coordinator, a participant, PostgreSQL and its
backends) and reports the user + system seconds each spent between two snapshots.

A snapshot sums, over every live process of a tree, its own time plus the time of its children that
exited and were reaped (``cutime`` + ``cstime``): a Python worker or PostgreSQL backend that ends
between two snapshots is counted through its parent. Time of a process that exits while being
counted in a snapshot and is reaped by a parent outside the tree is lost; no component here does
that.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """``(parent pid, own + reaped children's CPU seconds)`` of ``pid``, or None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after its last ')'
    fields = raw[raw.rindex(")") + 2 :].split()
    parent = int(fields[1])
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return parent, (utime + stime + cutime + cstime) / _TICK


def _processes() -> dict[int, tuple[int, float]]:
    found: dict[int, tuple[int, float]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None:
                found[int(entry)] = stat
    return found


def children(parent: int) -> list[int]:
    """The live processes whose parent is ``parent``."""
    return [pid for pid, (ppid, _) in _processes().items() if ppid == parent]


def tree_cpu(root: int, processes: Mapping[int, tuple[int, float]]) -> float:
    """CPU seconds of ``root`` and every live descendant (each with its reaped children)."""
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in processes.items():
        children.setdefault(parent, []).append(pid)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        if pid in processes:
            total += processes[pid][1]
        todo.extend(children.get(pid, ()))
    return total


@dataclass
class CpuMeter:
    """CPU seconds per component between :meth:`start` and :meth:`stop`.

    Components are named process roots; a root is a callable so a process that starts later (a
    Flink job's JVM, a restarted service) is found when the snapshot is taken. This process's own
    threads are not a component: :func:`own_threads_cpu` measures them (its children are counted
    through their own roots), and :func:`reaped_children_cpu` the children it has reaped.
    """

    roots: dict[str, Callable[[], int | None]] = field(default_factory=dict)
    _before: dict[str, float] = field(default_factory=dict)

    def add(self, name: str, root: int | Callable[[], int | None] | None) -> None:
        if root is None:
            return
        self.roots[name] = root if callable(root) else partial(int, root)

    def snapshot(self) -> dict[str, float]:
        processes = _processes()
        taken: dict[str, float] = {}
        for name, root in self.roots.items():
            pid = root()
            taken[name] = tree_cpu(pid, processes) if pid is not None else 0.0
        return taken

    def start(self) -> None:
        self._before = self.snapshot()

    def stop(self) -> dict[str, float]:
        """CPU seconds of each component since :meth:`start` (a component first seen now counts from 0)."""
        after = self.snapshot()
        return {name: max(0.0, after[name] - self._before.get(name, 0.0)) for name in after}


def own_threads_cpu() -> float:
    """CPU seconds of this process alone (its threads, not its children)."""
    times = os.times()
    return times.user + times.system


def reaped_children_cpu() -> float:
    """CPU seconds of this process's children that have exited and been reaped (a child that runs on
    is not in it)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def postmaster_pid(data_dir: Path) -> int | None:
    """The PostgreSQL server's pid from ``postmaster.pid`` (its backends are its children)."""
    try:
        return int((data_dir / "postmaster.pid").read_text().split()[0])
    except (OSError, IndexError, ValueError):
        return None


def format_cpu(cpu: Mapping[str, float], events: int) -> str:
    """``name µs/event`` for every component and the total."""
    parts = [f"{name} {seconds / events * 1e6:.1f}" for name, seconds in sorted(cpu.items())]
    parts.append(f"total {sum(cpu.values()) / events * 1e6:.1f}")
    return "CPU µs/event: " + ", ".join(parts)
