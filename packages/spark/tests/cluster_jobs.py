"""A job file outside every ``sys.path`` with a hold point, so that a test's kill -9 lands in a batch.

:func:`write_job_files` writes two files into folders of their own, as a user's job would be:

- ``held_ip_count.py``, the job file given as the entry point (``path/held_ip_count.py:job``): the
  IP-count job whose output goes through ``HoldBeforeWrite`` (a ``mapInArrow`` function of this
  module, so every executor must import the module: onceflow ships it with ``addPyFile``);
- ``hold_marks.py``, a helper module the job file imports, listed in ``spark.submit.pyFiles`` (the
  way a Spark user ships the modules of an application).

:class:`Hold` arms the hold point (a :class:`~onceflow.testing.faults.HoldAt` in the executors'
Python workers). While it is armed, every write task of the job that has rows to write writes a mark
(its pid, batch, partition, attempt, and where its Python worker imported the two modules from) and
waits until the hold is released; a task attempt after the release writes through. The test kills
a process while tasks wait, so the kill lands after the batch's state was read and before any of its
rows were staged.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onceflow.testing.faults import HoldAt

JOB_FILE = '''"""The IP-count job, held before it writes while a test's hold is armed (a test fixture)."""

from hold_marks import hold_if_armed

from onceflow.ipcount.job import count_per_window


class HoldBeforeWrite:
    """mapInArrow function: holds a task that has rows to write while the hold is armed."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def __call__(self, batches):
        batches = list(batches)
        if any(batch.num_rows for batch in batches):
            hold_if_armed(self.folder, job_module=__file__)
        yield from batches


def job(context):
    counts = count_per_window(context, context.access_events(["event_time_ms", "ip"]))
    return counts.mapInArrow(HoldBeforeWrite(context.params["hold_dir"]), counts.schema)
'''

HELPER_FILE = '''"""Marks and holds of a test's write tasks (shipped with spark.submit.pyFiles)."""

import json
import os
from pathlib import Path

from pyspark import TaskContext

from onceflow.testing.faults import HoldAt


def hold_if_armed(folder, *, job_module):
    try:
        directory = (Path(folder) / "armed").read_text()
    except FileNotFoundError:
        return
    task = TaskContext.get()
    mark = {
        "pid": os.getpid(),
        "batch": int(task.getLocalProperty("streaming.sql.batchId")),
        "partition": task.partitionId(),
        "attempt": task.attemptNumber(),
        "job_module": job_module,
        "helper_module": __file__,
    }
    name = f"mark-{mark['batch']}-{mark['partition']}-{mark['attempt']}-{mark['pid']}.json"
    temporary = Path(directory) / f".{name}"
    temporary.write_text(json.dumps(mark))
    temporary.rename(Path(directory) / name)
    HoldAt("write", directory=directory).at("write")
'''


@dataclass(frozen=True)
class JobFiles:
    job: Path
    helper: Path

    @property
    def entrypoint(self) -> str:
        return f"{self.job}:job"


def write_job_files(root: Path) -> JobFiles:
    """The job file and its helper, each in a folder of its own under ``root`` (on no ``sys.path``)."""
    (root / "jobs").mkdir(parents=True)
    (root / "lib").mkdir(parents=True)
    job = root / "jobs" / "held_ip_count.py"
    helper = root / "lib" / "hold_marks.py"
    job.write_text(JOB_FILE)
    helper.write_text(HELPER_FILE)
    return JobFiles(job, helper)


class Hold:
    """The hold point of the job's write tasks under ``folder`` (``params.hold_dir`` of the job).

    Each :meth:`arm` is a fresh :class:`~onceflow.testing.faults.HoldAt` whose directory the tasks
    find in ``folder/armed``; a held task's mark (its pid, batch, partition, attempt, and the files its
    Python worker imported) lies next to HoldAt's own marker.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._hold: HoldAt | None = None

    def arm(self) -> None:
        """Hold the next write tasks that have rows to write."""
        self._hold = HoldAt("write", directory=tempfile.mkdtemp(prefix="hold-", dir=self.folder))
        (self.folder / "armed").write_text(self._hold.directory)

    def release(self) -> None:
        """Let the held tasks go on, and every later one pass."""
        (self.folder / "armed").unlink(missing_ok=True)
        if self._hold is not None:
            self._hold.release()

    def wait_for_mark(self, timeout: float, alive: Callable[[], bool]) -> dict[str, Any]:
        """The mark of the first task held since :meth:`arm`; ``alive()`` False (the driver died) fails at once."""
        hold = self._hold
        assert hold is not None, "the hold is not armed"
        deadline = time.monotonic() + timeout
        while hold.held() == 0:
            if not alive():
                raise AssertionError("the driver exited before any write task was held")
            if time.monotonic() > deadline:
                raise AssertionError(f"no write task was held within {timeout}s")
            time.sleep(0.1)
        marks = sorted(Path(hold.directory).glob("mark-*.json"))
        return dict(json.loads(marks[0].read_text()))
