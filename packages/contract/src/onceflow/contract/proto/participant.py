"""The participants' values (``participant.proto``) to and from their messages: the sinks' commit records."""

from __future__ import annotations

from collections.abc import Iterable

from onceflow.contract.commits import CommittedBatches, HostedCommits
from onceflow.contract.proto.common import shard_from_proto, shard_to_proto
from onceflow.proto.v1 import participant_pb2


def hosted_commits_to_proto(hosted: Iterable[HostedCommits]) -> participant_pb2.ListCommittedBatchesResponse:
    """ListCommittedBatches' answer: every sink (and its shard), and each sink's commit records per job."""
    sinks = list(hosted)
    return participant_pb2.ListCommittedBatchesResponse(
        jobs=[
            participant_pb2.CommittedBatches(
                sink=sink.sink,
                job=found.job,
                last_batch=found.last_batch,
                batches=found.batches,
                cumulative=found.cumulative,
            )
            for sink in sinks
            for found in sink.jobs
        ],
        sinks=[participant_pb2.HostedSink(sink=sink.sink, shard=shard_to_proto(sink.shard)) for sink in sinks],
    )


def hosted_commits_from_proto(message: participant_pb2.ListCommittedBatchesResponse) -> list[HostedCommits]:
    """One :class:`HostedCommits` per sink the answer names, in its order; ValueError for a shard out of range."""
    jobs: dict[str, list[CommittedBatches]] = {}
    for found in message.jobs:
        jobs.setdefault(found.sink, []).append(
            CommittedBatches(found.job, found.last_batch, tuple(found.batches), found.cumulative)
        )
    return [
        HostedCommits(
            sink=hosted.sink,
            shard=shard_from_proto(hosted.shard if hosted.HasField("shard") else None),
            jobs=tuple(jobs.get(hosted.sink, ())),
        )
        for hosted in message.sinks
    ]
