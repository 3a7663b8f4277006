"""One way to run a service as a child process: config file, ready-file handshake, stop, ``kill -9``, restart."""

from onceflow.core.process.ports import free_port, free_ports
from onceflow.core.process.server import ServerProcess
from onceflow.core.process.service import ServiceProcess, ServiceStartError
from onceflow.core.process.session import kill_session, session_cpu_seconds, session_members

__all__ = [
    "ServerProcess",
    "ServiceProcess",
    "ServiceStartError",
    "free_port",
    "free_ports",
    "kill_session",
    "session_cpu_seconds",
    "session_members",
]
