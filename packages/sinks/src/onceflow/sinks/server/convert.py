"""Conversions between the participant domain types and the ``onceflow.v1`` messages."""

from __future__ import annotations

from onceflow.core.contract import TransactionId
from onceflow.proto.v1 import common_pb2

# Staged files and bindings convert with onceflow.core.contract.proto (one conversion for every service).


def txn_from_proto(message: common_pb2.TransactionId) -> TransactionId:
    return TransactionId(job=message.job, batch=message.batch)


def txn_to_proto(txn: TransactionId) -> common_pb2.TransactionId:
    return common_pb2.TransactionId(job=txn.job, batch=txn.batch)
