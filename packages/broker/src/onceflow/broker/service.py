"""The broker as a service of the one serve loop (:mod:`onceflow.core.service`): lock the data dir, serve.

``BrokerService.start`` steps:
    0. Off loopback, refuse to listen without authentication (SASL, or TLS with client certificates;
       :mod:`onceflow.core.exposure`, ``ONCEFLOW_INSECURE=1`` allows it): InvalidConfig, exit 2.
    1. Create the data dir, prove it writable and lock it (``flock`` on ``data_dir/.lock``); a second
       broker on the same dir fails fast (exit 1). The OS drops the lock when the process dies, even
       by ``kill -9``. A data dir that cannot be created or written is one line naming it
       (``onceflow broker: data dir ... is not usable: ...``) and exit code 2, not a traceback.
    2. Start the broker's asyncio loop on a thread of its own (one thread serves everything).
    3. Open the broker (topics, logs, state) on that loop and start listening; log ``broker.started``.

The serve loop then publishes the ``ready`` file in the data dir (:attr:`BrokerConfig.ready_file`),
waits for SIGTERM/SIGINT and calls :meth:`BrokerService.stop`: listener, background tasks,
producer-state snapshots and flush, then the loop and the lock.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Self

from onceflow.broker.broker import Broker
from onceflow.broker.config import BrokerConfig
from onceflow.broker.log_escaping import escape_log_lines
from onceflow.core.exposure import refuse_unauthenticated
from onceflow.core.logging import get_logger
from onceflow.core.service import EXIT_CONFIG, EXIT_START_FAILED, Service, ServiceStartFailed, remove_ready_file

log = get_logger("onceflow.broker")

EXIT_DATA_DIR_UNUSABLE = EXIT_CONFIG
"""Exit code when the data dir cannot be created or written (as for any bad configuration)."""
PROBE_FILE = ".write-probe"


class BrokerService(Service):
    """One broker process: the data dir's lock, the asyncio loop thread and the :class:`Broker` on it."""

    name = "broker"

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.broker: Broker | None = None
        self._lock_fd: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        """Lock the data dir, start the loop thread, open the broker and listen (see the module's Steps)."""
        # Step 0
        refuse_unauthenticated(self.config.listeners(""))
        data_dir = self.config.data_dir
        # Step 1
        try:
            lock_fd = _lock_writable_data_dir(data_dir)
        except OSError as exc:
            raise _data_dir_unusable(data_dir, exc.strerror or exc) from None
        if lock_fd is None:
            raise ServiceStartFailed(f"data dir {data_dir} is locked: another broker is using it")
        self._lock_fd = lock_fd
        remove_ready_file(self.config.ready_file)
        # Step 2
        loop = self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=loop.run_forever, name="broker-loop", daemon=True)
        self._thread.start()
        # Step 3
        asyncio.run_coroutine_threadsafe(self._open(), loop).result()
        return self

    async def _open(self) -> None:
        try:
            broker = Broker(self.config)
        except OSError as exc:
            raise _data_dir_unusable(self.config.data_dir, exc) from None
        try:
            await broker.start()
        except OSError as exc:
            await broker.stop()
            if exc.filename is not None:  # a file of the data dir, not the listen address
                raise _data_dir_unusable(self.config.data_dir, exc) from None
            raise ServiceStartFailed(f"cannot listen on {self.config.listen}: {exc}", EXIT_START_FAILED) from None
        self.broker = broker
        host, port = broker.advertised
        log.info(
            "broker.started",
            listen=f"{self.config.listen_host}:{broker.port}",
            advertised=f"{host}:{port}",
            data_dir=self.config.data_dir,
        )

    def ready_info(self) -> Mapping[str, object]:
        assert self.broker is not None
        host, port = self.broker.advertised
        return {"port": self.broker.port, "metrics_port": 0, "advertised": f"{host}:{port}"}

    def default_ready_file(self) -> Path:
        """``data_dir/ready``, where :class:`~onceflow.broker.embedded.BrokerProcess` and the demo look."""
        return self.config.ready_file

    def stop(self, grace: float = 2.0) -> None:
        """Stop the broker gracefully (safe after a failed start), then the loop, then release the lock."""
        loop, broker = self._loop, self.broker
        if loop is not None and broker is not None:
            log.info("broker.stopping", data_dir=self.config.data_dir)
            asyncio.run_coroutine_threadsafe(broker.stop(), loop).result()
            self.broker = None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
            if self._thread is not None:
                self._thread.join()
            loop.close()
            self._loop = self._thread = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None


def _data_dir_unusable(data_dir: Path, reason: object) -> ServiceStartFailed:
    return ServiceStartFailed(f"data dir {data_dir} is not usable: {reason}", EXIT_DATA_DIR_UNUSABLE)


def _lock_writable_data_dir(data_dir: Path) -> int | None:
    """Create ``data_dir``, prove it writable (a probe file is written, fsynced and removed) and lock
    it; returns the lock's descriptor, or None if another broker holds the lock. Raises OSError
    (naming the path) when the directory cannot be created or written."""
    data_dir.mkdir(parents=True, exist_ok=True)
    probe = data_dir / PROBE_FILE
    fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, b"probe")
        os.fsync(fd)
    finally:
        os.close(fd)
    probe.unlink()
    lock_fd = os.open(data_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(lock_fd)
        return None
    return lock_fd


def broker_service(config: BrokerConfig) -> BrokerService:
    """``onceflow broker``'s service; escapes the log lines of the whole process first (client-chosen
    ids must not forge log lines, see :mod:`onceflow.broker.log_escaping`)."""
    escape_log_lines()
    return BrokerService(config)
