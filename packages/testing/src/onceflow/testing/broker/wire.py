"""A minimal blocking Kafka-protocol client for tests: send kio request entities, read responses.

It is the admin tools' :class:`KafkaConnection` plus what only tests need: sending raw bytes, so
tests can probe the broker with malformed input, and waiting for the broker to close the connection.
"""

from __future__ import annotations

from onceflow.broker.admin.connection import KafkaConnection, decode_response, encode_request

__all__ = ["WireClient", "decode_response", "encode_request"]


class WireClient(KafkaConnection):
    """One TCP connection to a broker. Use as a context manager."""

    def __init__(self, bootstrap: str, client_id: str = "wire-test", timeout: float = 10.0) -> None:
        super().__init__(bootstrap, client_id, timeout)

    def __enter__(self) -> WireClient:
        return self

    def send_raw(self, data: bytes) -> None:
        """Write bytes as they are."""
        self.sock.sendall(data)

    def is_closed_by_peer(self, timeout: float = 5.0) -> bool:
        """True if the broker closes this connection within ``timeout`` (reads until EOF)."""
        self.sock.settimeout(timeout)
        try:
            while self.sock.recv(65536):
                pass
        except TimeoutError:
            return False
        except ConnectionError:
            return True
        return True
