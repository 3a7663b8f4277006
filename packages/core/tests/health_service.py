"""A minimal service on the core serve loop, run as a real child process by ``test_service.py``.

``python health_service.py --config FILE [--ready-file FILE]``: serves gRPC health (via
``build_server``) until SIGTERM/SIGINT. Its settings can make it wait at start until interrupted
(``start_waits``), or fail on its own after ``fail_after_ms`` with exit code ``FAILED_EXIT``.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Mapping
from typing import ClassVar, Self

import grpc
from grpc_health.v1 import health
from pydantic import Field

from onceflow.core.grpc import build_server
from onceflow.core.logging import get_logger
from onceflow.core.service import ExitStatus, Service, ServiceCommand
from onceflow.core.settings import GrpcServerSettings, LoggingSettings, Settings

SERVICE_NAME = "onceflow.test.Health"
FAILED_EXIT = 4

_log = get_logger("health_service")


class HealthServiceSettings(Settings):
    env_prefix: ClassVar[str] = "ONCEFLOW_HEALTH__"
    server: GrpcServerSettings = Field(default_factory=GrpcServerSettings)
    log: LoggingSettings = Field(default_factory=LoggingSettings)
    start_waits: bool = False
    fail_after_ms: int = Field(default=0, ge=0)


class HealthService(Service):
    name = "health"

    def __init__(self, settings: HealthServiceSettings) -> None:
        self.settings = settings
        self.health = health.HealthServicer()
        self.port = 0
        self._server: grpc.Server | None = None
        self._interrupted = threading.Event()
        self._started_at = 0.0

    def start(self) -> Self:
        if self.settings.start_waits:
            _log.info("health.waiting")
            self._interrupted.wait()
            raise RuntimeError("start interrupted")
        server, self.port = build_server(
            self.settings.server, service_names=[SERVICE_NAME], health_servicer=self.health
        )
        server.start()
        self._server = server
        self._started_at = time.monotonic()
        _log.info("health.serving", port=self.port)
        return self

    def interrupt(self) -> None:
        self._interrupted.set()

    def ready_info(self) -> Mapping[str, object]:
        return {"port": self.port, "metrics_port": 0}

    def finished(self) -> bool:
        fail_after = self.settings.fail_after_ms
        return fail_after > 0 and time.monotonic() - self._started_at > fail_after / 1000

    def exit_status(self) -> ExitStatus:
        return ExitStatus(FAILED_EXIT, "the test service failed on purpose") if self.finished() else ExitStatus()

    def stop(self, grace: float = 2.0) -> None:
        self.health.enter_graceful_shutdown()
        if self._server is not None:
            self._server.stop(grace).wait()
            self._server = None


COMMAND = ServiceCommand(
    name="health",
    help="a minimal test service",
    description=__doc__ or "",
    config_file="nothing",
    settings=f"{__name__}:HealthServiceSettings",
    service=f"{__name__}:HealthService",
)


if __name__ == "__main__":
    sys.exit(COMMAND.main("health_service"))
