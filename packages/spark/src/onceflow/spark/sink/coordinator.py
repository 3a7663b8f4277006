"""What the coordinator's typed errors mean to a Spark driver (the calls themselves go through the
contract's :class:`onceflow.contract.clients.CoordinatorClient`).

- :class:`~onceflow.contract.clients.WriterFenced` -> :class:`WriterFencedError` (another driver
  owns the job);
- a refused RegisterParticipants (a binding that does not fit a sink) -> :class:`JobDefinitionError`;
- anything else that fails -> :class:`CoordinatorUnavailable`, naming the call and the status.

The errors cross the JVM as text, so Spark's restart loop recognises them by their tags
(:func:`onceflow.spark.exceptions.is_fenced`): they stay Spark's own classes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import grpc

from onceflow.contract.clients import RpcFailed, WriterFenced
from onceflow.spark.exceptions import CoordinatorUnavailable, JobDefinitionError, WriterFencedError

#: RegisterParticipants answers these when a binding does not fit a sink (a table's column, a type).
_REFUSED = {grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.INVALID_ARGUMENT}


def coordinator_error(exc: RpcFailed, operation: str, job: str, epoch: int, target: str) -> Exception:
    """The driver's error for a failed coordinator call (``target``: the coordinator(s) asked)."""
    if isinstance(exc, WriterFenced):
        return WriterFencedError(job, epoch, exc.details())
    if operation == "RegisterParticipants" and exc.code() in _REFUSED:
        return JobDefinitionError(job, exc.details())
    return CoordinatorUnavailable(operation, job, f"{exc.code().name}: {exc.details()} (coordinator {target})")


@contextmanager
def coordinator_errors(operation: str, job: str, epoch: int, target: str) -> Iterator[None]:
    """Raise :func:`coordinator_error` for a coordinator call that fails inside the block."""
    try:
        yield
    except RpcFailed as exc:
        raise coordinator_error(exc, operation, job, epoch, target) from None
