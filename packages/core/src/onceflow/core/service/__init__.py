"""How every onceflow service runs: one :class:`Service` contract, one serve loop, one command front."""

from onceflow.core.service.base import (
    EXIT_CONFIG,
    EXIT_OK,
    EXIT_START_FAILED,
    ExitStatus,
    Service,
    ServiceStartFailed,
)
from onceflow.core.service.command import Flag, ServiceCommand, add_command, flag, run_service
from onceflow.core.service.loop import serve_until_signalled
from onceflow.core.service.ready_file import Readiness, read_ready_file, remove_ready_file, write_ready_file

__all__ = [
    "EXIT_CONFIG",
    "EXIT_OK",
    "EXIT_START_FAILED",
    "ExitStatus",
    "Flag",
    "Readiness",
    "Service",
    "ServiceCommand",
    "ServiceStartFailed",
    "add_command",
    "flag",
    "read_ready_file",
    "remove_ready_file",
    "run_service",
    "serve_until_signalled",
    "write_ready_file",
]
