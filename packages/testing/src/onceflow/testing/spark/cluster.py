"""A real Spark standalone cluster from PySpark's own distribution: a master and workers, each its own JVM.

Nothing is downloaded: PySpark's wheel ships ``bin/spark-class`` and every jar a standalone cluster
needs. :class:`SparkMaster` and :class:`SparkWorker` are :class:`~onceflow.core.process.ServiceProcess`
launchers (``spark-class org.apache.spark.deploy.master.Master`` / ``...deploy.worker.Worker``), so
each starts, stops, ``kill -9``s and restarts like every other onceflow service; the executors a
worker launches (``CoarseGrainedExecutorBackend`` JVMs) and their Python workers stay in the worker's
session, so stopping a worker leaves nothing behind.

Every daemon binds 127.0.0.1 on free ports (port 0; the ports the master first took are kept across
its restarts; a restarted worker registers again as a new worker, as on a real cluster); the master's
REST submission server is off; every daemon, and every application, authenticates with one shared
secret (``spark.authenticate``): :attr:`SparkStandaloneCluster.client_conf` is what a driver adds to
its Spark settings. The daemons' heaps are capped (``SPARK_DAEMON_MEMORY``), the workers offer small
executors (``cores`` and ``memory`` each), and their work and local dirs live under the cluster's
work dir.

A worker is ready once the master reports it ALIVE (the master's ``/json/``, as its web UI shows it).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import secrets
import signal
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Self

from onceflow.core.process import ServiceProcess, session_members
from onceflow.core.service import Readiness
from onceflow.testing.jars import FAST_START_JVM_OPTIONS

#: The main class of an executor JVM (what ``ps`` shows for an executor).
EXECUTOR_MAIN = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
#: JVM options of the daemons and the executors: a fast start and little CPU on a small machine.
FAST_START_JAVA_OPTS = " ".join(FAST_START_JVM_OPTIONS)
_MASTER_URL = re.compile(r"Starting Spark master at spark://[^:\s]+:(\d+)")
_WEB_UI = re.compile(r"Bound (?:Master|Worker)WebUI to [^,]+, and started at http://[^:\s]+:(\d+)")
_WORKER_ADDRESS = re.compile(r"Starting Spark worker [^:\s]+:(\d+)")


def spark_home() -> Path:
    """PySpark's installed distribution (``bin/spark-class``, ``jars/``), found without importing PySpark."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("PySpark is not installed in this environment: run 'make setup'")
    home = Path(next(iter(spec.submodule_search_locations)))
    if not (home / "bin" / "spark-class").is_file():
        raise RuntimeError(f"{home} has no bin/spark-class: PySpark's distribution is incomplete")
    return home


class _SparkDaemon(ServiceProcess):
    """``spark-class MAIN ARGS`` in a session of its own, configured by a properties file and the env."""

    MAIN = ""
    NEW_SESSION = True
    READY_FILE = None
    READY_POLL_INTERVAL = 0.2

    def __init__(
        self,
        work_dir: Path,
        *,
        host: str,
        properties: Mapping[str, str],
        heap: str,
        startup_timeout: float,
    ) -> None:
        super().__init__(work_dir, startup_timeout=startup_timeout, stop_timeout=15.0)
        self.host = host
        self.properties = dict(properties)
        self.web_ui_port = 0
        conf_dir = self.work_dir / "conf"
        self.env.update(
            {
                "SPARK_HOME": str(spark_home()),
                # an empty conf dir: no spark-env.sh or spark-defaults.conf of the machine applies
                "SPARK_CONF_DIR": str(conf_dir),
                "SPARK_LOCAL_IP": host,
                "SPARK_DAEMON_MEMORY": heap,
                "SPARK_DAEMON_JAVA_OPTS": FAST_START_JAVA_OPTS,
            }
        )

    @property
    def properties_path(self) -> Path:
        return self.work_dir / "daemon.properties"

    def arguments(self) -> list[str]:
        raise NotImplementedError

    def command(self) -> Sequence[str]:
        (self.work_dir / "conf").mkdir(parents=True, exist_ok=True)
        # the shared secret is in this file: readable by its owner only
        descriptor = os.open(self.properties_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as properties:
            properties.writelines(f"{key}={value}\n" for key, value in self.properties.items())
        spark_class = spark_home() / "bin" / "spark-class"
        return [str(spark_class), self.MAIN, "--properties-file", str(self.properties_path), *self.arguments()]

    def _logged_port(self, pattern: re.Pattern[str]) -> int | None:
        match = pattern.search(self.log_since_start())
        return int(match.group(1)) if match else None


class SparkMaster(_SparkDaemon):
    """The standalone master. :attr:`url` is ``spark://127.0.0.1:PORT``; :meth:`state` is its ``/json/``."""

    NAME = "Spark master"
    LOG_FILE = "master.log"
    MAIN = "org.apache.spark.deploy.master.Master"

    def arguments(self) -> list[str]:
        return ["--host", self.host, "--port", str(self._port), "--webui-port", str(self.web_ui_port)]

    def probe_ready(self, pid: int) -> Readiness | None:
        log = self.log_since_start()
        if "New state: ALIVE" not in log:
            return None
        port, web_ui = self._logged_port(_MASTER_URL), self._logged_port(_WEB_UI)
        if port is None or web_ui is None:
            return None
        self.web_ui_port = web_ui
        return Readiness(port=port)

    @property
    def url(self) -> str:
        """The master URL drivers and workers connect to."""
        return f"spark://{self.host}:{self.port}"

    def state(self) -> dict[str, Any]:
        """The master's state as its web UI's ``/json/`` reports it: workers, applications, status."""
        with urllib.request.urlopen(f"http://{self.host}:{self.web_ui_port}/json/", timeout=5) as answer:
            return json.loads(answer.read())  # type: ignore[no-any-return]


class SparkWorker(_SparkDaemon):
    """A worker offering ``cores`` and ``memory`` to the master's applications.

    It is ready once the master lists it as ALIVE. Each start registers a new worker (a new port
    and id), as a worker restarted on a real node does.
    """

    NAME = "Spark worker"
    LOG_FILE = "worker.log"
    MAIN = "org.apache.spark.deploy.worker.Worker"

    def __init__(
        self,
        work_dir: Path,
        master: SparkMaster,
        *,
        cores: int,
        memory: str,
        properties: Mapping[str, str],
        heap: str,
        startup_timeout: float,
    ) -> None:
        super().__init__(work_dir, host=master.host, properties=properties, heap=heap, startup_timeout=startup_timeout)
        self.master = master
        self.cores = cores
        self.memory = memory
        self.env.update(
            {"SPARK_WORKER_DIR": str(self.work_dir / "work"), "SPARK_LOCAL_DIRS": str(self.work_dir / "local")}
        )

    def arguments(self) -> list[str]:
        return [
            "--host", self.host, "--port", "0", "--webui-port", "0",
            "--cores", str(self.cores), "--memory", self.memory,
            "--work-dir", str(self.work_dir / "work"),
            self.master.url,
        ]  # fmt: skip

    def probe_ready(self, pid: int) -> Readiness | None:
        port = self._logged_port(_WORKER_ADDRESS)
        if port is None or "Successfully registered with master" not in self.log_since_start():
            return None
        try:
            workers = self.master.state()["workers"]
        except (OSError, ValueError, KeyError):
            return None
        alive = any(w["state"] == "ALIVE" and w["host"] == self.host and w["port"] == port for w in workers)
        return Readiness(port=port) if alive else None

    @property
    def address(self) -> str:
        """``host:port`` of the running worker, as the master names it."""
        return f"{self.host}:{self.port}"

    def executor_pids(self) -> list[int]:
        """The executor JVMs this worker runs now (for every application)."""
        if not self.is_running():
            return []
        assert self.pid is not None
        return [pid for pid in session_members(self.pid) if pid != self.pid and EXECUTOR_MAIN in _command_line(pid)]

    def runs(self, pid: int) -> bool:
        """True if process ``pid`` (an executor or one of its Python workers) belongs to this worker."""
        return self.is_running() and pid in session_members(self.pid or 0)

    def executor_logs(self) -> str:
        """The stderr of every executor this worker launched (newest applications last)."""
        return "\n".join(
            f"--- {path} ---\n{path.read_text(errors='replace')[-8000:]}"
            for path in sorted((self.work_dir / "work").glob("app-*/*/stderr"))
        )


class SparkStandaloneCluster:
    """One master and ``workers`` workers on ``host``, under ``work_dir``.

    ``start()`` steps:
        1. Start the master; it is ready once it logs its URL, its web UI and ``ALIVE``.
        2. Spawn every worker at once, then wait until the master reports each one ALIVE.
    """

    def __init__(
        self,
        work_dir: Path,
        *,
        workers: int = 2,
        cores: int = 1,
        memory: str = "1g",
        host: str = "127.0.0.1",
        daemon_heap: str = "256m",
        startup_timeout: float = 120.0,
    ) -> None:
        self.work_dir = Path(work_dir)
        self.secret = secrets.token_hex(16)
        daemon = {
            "spark.authenticate": "true",
            "spark.authenticate.secret": self.secret,
            "spark.master.rest.enabled": "false",
            "spark.ui.killEnabled": "false",
            "spark.worker.cleanup.enabled": "false",
        }
        self.master = SparkMaster(
            self.work_dir / "master", host=host, properties=daemon, heap=daemon_heap, startup_timeout=startup_timeout
        )
        self.workers = [
            SparkWorker(
                self.work_dir / f"worker-{index}",
                self.master,
                cores=cores,
                memory=memory,
                properties=daemon,
                heap=daemon_heap,
                startup_timeout=startup_timeout,
            )
            for index in range(workers)
        ]
        self.executor_memory = "512m"

    @property
    def url(self) -> str:
        return self.master.url

    @property
    def client_conf(self) -> dict[str, str]:
        """Spark settings a driver of this cluster needs: the shared secret, small executors, fast JVMs."""
        return {
            "spark.authenticate": "true",
            "spark.authenticate.secret": self.secret,
            "spark.executor.cores": "1",
            "spark.executor.memory": self.executor_memory,
            "spark.executor.extraJavaOptions": FAST_START_JAVA_OPTS,
            "spark.driver.memory": "512m",
        }

    def start(self) -> Self:
        try:
            # Step 1
            self.master.start()
            # Step 2
            for worker in self.workers:
                worker.spawn()
            for worker in self.workers:
                worker.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the workers (and their executors), then the master."""
        for worker in self.workers:
            worker.stop()
        self.master.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def alive_workers(self) -> list[str]:
        """``host:port`` of every worker the master reports ALIVE."""
        return [f"{w['host']}:{w['port']}" for w in self.master.state()["workers"] if w["state"] == "ALIVE"]

    def ensure_workers(self) -> None:
        """Start every worker that is not running (e.g. after a test killed one) and wait until it is ALIVE."""
        for worker in self.workers:
            if not worker.is_running():
                worker.start()

    def executor_pids(self) -> list[int]:
        """Every executor JVM of every worker."""
        return [pid for worker in self.workers for pid in worker.executor_pids()]

    def worker_running(self, pid: int) -> SparkWorker:
        """The worker whose session holds process ``pid`` (an executor or one of its Python workers)."""
        for worker in self.workers:
            if worker.runs(pid):
                return worker
        raise LookupError(f"no worker of the cluster runs process {pid}")

    def executor_running(self, pid: int) -> int:
        """The executor JVM that process ``pid`` (a Python worker of a task) descends from."""
        current = pid
        while current > 1:
            if EXECUTOR_MAIN in _command_line(current):
                return current
            current = _parent(current)
        raise LookupError(f"process {pid} does not descend from an executor JVM")

    def wait_for(self, predicate: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
        """Poll ``predicate()`` until it is true, or fail naming ``what`` and the master's state."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} not within {timeout}s; master: {self.master.state()}")
            time.sleep(0.2)

    def logs(self) -> str:
        """The master's, the workers' and the executors' logs (tails), for a failing test's report."""
        parts = [f"--- master ---\n{self.master.log_tail(80)}"]
        for worker in self.workers:
            parts.append(f"--- {worker.work_dir.name} ---\n{worker.log_tail(80)}\n{worker.executor_logs()[-8000:]}")
        return "\n".join(parts)


def kill_process(pid: int) -> None:
    """``kill -9`` one process (an executor JVM, say), and wait until it is gone."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)


def process_alive(pid: int) -> bool:
    """True while process ``pid`` runs (a zombie is dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _parent(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat[stat.rindex(")") + 2 :].split()[1])
