"""The two-phase-commit participant of a lakehouse table format (Delta Lake, Apache Iceberg)."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from onceflow.contract import WHOLE_SINK, CommittedBatches, Shard, SinkBinding, TransactionId
from onceflow.contract.staging import StagedFile
from onceflow.core.logging import get_logger
from onceflow.sinks.base import BoundRows, PreparedJournal, SinkParticipant
from onceflow.sinks.exceptions import (
    BindingRejected,
    PrepareRejected,
    TransactionAlreadyCommitted,
    TransactionNotPrepared,
)
from onceflow.sinks.lakehouse.exceptions import CommitConflict, TableStoreUnavailable
from onceflow.sinks.lakehouse.format import DataFile, TableCommit, TableFormat
from onceflow.sinks.lakehouse.settings import CommitRetrySettings
from onceflow.sinks.tables import null_violation

_log = get_logger(__name__)

#: The journal's ``extra`` key: per binding (in binding order), the data files prepare wrote.
WRITTEN = "written"


class LakehouseParticipant(SinkParticipant):
    """Writes each binding's rows to a table of a lakehouse format, one table commit per table and batch.

    - **Prepare** writes the batch's rows as data files under the table that no table version
      references (:meth:`TableFormat.write`), then journals them with the transaction id, durably,
      before the yes vote. A batch the tables already hold is prepared without writing.
    - **Commit** is one table commit per binding that adds the files (append) or merges them on
      the keys (upsert) and records ``(job, batch)`` in the table itself. Before committing it
      reads the table's last committed batch of the job: a batch already there is acknowledged,
      not written twice, so a replayed Commit, a crash after the table commit, or a recovery is a
      no-op. Another writer committing in between is a conflict: re-read, retry.
    - **Abort** deletes the uncommitted files; **recovery** lists the journal and resolves each
      entry with the coordinator, committing from the journaled files.
    - One prepared batch per job at a time: while a batch awaits its decision, a later batch of
      the same job votes no. A table holds the job's *last* committed batch, so committing a later
      batch first would make the earlier one read as committed when its decision arrives.
    """

    def __init__(
        self,
        name: str,
        table_format: TableFormat[Any],
        *,
        state_dir: str | Path,
        retry: CommitRetrySettings | None = None,
        shard: Shard = WHOLE_SINK,
    ) -> None:
        super().__init__(name, shard=shard)
        self.format = table_format
        self._journal = PreparedJournal(state_dir, self.record_name)
        self._retry = retry or CommitRetrySettings()
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._ready: set[tuple[str, str]] = set()
        _log.info(f"{table_format.kind}.open", sink=name)

    def app_id(self, job: str) -> str:
        """Who a table records ``job``'s batches for: the job, or ``<job>#<index>`` for a shard (each shard
        commits its share of a batch to the same table)."""
        return self.shard.record_name(job)

    def _lock(self, job: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(job, threading.Lock())

    # --- tables ---------------------------------------------------------------------------------

    def prepare_bindings(self, job: str, bindings: Sequence[SinkBinding]) -> None:
        """Create or check every binding's table (the SQL sinks' rules, see :meth:`TableFormat.ensure`)."""
        tables: dict[str, str] = {}
        for binding in bindings:
            where = f"table {binding.table or binding.topic!r} (output {binding.output!r})"
            if not binding.table:
                raise BindingRejected(self.name, where, f"a {self.format.kind} binding needs a table")
            if binding.table.startswith("_"):
                raise BindingRejected(self.name, where, "a table name may not start with '_' (hidden in a table root)")
            if binding.table in tables:
                raise BindingRejected(
                    self.name, where, f"output {tables[binding.table]!r} of the job already writes this table"
                )
            tables[binding.table] = binding.output
            self._ensure_table(binding, force=True)

    def _ensure_table(self, binding: SinkBinding, *, force: bool = False) -> None:
        key = (binding.table, binding.output)
        if binding.schema is None or (key in self._ready and not force):
            return
        plan = self.format.ensure(self.name, binding)
        self._ready.add(key)
        if plan.created or plan.added:
            _log.info(
                "table.ready", sink=self.name, table=binding.table, created=plan.created, added=",".join(plan.added)
            )

    # --- the protocol ---------------------------------------------------------------------------

    def _committed_everywhere(self, txn: TransactionId, bindings: Sequence[SinkBinding]) -> bool:
        return all(self.format.last_committed(b.table, self.app_id(txn.job)) >= txn.batch for b in bindings)

    def _committed_anywhere(self, txn: TransactionId, tables: Sequence[str] | None = None) -> bool:
        """Whether one of ``tables`` (default: every table of the sink) records ``txn`` or a later batch."""
        tables = self.format.tables() if tables is None else tables
        return any(self.format.last_committed(table, self.app_id(txn.job)) >= txn.batch for table in tables)

    def prepare_rows(self, txn: TransactionId, outputs: Sequence[BoundRows], files: Sequence[StagedFile]) -> None:
        """Write each binding's rows as data files outside the table, then journal them.

        Steps:
            1. A transaction already journaled, or already in every table, is prepared: nothing to write.
            2. Another prepared batch of the job awaits its decision: vote no (see the class docstring).
            3. Create or check each binding's table; a NOT NULL column a row would leave null votes no.
            4. Write each binding's rows as data files the tables do not reference yet (durable).
            5. Journal the staged files, the bindings and the data files, durably; the caller votes yes.
        """
        with self._lock(txn.job):
            try:
                self._prepare_rows(txn, outputs, files)
            except TableStoreUnavailable as exc:
                raise PrepareRejected(f"sink {self.name!r} cannot prepare {txn}: {exc}") from exc

    def _prepare_rows(self, txn: TransactionId, outputs: Sequence[BoundRows], files: Sequence[StagedFile]) -> None:
        """:meth:`prepare_rows` under the job's lock (the steps are documented there)."""
        # Step 1
        if self._journal.entry(txn) is not None or self._committed_everywhere(txn, [b.binding for b in outputs]):
            _log.info("prepare.again", sink=self.name, **txn.log_fields())
            return
        # Step 2
        waiting = [other for other in self._journal.list() if other.job == txn.job]
        if waiting:
            raise PrepareRejected(
                f"sink {self.name!r} cannot prepare {txn}: {waiting[0]} is still prepared and awaits "
                "its decision (one prepared batch per job)"
            )
        written: list[list[DataFile]] = []
        try:
            for bound in outputs:
                # Step 3
                self._ensure_table(bound.binding)
                columns, _ = self.format.describe(bound.binding.table)
                not_null = [c.name for c in columns or () if c.not_null]
                problem = null_violation(bound.binding, not_null, bound.rows)
                if problem:
                    raise PrepareRejected(f"sink {self.name!r} cannot prepare {txn}: {problem}")
                # Step 4
                written.append(self.format.write(bound.binding, bound.rows, txn))
            self.faults.at("prepare-midway", sink=self.record_name, txn=txn)
            # Step 5
            self._journal.record(txn, files, [b.binding for b in outputs], {WRITTEN: _to_json(written)})
        except (TableStoreUnavailable, PrepareRejected, OSError) as exc:
            for bound, uris in zip(outputs, written, strict=False):
                self._discard(bound.binding, uris)
            if isinstance(exc, PrepareRejected):
                raise
            raise PrepareRejected(f"sink {self.name!r} cannot prepare {txn}: {exc}") from exc
        rows = sum(b.rows.num_rows for b in outputs)
        _log.info("prepare.files_written", sink=self.name, **txn.log_fields(), rows=rows)

    def _discard(self, binding: SinkBinding, uris: Sequence[DataFile]) -> None:
        try:
            self.format.cleanup(binding, uris, committed=False)
        except TableStoreUnavailable as exc:  # left for the format's orphan-file maintenance
            _log.warning("prepare.cleanup_failed", sink=self.name, table=binding.table, reason=str(exc))

    def _prepared(
        self, txn: TransactionId, files: Sequence[StagedFile], bindings: Sequence[SinkBinding]
    ) -> tuple[list[SinkBinding], list[list[DataFile]]] | None:
        """The journaled bindings and data files of ``txn``; without an entry, None if every table of
        ``bindings`` (without bindings: any table) holds it already, else the batch written now from
        ``files`` (the coordinator decided COMMIT, so every participant voted yes);
        :class:`TransactionNotPrepared` without files, :class:`BindingMissing` without bindings."""
        entry = self._journal.entry(txn)
        if entry is not None:
            return entry[1], self._written(txn)
        if not bindings and self._committed_anywhere(txn):
            return None  # a repeated commit without its bindings: the tables' commit records answer
        if not bindings and not files:
            raise TransactionNotPrepared(self.name, txn)
        wanted = self.bindings_for(txn.job, files, bindings)
        if self._committed_everywhere(txn, wanted):
            return None
        if not files:
            raise TransactionNotPrepared(self.name, txn)
        _log.warning("commit.redo_from_staging", sink=self.name, **txn.log_fields())
        outputs = self.load(txn.job, files, wanted)
        written = []
        for bound in outputs:
            self._ensure_table(bound.binding)
            written.append(self.format.write(bound.binding, bound.rows, txn))
        return [b.binding for b in outputs], written

    def commit(
        self, txn: TransactionId, files: Sequence[StagedFile] = (), bindings: Sequence[SinkBinding] = ()
    ) -> None:
        """One table commit per binding; idempotent.

        Steps:
            1. Read the journaled bindings and data files (none and every table holds the batch: no-op).
            2. Per binding: read the table's last committed batch of the job; a batch already there
               is acknowledged. Otherwise one table commit of the files recording ``(job, batch)``;
               a conflict with another writer re-reads and retries (:meth:`_commit_table`).
            3. Delete the files no table references (a merge's source files) and drop the journal entry.
        """
        with self._lock(txn.job):
            # Step 1
            prepared = self._prepared(txn, files, bindings)
            if prepared is None:
                _log.info("commit.already_committed", sink=self.name, **txn.log_fields())
                return
            # Step 2
            for binding, uris in zip(*prepared, strict=True):
                self._commit_table(binding, txn, uris)
                self.faults.at("commit-midway", sink=self.record_name, txn=txn, table=binding.table)
            # Step 3
            for binding, uris in zip(*prepared, strict=True):
                self._cleanup(binding, uris, committed=True)
            self._journal.remove(txn)
        _log.info("commit.done", sink=self.name, **txn.log_fields())

    def _written(self, txn: TransactionId) -> list[list[DataFile]]:
        extra = self._journal.extra(txn) or {}
        return [[DataFile.from_dict(doc) for doc in files] for files in extra.get(WRITTEN, [])]

    def _commit_table(self, binding: SinkBinding, txn: TransactionId, files: Sequence[DataFile]) -> None:
        """Commit ``files`` to ``binding.table`` unless it already holds ``txn``; retry conflicts.

        Steps:
            1. One table commit, checked against the version it commits on: a table that already
               holds the batch is acknowledged (:meth:`TableFormat.commit` answers False).
            2. On a conflict, wait the next backoff delay and go back to Step 1; after the last
               attempt, raise: the coordinator re-sends the Commit.
        """
        retry = self._retry
        delay_s = retry.initial_backoff_ms / 1000
        ids = {"sink": self.record_name, "job": txn.job, "batch": txn.batch, "txn": txn, "table": binding.table}
        before_commit = functools.partial(self.faults.at, "before-table-commit", **ids)
        pending = TableCommit(binding, txn, files, self.app_id(txn.job), before_commit)
        for attempt in range(1, retry.attempts + 1):
            # Step 1
            try:
                if self.format.commit(pending):
                    _log.info("commit.table_committed", **ids, files=len(files), attempt=attempt)
                else:
                    _log.info("commit.table_holds_batch", **ids)
                return
            except CommitConflict as exc:
                # Step 2
                _log.warning("commit.conflict", **ids, attempt=attempt, retry_in_s=round(delay_s, 3), reason=str(exc))
                if attempt == retry.attempts:
                    raise
                time.sleep(delay_s)
                delay_s = min(delay_s * 2, retry.max_backoff_ms / 1000)

    def _cleanup(self, binding: SinkBinding, uris: Sequence[DataFile], *, committed: bool) -> None:
        try:
            self.format.cleanup(binding, uris, committed=committed)
        except TableStoreUnavailable as exc:  # unreferenced files: the format's orphan-file maintenance
            _log.warning("cleanup.failed", sink=self.name, table=binding.table, reason=str(exc))

    def abort(self, txn: TransactionId) -> None:
        """Delete the transaction's data files and forget it; an unknown transaction is a no-op.

        A transaction some table already holds cannot be aborted (:class:`TransactionAlreadyCommitted`).
        """
        with self._lock(txn.job):
            entry = self._journal.entry(txn)
            if self._committed_anywhere(txn, [b.table for b in entry[1]] if entry else None):
                raise TransactionAlreadyCommitted(self.name, txn)
            if entry is None:
                _log.info("abort.unknown", sink=self.name, **txn.log_fields())
                return
            bindings = entry[1]
            for binding, uris in zip(bindings, self._written(txn), strict=False):
                self.format.cleanup(binding, uris, committed=False)
            self._journal.remove(txn)
        _log.info("abort.done", sink=self.name, **txn.log_fields())

    def list_prepared(self) -> list[TransactionId]:
        return self._journal.list()

    def committed_batches(self, job: str | None, limit: int) -> list[CommittedBatches]:
        """From the tables' own commit records (Delta commitInfo, Iceberg snapshot summaries) of this
        sink and application id, newest first; only the versions the tables still retain."""
        found: dict[str, set[int]] = {}
        for table in self.format.tables():
            for sink, app_id, txn_text in self.format.commits(table):
                txn = TransactionId.parse(txn_text)
                if sink == self.name and app_id == self.app_id(txn.job) and job in (None, txn.job):
                    found.setdefault(txn.job, set()).add(txn.batch)
        listed = {name: sorted(batches, reverse=True)[:limit] for name, batches in sorted(found.items())}
        return [CommittedBatches(name, batches[0], tuple(batches)) for name, batches in listed.items()]

    def last_committed(self, table: str, job: str) -> int:
        """The job's last batch committed to ``table``, or -1."""
        return self.format.last_committed(table, job)

    def close(self) -> None:
        self.format.close()


def _to_json(written: Sequence[Sequence[DataFile]]) -> list[list[dict[str, object]]]:
    return [[file.to_dict() for file in files] for files in written]
