"""The one serve loop of every onceflow service: start, publish readiness, wait for a signal, stop."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from types import FrameType
from typing import Final

from onceflow.core.logging import get_logger
from onceflow.core.service.base import ExitStatus, Service
from onceflow.core.service.ready_file import remove_ready_file, write_ready_file

_log = get_logger("onceflow.service")

#: The signals that stop a service gracefully.
STOP_SIGNALS: Final = (signal.SIGTERM, signal.SIGINT)
#: Seconds a service that failed on its own gets to stop: its state may be stale, so it goes fast.
FAILED_STOP_GRACE_S: Final = 0.5
#: How often the loop checks whether the service ended on its own.
POLL_S: Final = 0.2


def serve_until_signalled(service: Service, ready_file: Path | None = None) -> ExitStatus:
    """Run ``service`` in the foreground until SIGTERM/SIGINT or until it ends on its own.

    Must be called from the main thread (signal handlers).

    Steps:
        1. Install the SIGTERM/SIGINT handlers: a signal logs ``<name>.signal``, asks the loop to
           stop and calls :meth:`Service.interrupt`, so a start that is still waiting gives up.
        2. Start the service. A start that fails is stopped again and its error raised, unless a
           signal interrupted it: that is a clean stop.
        3. Write the ready file (``ready_file``, else :meth:`Service.default_ready_file`) atomically:
           ``{"pid", **service.ready_info()}``.
        4. Wait for a signal, or for :meth:`Service.finished`.
        5. Stop: ``stop_grace_s`` after a signal, :data:`FAILED_STOP_GRACE_S` after a failure (logged
           as ``<name>.fatal``); remove the ready file; restore the previous signal handlers.
        6. Return the service's :class:`ExitStatus` (exit code 0 after a signal).
    """
    name = service.name
    stop = threading.Event()

    # Step 1
    def on_signal(signum: int, frame: FrameType | None) -> None:
        _log.info(f"{name}.signal", signal=signal.Signals(signum).name)
        stop.set()
        service.interrupt()

    previous = {signum: signal.signal(signum, on_signal) for signum in STOP_SIGNALS}
    path = ready_file
    try:
        # Step 2
        try:
            service.start()
        except BaseException as exc:
            _stop_after_failed_start(service, exc)
            if not stop.is_set():
                raise
            _log.info(f"{name}.stopped", during="start", error=exc)
            return ExitStatus()
        # Step 3
        path = ready_file or service.default_ready_file()
        if path is not None and not stop.is_set():
            write_ready_file(path, service.ready_info())
        # Step 4
        while not stop.wait(POLL_S) and not service.finished():
            pass
        # Step 5
        status = service.exit_status()
        if status.code != 0:
            _log.error(f"{name}.fatal", exit_code=status.code, error=status.reason)
            service.stop(FAILED_STOP_GRACE_S)
        else:
            service.stop(service.stop_grace_s)
            _log.info(f"{name}.stopped")
        if path is not None:
            remove_ready_file(path)
        # Step 6
        return status
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _stop_after_failed_start(service: Service, error: BaseException) -> None:
    """Release what a failed start holds; a failure to do so is logged, the start's error wins."""
    try:
        service.stop(0)
    except Exception as exc:
        _log.error(f"{service.name}.stop_failed", error=exc, start_error=error)
