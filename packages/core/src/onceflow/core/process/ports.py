"""Free TCP ports for the services a launcher or a test starts."""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now (the kernel's pick for port 0; another process may take it
    before it is bound again, so a service that can pick its own port should be given 0 instead)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
