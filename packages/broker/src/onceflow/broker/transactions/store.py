"""``TransactionStore``: the durable state of every transactional id, with an in-memory view."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from onceflow.broker.statelog import StateLog
from onceflow.broker.transactions.metadata import TransactionMetadata
from onceflow.broker.transactions.records import decode, encode_key, encode_value

FILE_NAME = "_onceflow_transactions.statelog"


class TransactionStore:
    """Write-through store of ``TransactionMetadata`` over a ``StateLog``.

    Guarantees:

    * ``put`` and ``remove`` are in the log (fsynced if ``fsync``) before they return, and only then
      visible through ``get``: memory never shows a state the log does not hold.
    * After ``open``, ``get`` returns the last state logged for each id before the previous process
      stopped or died; removed ids are gone.
    * One store per data directory: ``open`` raises ``StateLogLocked`` if another holds it.
    """

    def __init__(self, log: StateLog, entries: dict[str, TransactionMetadata]) -> None:
        self._log = log
        self._entries = entries
        self._by_producer = {entry.producer_id: entry.transactional_id for entry in entries.values()}

    @classmethod
    def open(cls, data_dir: Path, *, fsync: bool) -> TransactionStore:
        """Open the log in ``data_dir`` (recovering a torn tail) and load the last state of every id."""
        log = StateLog.open(data_dir / FILE_NAME, fsync=fsync)
        try:
            entries: dict[str, TransactionMetadata] = {}
            for key, value in log.replay():
                if value is None:
                    entries.pop(key.decode(), None)
                else:
                    metadata = decode(key, value)
                    entries[metadata.transactional_id] = metadata
        except BaseException:
            log.close()
            raise
        return cls(log, entries)

    def get(self, transactional_id: str) -> TransactionMetadata | None:
        """The current state of ``transactional_id``, or ``None`` if it is unknown."""
        return self._entries.get(transactional_id)

    def for_producer(self, producer_id: int) -> TransactionMetadata | None:
        """The id currently owned by ``producer_id``, if any."""
        transactional_id = self._by_producer.get(producer_id)
        return None if transactional_id is None else self._entries.get(transactional_id)

    def __iter__(self) -> Iterator[TransactionMetadata]:
        return iter(list(self._entries.values()))

    def __len__(self) -> int:
        return len(self._entries)

    def put(self, metadata: TransactionMetadata) -> TransactionMetadata:
        """Durably record ``metadata`` as the state of its id, then show it; returns it."""
        self._log.append(encode_key(metadata.transactional_id), encode_value(metadata))
        previous = self._entries.get(metadata.transactional_id)
        if previous is not None and self._by_producer.get(previous.producer_id) == previous.transactional_id:
            del self._by_producer[previous.producer_id]
        self._entries[metadata.transactional_id] = metadata
        self._by_producer[metadata.producer_id] = metadata.transactional_id
        return metadata

    def remove(self, transactional_id: str) -> None:
        """Durably forget ``transactional_id`` (a tombstone), then drop it from memory."""
        self._log.append(encode_key(transactional_id), None)
        previous = self._entries.pop(transactional_id, None)
        if previous is not None and self._by_producer.get(previous.producer_id) == transactional_id:
            del self._by_producer[previous.producer_id]

    def close(self) -> None:
        """Close the log. Idempotent."""
        self._log.close()
