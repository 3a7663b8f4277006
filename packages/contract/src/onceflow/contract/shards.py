"""Shards: one sink served by several participant processes, each committing its share of every batch.

A sink (a Kafka cluster, a PostgreSQL database, a SQLite file) may be served by ``count`` participant
processes; the process of shard ``index`` gets its share of each batch's staged files, prepares and
commits it under commit records of its own (``<sink>#<index>``), and votes in the batch's one
two-phase commit like any other participant: the batch commits in every shard or in none.

How a batch is split (a pure function of the transaction's files and the sink's bindings, so a
retried Prepare, a re-sent Commit and a recovered transaction give each shard the same share):

- **Append** outputs are split by file (:func:`assign_files`): largest file first to the shard with
  the fewest rows so far (ties: the lower index), files ordered by row count then URI.
- **Upsert** outputs with key columns are split by key (:func:`rows_of_shard`): every shard gets all
  of the output's files and keeps the rows whose key hashes to it, so one key is always written by
  one shard, in batch order, and two shards never race on a key.
- A sink given no bindings gets every file on every shard, and each shard refuses the transaction
  (a participant has no bindings of its own).
- One output bound both by key and by file on one sharded sink cannot be split either way:
  :func:`check_shardable` refuses it.
"""

from __future__ import annotations

import array
import json
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time
from decimal import Decimal
from typing import TYPE_CHECKING, Final

import pyarrow as pa

from onceflow.contract.bindings import InvalidBinding, SinkBinding, SinkMode
from onceflow.core.request_limits import MAX_PARTICIPANTS

if TYPE_CHECKING:  # staging imports the contract: a runtime import would be circular
    from onceflow.contract.staging.files import StagedFile

#: Separates a sink's name from a shard's index in commit records and participant names.
SHARD_SEPARATOR: Final = "#"
#: Shards of one sink (each shard is one of the job's participants).
MAX_SHARDS: Final = MAX_PARTICIPANTS


@dataclass(frozen=True, slots=True, order=True)
class Shard:
    """Shard ``index`` of ``count`` shards of a sink; ``Shard()`` is a sink served by one process.

    Raises ValueError unless ``1 <= count <= MAX_SHARDS`` and ``0 <= index < count``.
    """

    index: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        if not 1 <= self.count <= MAX_SHARDS:
            raise ValueError(f"a sink has 1 to {MAX_SHARDS} shards, not {self.count}")
        if not 0 <= self.index < self.count:
            raise ValueError(f"shard index {self.index} is not in 0..{self.count - 1} (the sink has {self.count})")

    @property
    def is_sharded(self) -> bool:
        return self.count > 1

    def record_name(self, sink: str) -> str:
        """The name of this shard's commit records and of its participant: ``<sink>#<index>``, or
        ``<sink>`` for a sink that is not sharded (its records keep the name they always had)."""
        return f"{sink}{SHARD_SEPARATOR}{self.index}" if self.is_sharded else sink

    def __str__(self) -> str:
        return f"shard {self.index} of {self.count}" if self.is_sharded else "unsharded"


#: The one shard of a sink served by one participant process (the default everywhere).
WHOLE_SINK: Final = Shard()


def record_names(sink: str, count: int) -> list[str]:
    """The commit-record names of every shard of a sink with ``count`` shards (a reader sees them all)."""
    return [Shard(index, count).record_name(sink) for index in range(count)]


def is_keyed(binding: SinkBinding) -> bool:
    """True when ``binding`` is split by key over shards: upsert mode with key columns."""
    return binding.mode is SinkMode.UPSERT and bool(binding.keys)


def check_shardable(sink: str, bindings: Sequence[SinkBinding]) -> None:
    """Refuse (:class:`InvalidBinding`) bindings a sharded ``sink`` cannot split: an output bound there
    both by key (upsert with keys) and by file (append, or a topic without keys)."""
    by_output: dict[str, list[SinkBinding]] = {}
    for binding in bindings:
        by_output.setdefault(binding.output, []).append(binding)
    for output, group in by_output.items():
        keyed = [b for b in group if is_keyed(b)]
        by_file = [b for b in group if not is_keyed(b)]
        if keyed and by_file:
            raise InvalidBinding(
                f"sink {sink!r} is sharded: output {output!r} cannot be split both by key ({keyed[0].describe()}, "
                f"upsert on {', '.join(keyed[0].keys)}) and by file ({by_file[0].describe()}, {by_file[0].mode}); "
                "bind it to one sharded sink one way only"
            )


def assign_files(files: Iterable[StagedFile], count: int) -> dict[str, int]:
    """``uri -> shard index`` for files split by file: the largest first (by rows, then URI) to the
    shard with the fewest rows so far (ties: the lower index). A file counts at least one row, so
    empty files spread too."""
    loads = [0] * count
    owner: dict[str, int] = {}
    for file in sorted(files, key=lambda f: (-f.count, f.uri)):
        index = min(range(count), key=lambda i: (loads[i], i))
        owner[file.uri] = index
        loads[index] += max(file.count, 1)
    return owner


def shard_files(files: Sequence[StagedFile], bindings: Sequence[SinkBinding], shard: Shard) -> tuple[StagedFile, ...]:
    """The files ``shard`` of a sink with ``bindings`` gets, in the transaction's order.

    Files of keyed outputs (and every file when the sink has no bindings, which every shard refuses)
    go to every shard, which keeps its keys' rows; the other files are dealt by :func:`assign_files`.
    """
    if not shard.is_sharded:
        return tuple(files)
    keyed = None if not bindings else {b.output for b in bindings if is_keyed(b)}
    by_file = [f for f in files if keyed is not None and f.output not in keyed]
    owner = assign_files(by_file, shard.count)
    return tuple(f for f in files if owner.get(f.uri, shard.index) == shard.index)


def _canonical(value: object) -> object:
    """A JSON-able form of a key value that every process computes the same way."""
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return repr(value)


def key_shard(key: Sequence[object], count: int) -> int:
    """The shard that owns ``key`` (a tuple of key column values): CRC-32 of its compact JSON form, mod ``count``."""
    text = json.dumps(list(key), default=_canonical, separators=(",", ":"), ensure_ascii=False)
    return zlib.crc32(text.encode()) % count


def rows_of_shard(table: pa.Table, keys: Sequence[str], shard: Shard) -> pa.Table:
    """The rows of ``table`` whose key (``keys`` columns) ``shard`` owns (:func:`key_shard`), in order.

    The row numbers go to Arrow as a buffer, not as Python objects: pyarrow's conversion of Python
    objects imports pandas on first use, which would cost a participant's first prepare seconds.
    """
    if not shard.is_sharded or not table.num_rows:
        return table
    columns = [table.column(name).to_pylist() for name in keys]
    owned = array.array(
        "q",
        (row for row, key in enumerate(zip(*columns, strict=True)) if key_shard(key, shard.count) == shard.index),
    )
    return table.take(pa.Array.from_buffers(pa.int64(), len(owned), [None, pa.py_buffer(owned)]))
