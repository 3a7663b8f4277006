"""A minimal service on the core serve loop, run as a real child process by ``test_service.py``.

``python health_service.py --config FILE [--ready-file FILE]``: serves gRPC health (via
``ServingEndpoints``) until SIGTERM/SIGINT. Its settings can make it wait at start until interrupted
(``start_waits``), or fail on its own after ``fail_after_ms`` with exit code ``FAILED_EXIT``.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import ClassVar, Self

import grpc
from pydantic import Field

from onceflow.core.logging import get_logger
from onceflow.core.metrics import ServiceMetrics
from onceflow.core.service import ExitStatus, ServiceCommand
from onceflow.core.service.endpoints import GrpcService, ServingEndpoints
from onceflow.core.settings import GrpcServerSettings, MeteredSettings

SERVICE_NAME = "onceflow.test.Health"
FAILED_EXIT = 4

_log = get_logger("health_service")


class HealthServiceSettings(MeteredSettings):
    env_prefix: ClassVar[str] = "ONCEFLOW_HEALTH__"
    server: GrpcServerSettings = Field(default_factory=GrpcServerSettings)
    start_waits: bool = False
    fail_after_ms: int = Field(default=0, ge=0)


def _no_servicers(server: grpc.Server) -> None:
    return


class HealthService(GrpcService):
    name = "health"

    def __init__(self, settings: HealthServiceSettings) -> None:
        self.settings = settings
        self.endpoints = ServingEndpoints(settings, ServiceMetrics("health"), service_names=[SERVICE_NAME])
        self._interrupted = threading.Event()
        self._started_at = 0.0

    def start(self) -> Self:
        if self.settings.start_waits:
            _log.info("health.waiting")
            self._interrupted.wait()
            raise RuntimeError("start interrupted")
        self.endpoints.start(_no_servicers)
        self._started_at = time.monotonic()
        _log.info("health.serving", port=self.port)
        return self

    def interrupt(self) -> None:
        self._interrupted.set()

    def finished(self) -> bool:
        fail_after = self.settings.fail_after_ms
        return fail_after > 0 and time.monotonic() - self._started_at > fail_after / 1000

    def exit_status(self) -> ExitStatus:
        return ExitStatus(FAILED_EXIT, "the test service failed on purpose") if self.finished() else ExitStatus()

    def stop(self, grace: float = 2.0) -> None:
        self.endpoints.stop(grace)


COMMAND = ServiceCommand(
    name="health",
    help="a minimal test service",
    description=__doc__ or "",
    service=f"{__name__}:HealthService",
    config_file="nothing",
)


if __name__ == "__main__":
    sys.exit(COMMAND.main("health_service"))
