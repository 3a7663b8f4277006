"""Errors of the sink participants. Each names the sink and the transaction it concerns."""

from __future__ import annotations

from collections.abc import Sequence

from onceflow.core.errors import OnceflowError


class SinkError(OnceflowError):
    """A sink participant could not do what it was asked."""


class PrepareRejected(SinkError):  # noqa: N818 - a vote, not a crash
    """The sink refuses to prepare a transaction; the participant votes no with this reason."""


class TransactionNotPrepared(SinkError):  # noqa: N818
    """Commit of a transaction this sink never prepared (and no staged files to redo it from)."""

    def __init__(self, sink: str, txn: object) -> None:
        self.sink = sink
        self.txn = txn
        super().__init__(f"sink {sink!r} cannot commit transaction {txn}: it was never prepared here (or was aborted)")


class TransactionAlreadyCommitted(SinkError):  # noqa: N818
    """Abort of a transaction this sink has already committed: the decision cannot be undone."""

    def __init__(self, sink: str, txn: object) -> None:
        self.sink = sink
        self.txn = txn
        super().__init__(f"sink {sink!r} cannot abort transaction {txn}: it is already committed")


class PreparedTransactionsDisabled(SinkError):  # noqa: N818
    """PostgreSQL runs with ``max_prepared_transactions = 0``, so it cannot take part in 2PC."""

    def __init__(self, sink: str, value: int) -> None:
        self.setting = "max_prepared_transactions"
        super().__init__(
            f"sink {sink!r}: PostgreSQL setting max_prepared_transactions is {value}; two-phase commit needs it > 0 "
            "(set it in postgresql.conf and restart the server)"
        )


class BindingRejected(SinkError):  # noqa: N818 - the job's binding does not fit this sink
    """A job's binding cannot be written here: an existing table whose columns or keys do not fit
    the output, or a type the sink cannot store. The message names the table (or topic), the column
    and the mismatch; the job fails at start, before any batch runs."""

    def __init__(self, sink: str, where: str, message: str) -> None:
        self.sink = sink
        self.where = where
        super().__init__(f"sink {sink!r}, {where}: {message}")


class BindingMissing(BindingRejected):
    """A transaction (or a job's registration) reached this sink without bindings: a participant has
    none of its own, so it cannot know where the job's rows go. The message names the job and the
    outputs left unbound; the job's ``[[outputs.<name>]]`` entries say which table or topic of which
    sink each output is written to."""

    def __init__(self, sink: str, job: str, outputs: Sequence[str]) -> None:
        self.job = job
        self.outputs = tuple(outputs)
        names = ", ".join(repr(output) for output in self.outputs)
        super().__init__(
            sink,
            f"job {job!r}",
            f"no binding for output {names}: a participant writes only what the job's bindings say (declare "
            f"[[outputs.<name>]] with sink = {sink!r} and its table or topic in the job's config)",
        )


class ShardMismatch(SinkError):  # noqa: N818 - a request for a share of the sink this process does not serve
    """The coordinator addressed this participant as another shard of its sink (another index or count)
    than its configuration says: one of the two is misconfigured, and nothing is written."""

    def __init__(self, sink: str, serves: object, asked: object) -> None:
        self.sink = sink
        super().__init__(
            f"sink {sink!r}: this participant serves {serves} (its [[sinks]] shard and shards settings), but the "
            f"coordinator addressed {asked}: start every shard of a sink with the same shards count and its own "
            "index, and register one participant target per shard, in index order"
        )
