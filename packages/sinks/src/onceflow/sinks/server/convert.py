"""Conversions between the participant domain types and the ``onceflow.v1`` messages."""

from __future__ import annotations

from collections.abc import Iterable

from onceflow.core.staging import StagedFile
from onceflow.proto.v1 import common_pb2
from onceflow.sinks.base import TxnId


def staged_file_from_proto(message: common_pb2.StagedFile) -> StagedFile:
    return StagedFile(uri=message.uri, count=message.count, sha256=message.sha256)


def staged_file_to_proto(file: StagedFile) -> common_pb2.StagedFile:
    return common_pb2.StagedFile(uri=file.uri, count=file.count, sha256=file.sha256)


def staged_files_from_proto(messages: Iterable[common_pb2.StagedFile]) -> list[StagedFile]:
    return [staged_file_from_proto(m) for m in messages]


def txn_from_proto(message: common_pb2.TransactionId) -> TxnId:
    return TxnId(job=message.job, batch=message.batch)


def txn_to_proto(txn: TxnId) -> common_pb2.TransactionId:
    return common_pb2.TransactionId(job=txn.job, batch=txn.batch)
