"""Shared helpers of the sink tests: staging rows for a batch, and the bindings they are written with."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from onceflow.contract import SinkBinding
from onceflow.contract.staging import StagedFile, StagingWriter
from onceflow.core.avro import IpCount
from onceflow.ipcount.schema import IP_COUNT_ARROW_SCHEMA, ip_count_table_binding, ip_count_topic_binding
from onceflow.sinks.base import SinkParticipant
from onceflow.sinks.kafka import KafkaParticipant

Stage = Callable[..., list[StagedFile]]

W0 = 1_700_000_000_000
W1 = W0 + 5_000


def row(ip: str, count: int, window_start: int = W0) -> IpCount:
    return IpCount(window_start=window_start, window_end=window_start + 5_000, ip=ip, count=count)


def bound(sink: SinkParticipant) -> list[SinkBinding]:
    """The bindings a job writing the IP-count example's results to ``sink`` gives with each request (a
    participant has none of its own): its ``ip_counts`` table, or for Kafka its results topic."""
    if isinstance(sink, KafkaParticipant):
        return [ip_count_topic_binding(sink.name, sink.topic)]
    return [ip_count_table_binding(sink.name)]


@pytest.fixture
def staging_root(tmp_path: Path) -> Path:
    root = tmp_path / "staging"
    root.mkdir()
    return root


@pytest.fixture
def stage(staging_root: Path) -> Stage:
    """``stage(job, batch, rows, *more_files)``: write each list of rows as one staged file of the batch."""

    def write(job: str, batch: int, *files: Sequence[IpCount]) -> list[StagedFile]:
        writer = StagingWriter(str(staging_root), job, batch)
        return [writer.write(f"part-{i}-attempt-0", rows, IP_COUNT_ARROW_SCHEMA) for i, rows in enumerate(files)]

    return write
