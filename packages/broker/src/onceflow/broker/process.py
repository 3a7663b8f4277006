"""The broker as a foreground process: lock the data dir, serve, stop on SIGTERM/SIGINT.

``serve_forever`` steps:
    1. Create and lock the data dir (``flock`` on ``data_dir/.lock``); a second broker on the same dir
       fails fast. The OS drops the lock when the process dies, even by ``kill -9``.
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
import logging
import os
import signal
import sys

from onceflow.broker.broker import Broker
from onceflow.broker.config import BrokerConfig
from onceflow.broker.readiness import READY_LINE_PREFIX, ReadyInfo, clear_ready, write_ready

log = logging.getLogger("onceflow.broker")


def serve_forever(config: BrokerConfig) -> int:
    """Run the broker until a stop signal; returns the exit code (0 clean, 1 startup failure)."""
    # Step 1
    data_dir = config.data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    lock_fd = os.open(data_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        log.error("broker.data_dir_locked data_dir=%s reason=another broker is using it", data_dir)
        return 1
    clear_ready(data_dir)
    try:
        return asyncio.run(_serve(config))
    finally:
        os.close(lock_fd)


async def _serve(config: BrokerConfig) -> int:
    # Step 2
    broker = Broker(config)
    try:
        await broker.start()
    except OSError as exc:
        log.error("broker.start_failed listen=%s reason=%s", config.listen, exc)
        await broker.stop()
        return 1
    # Step 3
    host, port = broker.advertised
    log.info(
        "broker.started listen=%s:%d advertised=%s:%d data_dir=%s",
        config.listen_host,
        broker.port,
        host,
        port,
        config.data_dir,
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
    log.info("broker.stopping data_dir=%s", config.data_dir)
    await broker.stop()
    clear_ready(config.data_dir)
    log.info("broker.stopped data_dir=%s", config.data_dir)
    return 0
