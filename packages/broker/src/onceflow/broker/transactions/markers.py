"""``MarkerWriter``: how the coordinator closes a transaction in a partition (a COMMIT/ABORT control batch),
and ``TransactionMarker``, the marker it writes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionMarker:
    """One COMMIT (``commit``) or ABORT marker for one partition: an entry of Kafka's WriteTxnMarkers.

    It ends ``producer_id``'s transaction in ``topic``-``partition`` at ``producer_epoch``; the
    ``coordinator_epoch`` is the writing coordinator's.
    """

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool


class MarkerWriter(Protocol):
    """Writes transaction markers into the broker's partition logs (implemented by the broker wiring).

    Contract:

    * When ``write_marker`` returns, the marker is durable in the partition, and the partition's last
      stable offset and aborted-transaction index account for it.
    * It is idempotent: a marker for a producer with no open transaction in the partition is harmless
      (the coordinator re-sends markers after a crash).
    * It raises ``MarkerWriteError`` if the partition does not exist; the coordinator then treats the
      partition as done. Any other exception is transient: the coordinator retries later.
    """

    def write_marker(self, marker: TransactionMarker) -> None:
        """Append ``marker`` (COMMIT or ABORT for its producer at its epoch) to its partition."""
        ...
