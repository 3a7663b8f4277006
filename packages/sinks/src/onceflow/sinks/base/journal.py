"""A sink's durable record of which staged files (and what else) make up each prepared transaction."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from onceflow.contract import SinkBinding, TransactionId
from onceflow.contract.staging import StagedFile
from onceflow.core.fsync import replace_durably


class PreparedJournal:
    """Durable ``txn -> staged files`` entries, one small JSON file per prepared transaction.

    A Kafka transaction cannot be resumed by another process, so the staged files are the Kafka
    sink's durable prepared state; this journal remembers which files belong to which prepared
    transaction, so a restarted participant can list them and redo the committed ones. The
    lakehouse sinks also keep the data files they wrote outside their tables (``extra``). Entries
    are written atomically and fsynced before the participant votes yes.
    """

    def __init__(self, state_dir: str | Path, sink: str) -> None:
        self.root = Path(state_dir) / sink / "prepared"
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, txn: TransactionId) -> Path:
        return self.root / urllib.parse.quote(txn.job, safe="") / f"{txn.batch}.json"

    def record(
        self,
        txn: TransactionId,
        files: Sequence[StagedFile],
        bindings: Sequence[SinkBinding] = (),
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """Remember ``txn``'s files, bindings and the sink's ``extra`` (JSON-able) durably, replacing an
        earlier entry for it."""
        path = self._path(txn)
        path.parent.mkdir(parents=True, exist_ok=True)
        body = {
            "job": txn.job,
            "batch": txn.batch,
            "files": [vars(f) for f in files],
            "bindings": [b.to_dict() for b in bindings],
            "extra": dict(extra or {}),
        }
        replace_durably(path, json.dumps(body).encode())

    def files(self, txn: TransactionId) -> list[StagedFile] | None:
        """The files recorded for ``txn``, or None when it has no entry."""
        entry = self.entry(txn)
        return None if entry is None else entry[0]

    def entry(self, txn: TransactionId) -> tuple[list[StagedFile], list[SinkBinding]] | None:
        """The files and bindings recorded for ``txn`` (entries from before bindings: none), or None."""
        body = self._body(txn)
        if body is None:
            return None
        files = [StagedFile(**f) for f in body["files"]]
        return files, [SinkBinding.from_dict(b) for b in body.get("bindings", ())]

    def extra(self, txn: TransactionId) -> dict[str, Any] | None:
        """What the sink recorded beside the files for ``txn`` (empty for older entries), or None."""
        body = self._body(txn)
        return None if body is None else dict(body.get("extra") or {})

    def _body(self, txn: TransactionId) -> dict[str, Any] | None:
        try:
            body: dict[str, Any] = json.loads(self._path(txn).read_text())
        except FileNotFoundError:
            return None
        return body

    def remove(self, txn: TransactionId) -> None:
        """Forget ``txn`` (committed or aborted). Idempotent.

        Not fsynced: a crash that loses the removal leaves the entry a crash just before it would,
        and every sink already treats that one as committed or aborted when it recovers (commit and
        abort are idempotent). Only :meth:`record`, which a yes vote relies on, waits for the disk.
        """
        try:
            self._path(txn).unlink()
        except FileNotFoundError:
            return

    def list(self) -> list[TransactionId]:
        """Every recorded transaction, by job then batch."""
        found: list[TransactionId] = []
        for entry in self.root.glob("*/*.json"):
            found.append(TransactionId(urllib.parse.unquote(entry.parent.name), int(entry.stem)))
        return sorted(found)
