"""Offsets and options of the onceflow-kafka source, without a broker."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from onceflow.core.errors import InvalidConfig
from onceflow.spark.source import offsets as off
from onceflow.spark.source import parse_source_options


@given(
    backlog=st.dictionaries(st.integers(0, 7), st.integers(0, 10_000), min_size=1, max_size=8),
    limit=st.integers(1, 20_000),
)
def test_rate_limit_never_exceeds_the_budget_and_always_makes_progress(backlog: dict[int, int], limit: int) -> None:
    start = {p: 100 * p for p in backlog}
    available = {p: start[p] + n for p, n in backlog.items()}
    end = off.rate_limit(start, available, limit)
    admitted = sum(end[p] - start[p] for p in end)
    assert all(start[p] <= end[p] <= available[p] for p in end)
    assert admitted == min(limit, sum(backlog.values()))


def test_rate_limit_shares_the_budget_in_proportion_to_the_backlog() -> None:
    end = off.rate_limit({0: 0, 1: 0}, {0: 3000, 1: 1000}, 1000)
    assert end == {0: 750, 1: 250}


def test_offsets_round_trip_through_sparks_offset_dict() -> None:
    spark = off.to_spark("t", {1: 5, 0: 7})
    assert spark == {"t": {"0": 7, "1": 5}}
    assert off.from_spark("t", spark) == {0: 7, 1: 5}


def test_starting_offsets_json_keeps_the_earliest_and_latest_sentinels() -> None:
    assert off.parse_starting_offsets("earliest", "t") is None
    assert off.parse_starting_offsets('{"t": {"0": 42, "1": -2, "2": -1}}', "t") == {0: 42, 1: -2, 2: -1}
    with pytest.raises(InvalidConfig, match="startingOffsets"):
        off.parse_starting_offsets('{"other": {"0": 1}}', "t")
    with pytest.raises(InvalidConfig, match="startingOffsets"):
        off.parse_starting_offsets('{"t": {"0": -3}}', "t")


def test_options_pass_kafka_properties_through_and_protect_the_ones_the_source_owns() -> None:
    options = parse_source_options(
        {
            "kafka.bootstrap.servers": "127.0.0.1:9092",
            "subscribe": "ip_count_source",
            "kafka.security.protocol": "SASL_SSL",
            "maxoffsetspertrigger": "500",
            "failondataloss": "false",
        }
    )
    assert options.kafka_properties == {"security.protocol": "SASL_SSL"}
    assert options.max_offsets_per_trigger == 500
    assert options.isolation_level == "read_committed"
    assert not options.fail_on_data_loss
    assert options.client_config()["security.protocol"] == "SASL_SSL"
    with pytest.raises(InvalidConfig, match=r"kafka\.isolation\.level"):
        parse_source_options({"kafka.bootstrap.servers": "h:1", "subscribe": "t", "kafka.isolation.level": "x"})
    with pytest.raises(InvalidConfig, match="subscribe"):
        parse_source_options({"kafka.bootstrap.servers": "h:1"})
    with pytest.raises(InvalidConfig, match="maxOffsetsPerTrigger"):
        parse_source_options({"kafka.bootstrap.servers": "h:1", "subscribe": "t", "maxoffsetspertrigger": "0"})
