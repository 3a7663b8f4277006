"""Parallel calls to every participant of a transaction, each bounded by a deadline; each shard of a
sharded sink gets its share of the transaction's staged files (:func:`files_of`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent import futures
from dataclasses import dataclass
from typing import TypeVar

from onceflow.contract import ParticipantRef, PrepareVote
from onceflow.contract.shards import shard_files
from onceflow.contract.staging import StagedFile
from onceflow.coordinator.model import Transaction
from onceflow.coordinator.participants.base import ParticipantConnection, ParticipantConnector
from onceflow.core.errors import OnceflowError

T = TypeVar("T")


def files_of(ref: ParticipantRef, txn: Transaction) -> tuple[StagedFile, ...]:
    """The staged files of ``txn`` that ``ref``'s participant prepares and commits: all of them, or the
    share of a shard of a sharded sink (:func:`~onceflow.contract.shards.shard_files`). A pure
    function of the logged transaction, so a re-sent Commit or a recovered one carries the same share."""
    return shard_files(txn.files, ref.bindings, ref.shard)


@dataclass(frozen=True, slots=True)
class CallResult:
    """One participant's answer: ``error`` is empty on success; ``sink`` is the participant's name
    (:attr:`ParticipantRef.name`: the sink, or ``<sink>#<index>`` for a shard)."""

    sink: str
    vote: PrepareVote | None = None
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


class ParticipantFanout:
    """Sends one call to many participants at once and collects the answers within a deadline."""

    def __init__(self, connector: ParticipantConnector, max_workers: int = 64) -> None:
        self.connector = connector
        self._executor = futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="participant")

    def _call_all(
        self,
        refs: Sequence[ParticipantRef],
        call: Callable[[ParticipantConnection], T],
        timeout: float,
        what: str,
        on_done: Callable[[str, T | None, str], None] | None = None,
    ) -> dict[str, tuple[T | None, str]]:
        def run(client: ParticipantConnection) -> tuple[T | None, str]:
            try:
                answer: tuple[T | None, str] = (call(client), "")
            except OnceflowError as exc:
                answer = (None, str(exc))
            except Exception as exc:  # a participant client bug must not hang the protocol
                answer = (None, f"{type(exc).__name__}: {exc}")
            if on_done is not None:
                on_done(client.name, *answer)
            return answer

        pending = {self._executor.submit(run, self.connector.connect(ref)): ref for ref in refs}
        done, _ = futures.wait(pending, timeout=timeout)
        results: dict[str, tuple[T | None, str]] = {}
        for future, ref in pending.items():
            if future in done:
                results[ref.name] = future.result()
            else:
                results[ref.name] = (None, f"no answer to {what} within {timeout:g}s")
        return results

    def prepare_all(
        self, txn: Transaction, timeout: float, on_result: Callable[[CallResult], None] | None = None
    ) -> list[CallResult]:
        """Prepare on every participant of ``txn``; a missing answer within ``timeout`` is an error.

        ``on_result`` sees each answer as it arrives (answers after the timeout are not reported).
        """
        deadline = time.monotonic() + timeout

        def report(sink: str, vote: PrepareVote | None, error: str) -> None:
            if on_result is not None and time.monotonic() <= deadline:
                on_result(CallResult(sink, vote, error))

        answers = self._call_all(
            txn.participants,
            lambda client: client.prepare(txn.id, files_of(client.ref, txn), timeout),
            timeout,
            "Prepare",
            report,
        )
        return [CallResult(sink, vote, error) for sink, (vote, error) in answers.items()]

    def commit_all(self, txn: Transaction, refs: Sequence[ParticipantRef], timeout: float) -> list[CallResult]:
        """Commit on ``refs`` (the participants still missing an ack)."""
        answers = self._call_all(
            refs, lambda client: client.commit(txn.id, files_of(client.ref, txn), timeout), timeout, "Commit"
        )
        return [CallResult(sink, None, error) for sink, (_, error) in answers.items()]

    def abort_all(self, txn: Transaction, timeout: float) -> list[CallResult]:
        """Abort on every participant of ``txn`` (best effort: presumed abort needs no acks)."""
        answers = self._call_all(txn.participants, lambda client: client.abort(txn.id, timeout), timeout, "Abort")
        return [CallResult(sink, None, error) for sink, (_, error) in answers.items()]

    def submit(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the fanout's threads (background chores such as staging GC)."""
        self._executor.submit(fn)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
        self.connector.close()
