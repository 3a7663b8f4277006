"""The broker as a foreground process: lock the data dir, serve, stop on SIGTERM/SIGINT.

``serve_forever`` steps:
    1. Create the data dir, prove it writable and lock it (``flock`` on ``data_dir/.lock``); a second
       broker on the same dir fails fast (exit 1). The OS drops the lock when the process dies, even
       by ``kill -9``. A data dir that cannot be created or written is one ``broker.data_dir_unwritable``
       log line naming it and exit code 2, not a traceback.
    2. Open the broker (topics, logs, state) and start listening.
    3. Publish readiness: ``broker.started`` log line, the ``ready`` file, and the
       ``ONCEFLOW_BROKER_READY port=N`` line on stdout.
    4. Wait for SIGTERM or SIGINT.
    5. Stop gracefully (listener, background tasks, producer-state snapshots, flush), then remove the
       ready file.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import signal
import sys
from pathlib import Path

from onceflow.broker.broker import Broker
from onceflow.broker.config import BrokerConfig
from onceflow.broker.readiness import READY_LINE_PREFIX, ReadyInfo, clear_ready, write_ready
from onceflow.core.logging import get_logger

log = get_logger("onceflow.broker")

EXIT_DATA_DIR_UNUSABLE = 2
"""Exit code when the data dir cannot be created or written (as for any bad configuration)."""
PROBE_FILE = ".write-probe"


def serve_forever(config: BrokerConfig) -> int:
    """Run the broker until a stop signal; returns the exit code (0 clean, 1 startup failure, 2 unusable
    data dir)."""
    # Step 1
    data_dir = config.data_dir
    try:
        lock_fd = _lock_writable_data_dir(data_dir)
    except OSError as exc:
        log.error("broker.data_dir_unwritable", data_dir=data_dir, reason=exc.strerror or exc)
        return EXIT_DATA_DIR_UNUSABLE
    if lock_fd is None:
        log.error("broker.data_dir_locked", data_dir=data_dir, reason="another broker is using it")
        return 1
    try:
        clear_ready(data_dir)
        return asyncio.run(_serve(config))
    finally:
        os.close(lock_fd)


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


async def _serve(config: BrokerConfig) -> int:
    # Step 2
    try:
        broker = Broker(config)
    except OSError as exc:
        log.error("broker.data_dir_unwritable", data_dir=config.data_dir, reason=exc)
        return EXIT_DATA_DIR_UNUSABLE
    try:
        await broker.start()
    except OSError as exc:
        await broker.stop()
        if exc.filename is not None:  # a file of the data dir, not the listen address
            log.error("broker.data_dir_unwritable", data_dir=config.data_dir, reason=exc)
            return EXIT_DATA_DIR_UNUSABLE
        log.error("broker.start_failed", listen=config.listen, reason=exc)
        return 1
    # Step 3
    host, port = broker.advertised
    log.info(
        "broker.started",
        listen=f"{config.listen_host}:{broker.port}",
        advertised=f"{host}:{port}",
        data_dir=config.data_dir,
    )
    write_ready(config.data_dir, ReadyInfo(pid=os.getpid(), port=broker.port, advertised=f"{host}:{port}"))
    sys.stdout.write(f"{READY_LINE_PREFIX} port={broker.port}\n")
    sys.stdout.flush()
    # Step 4
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    # Step 5
    log.info("broker.stopping", data_dir=config.data_dir)
    await broker.stop()
    clear_ready(config.data_dir)
    log.info("broker.stopped", data_dir=config.data_dir)
    return 0
