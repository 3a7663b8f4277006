"""What a long-running onceflow process is to the one serve loop: :class:`Service`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Final, Self

from onceflow.core.errors import OnceflowError

#: Exit code of a clean stop (SIGTERM/SIGINT, or a service that finished its work).
EXIT_OK: Final = 0
#: Exit code of a service that could not start for an unexpected reason.
EXIT_START_FAILED: Final = 1
#: Exit code of a bad configuration or an unreachable dependency at start-up.
EXIT_CONFIG: Final = 2


@dataclass(frozen=True, slots=True)
class ExitStatus:
    """How a service ended: the process exit code and, for a failure, why (printed and logged)."""

    code: int = EXIT_OK
    reason: str | None = None


class ServiceStartFailed(OnceflowError):  # noqa: N818 - says what happened, as InvalidConfig
    """The service cannot start; ``exit_code`` is the code the process exits with (default 1)."""

    def __init__(self, reason: str, exit_code: int = EXIT_START_FAILED) -> None:
        self.exit_code = exit_code
        super().__init__(reason)


class Service(ABC):
    """One long-running onceflow process (broker, coordinator, participant, consumer, connect worker,
    Spark driver), run by :func:`~onceflow.core.service.serve_until_signalled`.

    Contract:
        - :meth:`start` returns once the service serves (it may block, e.g. on recovery); it raises
          when it cannot start. :meth:`interrupt` may be called meanwhile, from a signal handler.
        - :meth:`ready_info` is what a parent process learns from the ready file (``port``,
          ``metrics_port``, ...); it is read only after :meth:`start` returned.
        - :meth:`finished` is True when the service ended on its own (fenced, its loop failed, its
          work is done); :meth:`exit_status` then says how.
        - :meth:`stop` stops it within about ``grace`` seconds and is safe on a service whose
          :meth:`start` failed half way.
    """

    #: The service's name in the serve loop's log events (``<name>.signal``, ``<name>.stopped``, ...).
    name: ClassVar[str]
    #: Seconds in-flight work gets on a graceful stop.
    stop_grace_s: ClassVar[float] = 2.0

    @abstractmethod
    def start(self) -> Self:
        """Start serving; return (itself) once serving."""

    @abstractmethod
    def stop(self, grace: float = 2.0) -> None:
        """Stop serving and release everything; in-flight work gets ``grace`` seconds."""

    @abstractmethod
    def ready_info(self) -> Mapping[str, object]:
        """What to publish in the ready file besides the pid (``port``, ``metrics_port``, ...)."""

    def interrupt(self) -> None:
        """A stop was asked for; make a :meth:`start` that is still waiting give up. Signal-safe.

        Nothing to do by default: the serve loop stops the service once :meth:`start` returned.
        """
        return

    def finished(self) -> bool:
        """True when the service ended on its own, without a signal."""
        return False

    def exit_status(self) -> ExitStatus:
        """How the service ended (read before :meth:`stop`): a clean stop unless it failed."""
        return ExitStatus()

    def default_ready_file(self) -> Path | None:
        """Where readiness is published when the command was given no ``--ready-file``."""
        return None
