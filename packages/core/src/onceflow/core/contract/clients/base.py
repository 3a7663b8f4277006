"""What every typed client of a onceflow service shares: its channel, its per-call deadline, close()."""

from __future__ import annotations

import math
from types import TracebackType
from typing import Self

import grpc

from onceflow.core.contract.txn import TransactionId
from onceflow.core.grpc import open_channel
from onceflow.core.settings import TlsSettings


class ServiceClient:
    """A channel to one service target (TLS, mTLS and the bearer token as :func:`open_channel` sets them
    up) and a default deadline for its calls. Close it, or use ``with``, to release the channel.

    ValueError for an empty target or a deadline that is not a positive number of seconds.
    """

    def __init__(self, target: str, tls: TlsSettings | None = None, *, timeout_s: float = 30.0) -> None:
        if not target:
            raise ValueError("target must be HOST:PORT, got an empty string")
        self.target = target
        self.timeout_s = _checked_timeout(timeout_s)
        self.channel: grpc.Channel = open_channel(target, tls)

    def _timeout(self, timeout_s: float | None) -> float:
        """The deadline of one call: ``timeout_s`` when given, the client's default otherwise."""
        return self.timeout_s if timeout_s is None else _checked_timeout(timeout_s)

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _checked_timeout(timeout_s: float) -> float:
    if not isinstance(timeout_s, int | float) or not math.isfinite(timeout_s) or timeout_s <= 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout_s!r}")
    return float(timeout_s)


def check_txn(txn: object) -> None:
    """TypeError unless ``txn`` is a :class:`TransactionId` (a string "job:batch" is a common slip)."""
    if not isinstance(txn, TransactionId):
        raise TypeError(
            f"txn must be a TransactionId, got {txn!r} ({type(txn).__name__}); use TransactionId.parse('JOB:BATCH')"
        )
