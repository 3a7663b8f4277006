"""ServiceProcess: one service run as a real child process, for tests, benchmarks and the demo.

Every launcher of a onceflow service (coordinator, consumer, participant, broker, connect worker,
Spark driver, the demo's supervised children) and of Apache Kafka is a subclass that describes its
service in a few lines: the command (:meth:`ServiceProcess.command`), the settings written as its
TOML config file (:meth:`ServiceProcess.config_settings`) and when it serves (:meth:`ServiceProcess.probe_ready`,
by default the ready file the service writes).

Guarantees:

- ``start()`` returns only once the child serves, or raises :class:`ServiceStartError` naming the
  command, the exit code and the tail of the log, and leaves no child behind;
- the child is a real process, so ``kill()`` is a real ``kill -9`` (of its whole session when
  :attr:`ServiceProcess.NEW_SESSION`: a driver's JVM and workers die with it);
- ``start()`` after ``stop()``/``kill()`` rewrites the same config with the port the first instance
  served on, so clients that kept the address reach the restarted service;
- the child's stderr (and stdout unless :attr:`ServiceProcess.STDOUT_TO_LOG` is False) is appended to
  :attr:`ServiceProcess.log_path`; :meth:`ServiceProcess.log_since_start` is the current instance's part.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from onceflow.core.process.session import kill_session
from onceflow.core.service.ready_file import Readiness, read_ready_file
from onceflow.core.toml_writer import to_toml


class ServiceStartError(RuntimeError):
    """A child service exited, or did not become ready in time, during start-up."""


class ServiceProcess:
    """One service as a child process in ``work_dir`` (config file, ready file and, by default, log).

    Subclasses fill in :meth:`command`, and may fill in :meth:`config_settings` (settings for the TOML config
    file) and :meth:`probe_ready` (when the child serves). ``port`` 0 means "not known yet": the port
    the first instance reports becomes the port of every restart.

    ``start()`` steps:
        1. Refuse if an instance runs; SIGKILL what is left of the last instance's session.
        2. Write the config file (:meth:`config_settings` as TOML) and delete a stale ready file.
        3. Spawn :meth:`command` with ``env`` on top of this environment, output appended to the log;
           remember where the log stood (:meth:`log_since_start`).
        4. Wait until :meth:`probe_ready` reports the port; an exit or a timeout on the way kills
           the child and raises :class:`ServiceStartError` with the command and the log tail.
    """

    NAME = "service"
    """Names the service in errors (and is the default :attr:`name`)."""
    LOG_FILE = "service.log"
    CONFIG_FILE: str | None = None
    """File name of the config in ``work_dir``; None: the service takes no config file from here."""
    READY_FILE: str | None = "ready.json"
    """File name of the ready file in ``work_dir``; None: the service writes none."""
    STDOUT_TO_LOG = True
    """False: the child's stdout is discarded (it only repeats what its log says)."""
    NEW_SESSION = False
    """True: the child runs in a session of its own, and kill/stop/wait SIGKILL the whole session."""
    READY_POLL_INTERVAL = 0.05

    def __init__(
        self,
        work_dir: Path,
        *,
        port: int = 0,
        name: str | None = None,
        log_path: Path | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        startup_timeout: float = 60.0,
        stop_timeout: float = 10.0,
    ) -> None:
        self.work_dir = Path(work_dir)
        self.name = name or self.NAME
        self.env: dict[str, str] = dict(env or {})
        self.cwd = cwd
        self.metrics_port = 0
        self.starts = 0
        """How many instances were spawned."""
        self._port = port
        self._log_path = log_path
        self._startup_timeout = startup_timeout
        self._stop_timeout = stop_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._log_offset = 0
        self._command_line: list[str] = []

    # -- what a subclass describes ------------------------------------------------------------

    def command(self) -> Sequence[str]:
        """The command line of the service (may prepare files in ``work_dir`` first)."""
        raise NotImplementedError(f"{type(self).__name__} does not say which command runs the {self.name}")

    def config_settings(self) -> Mapping[str, Any] | None:
        """The settings of the next instance, written as TOML to :attr:`config_path`; None: no file."""
        return None

    def probe_ready(self, pid: int) -> Readiness | None:
        """Where child ``pid`` serves once it is ready, None while it is not yet.

        By default: what it wrote to the ready file; a service without one is ready once spawned.
        """
        if self.ready_path is None:
            return Readiness(port=self._port)
        return read_ready_file(self.ready_path, pid)

    # -- where things are ---------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The serving port (known after the first ready start when created with port 0)."""
        if self._port == 0:
            raise RuntimeError(f"{self.name} has not been started yet: its port is unknown")
        return self._port

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        """The last instance spawned (running or exited), None before the first start."""
        return self._process

    @property
    def pid(self) -> int | None:
        """Process id of the last instance, None before the first start."""
        return self._process.pid if self._process is not None else None

    @property
    def log_path(self) -> Path:
        """File that receives the child's output."""
        return self._log_path if self._log_path is not None else self.work_dir / self.LOG_FILE

    @property
    def config_path(self) -> Path | None:
        return self.work_dir / self.CONFIG_FILE if self.CONFIG_FILE is not None else None

    @property
    def ready_path(self) -> Path | None:
        return self.work_dir / self.READY_FILE if self.READY_FILE is not None else None

    @property
    def returncode(self) -> int | None:
        """Exit code of the last instance (None while it runs or before the first start)."""
        return self.poll()

    def poll(self) -> int | None:
        """The exit code once the last instance has exited, else None."""
        return self._process.poll() if self._process is not None else None

    def is_running(self) -> bool:
        """True while the last instance is alive."""
        return self._process is not None and self._process.poll() is None

    def is_ready(self) -> bool:
        """True once the running instance serves."""
        return self.is_running() and self._probe() is not None

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self, *, wait: bool = True) -> Self:
        """Spawn the child; with ``wait``, return once it serves (see the class docstring's steps)."""
        self.spawn()
        if wait:
            # Step 4
            try:
                self.wait_ready()
            except ServiceStartError:
                self.kill()
                raise
        return self

    def spawn(self) -> int:
        """Steps 1-3 of ``start()``: spawn the child without waiting for it; returns its pid."""
        # Step 1
        if self.is_running():
            raise RuntimeError(f"{self.name} already running with pid {self.pid}")
        self.reap_session()
        # Step 2
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        settings = self.config_settings()
        if settings is not None and self.config_path is not None:
            self.config_path.write_text(to_toml(settings))
        if self.ready_path is not None:
            self.ready_path.unlink(missing_ok=True)
        # Step 3
        command = self._command_line = [str(part) for part in self.command()]
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with self.log_path.open("ab") as log_file:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log_file if self.STDOUT_TO_LOG else subprocess.DEVNULL,
                stderr=log_file,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
                cwd=self.cwd,
                start_new_session=self.NEW_SESSION,
            )
        self.starts += 1
        return self._process.pid

    def wait_ready(self, timeout: float | None = None) -> int:
        """Wait until the running instance serves and return its port.

        Raises :class:`ServiceStartError` (command, exit code, log tail) if it exits first or is not
        ready within ``timeout`` (default: the startup timeout); a timeout leaves the child running.
        """
        process = self._process
        if process is None:
            raise RuntimeError(f"{self.name} is not running")
        limit = self._startup_timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        while True:
            code = process.poll()
            if code is not None:
                raise ServiceStartError(
                    f"{self.name} exited with code {code} during startup ({' '.join(self._command_line)}); "
                    f"log {self.log_path}:\n{self.log_tail(since_start=True)}"
                )
            readiness = self._probe()
            if readiness is not None:
                self._port = readiness.port
                self.metrics_port = readiness.metrics_port
                return self._port
            if time.monotonic() >= deadline:
                raise ServiceStartError(
                    f"{self.name} did not become ready in {limit}s ({' '.join(self._command_line)}); "
                    f"log {self.log_path}:\n{self.log_tail(since_start=True)}"
                )
            time.sleep(self.READY_POLL_INTERVAL)

    def _probe(self) -> Readiness | None:
        assert self._process is not None
        return self.probe_ready(self._process.pid)

    def wait(self, timeout: float | None) -> int:
        """Wait for the child to exit on its own (e.g. after being fenced); returns its exit code.

        Raises ``subprocess.TimeoutExpired`` if it still runs after ``timeout``.
        """
        if self._process is None:
            raise RuntimeError(f"{self.name} is not running")
        code = self._process.wait(timeout)
        self.reap_session()
        return code

    def stop(self, timeout: float | None = None) -> int | None:
        """Graceful stop: SIGTERM, then ``kill -9`` after ``timeout`` (default: the stop timeout).

        Returns the exit code (-9 if it had to be killed), None if no instance was ever started.
        """
        process = self._process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(self._stop_timeout if timeout is None else timeout)
        self.kill()
        return process.returncode

    def kill(self) -> None:
        """``kill -9`` the child (its whole session if :attr:`NEW_SESSION`) and reap it: exactly a crash."""
        process = self._process
        if process is None:
            return
        if self.NEW_SESSION:
            self.reap_session()
        elif process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
        process.wait()

    def reap_session(self) -> None:
        """SIGKILL whatever is left of the last instance's session (e.g. a JVM that outlived its driver)."""
        if self.NEW_SESSION and self._process is not None:
            kill_session(self._process.pid)

    # -- the log ------------------------------------------------------------------------------

    def log_since_start(self, limit: int = 1_000_000) -> str:
        """What the current (or last) instance wrote to the log, at most the last ``limit`` characters."""
        return self._read_log(self._log_offset, limit)

    def log_tail(self, lines: int = 60, *, since_start: bool = False) -> str:
        """The last ``lines`` lines of the log (of the current instance only with ``since_start``)."""
        text = self._read_log(self._log_offset if since_start else 0, 200_000)
        if not text and not self.log_path.exists():
            return f"<no {self.name} log>"
        return "\n".join(text.splitlines()[-lines:])

    def _read_log(self, offset: int, limit: int) -> str:
        try:
            with self.log_path.open("rb") as handle:
                size = handle.seek(0, os.SEEK_END)
                handle.seek(max(offset, size - limit))
                return handle.read().decode(errors="replace")
        except OSError:
            return ""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
