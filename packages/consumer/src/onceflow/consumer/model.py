"""The offsets of a partition, as the store holds them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StoredOffset:
    """What the store holds for one partition of the results topic.

    ``next_offset`` is the offset to consume next; ``applied_records`` counts every record applied
    from the partition over the store's life, so a batch applied twice shows up as a count above the
    partition's committed record count. ``owner`` is the instance that applied the last batch.
    """

    partition: int
    next_offset: int
    applied_records: int
    owner: str = ""
