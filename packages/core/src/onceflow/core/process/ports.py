"""Free TCP ports for the services a launcher or a test starts.

A service that is killed and restarted binds the same port again. Were that port in the kernel's
ephemeral range (``net.ipv4.ip_local_port_range``), the kernel could give it, meanwhile, to any
outgoing connection as its source port, and a long-lived one (a Kafka client's) would keep it: the
restarted service then fails with "Address already in use" for as long as that connection lives. So
the ports handed out here lie below the ephemeral range, where the kernel never picks a source port,
as the fixed ports of a deployment do.
"""

from __future__ import annotations

import random
import socket
from collections.abc import Collection, Iterator
from contextlib import ExitStack
from pathlib import Path

#: Where the ports handed out start: above the well-known and most registered services' ports.
LOWEST = 10_000
#: Linux's default ephemeral range, when the running kernel's cannot be read.
DEFAULT_EPHEMERAL = (32_768, 60_999)
_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range of source ports for outgoing connections (inclusive)."""
    try:
        low, high = (int(part) for part in _RANGE_FILE.read_text(encoding="ascii").split())
    except (OSError, ValueError):
        return DEFAULT_EPHEMERAL
    return low, high


def _candidates() -> Iterator[int]:
    """Ports to try: below the ephemeral range, or, where that leaves too few, above it; from a random
    one on, wrapping round (so that concurrent callers rarely try the same one first)."""
    low, high = ephemeral_range()
    first, last = (LOWEST, low - 1) if low - LOWEST >= 1_000 else (high + 1, 65_535)
    start = random.randint(first, last)
    yield from range(start, last + 1)
    yield from range(first, start)


def free_ports(count: int, host: str = "127.0.0.1", *, avoid: Collection[int] = ()) -> list[int]:
    """``count`` distinct TCP ports free on ``host`` right now, outside the kernel's ephemeral range,
    none of them in ``avoid`` (ports already handed to services that have not bound them yet).

    Another process may still take one before its service binds it; a service that can pick its own
    port should be given 0 instead.
    """
    found: list[int] = []
    with ExitStack() as held:  # each port stays bound until all are found, so they are distinct
        for port in _candidates():
            if len(found) == count:
                break
            if port in avoid:
                continue
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.bind((host, port))
            except OSError:
                sock.close()
                continue
            held.enter_context(sock)
            found.append(port)
    if len(found) < count:
        raise OSError(f"fewer than {count} free TCP ports on {host} outside the ephemeral range")
    return found


def free_port(host: str = "127.0.0.1") -> int:
    """One TCP port free on ``host`` right now, outside the kernel's ephemeral range (:func:`free_ports`)."""
    return free_ports(1, host)[0]
