"""When a crashed child is started again: after a fixed delay, at most so many times."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RestartPolicy:
    """Fixed-delay restarts (Flink's ``fixedDelayRestart``, applied to a whole process).

    ``max_restarts`` None restarts forever (the demo under chaos); otherwise the child is given up
    after that many restarts and the supervisor reports it as failed.
    """

    delay_s: float = 1.0
    max_restarts: int | None = None

    def __post_init__(self) -> None:
        if self.delay_s < 0:
            raise ValueError("delay_s must be >= 0")
        if self.max_restarts is not None and self.max_restarts < 0:
            raise ValueError("max_restarts must be >= 0 or None")

    def allows(self, restarts_so_far: int) -> bool:
        """May the child be restarted once more after ``restarts_so_far`` restarts?"""
        return self.max_restarts is None or restarts_so_far < self.max_restarts
