"""The client configurations of onceflow's roles: what each adds to the base, and what the base keeps."""

from __future__ import annotations

from onceflow.core.kafka import FETCH_DEFAULTS, reader_config


def test_a_reader_does_not_pause_its_fetches_for_a_second_when_its_queue_fills() -> None:
    config = reader_config({"bootstrap.servers": "b:9092"}, group_prefix="g-", isolation_level="read_committed")

    # librdkafka's default (1000 ms) idles a consumer that drains its queue quickly for up to a second
    assert config["fetch.queue.backoff.ms"] == FETCH_DEFAULTS["fetch.queue.backoff.ms"] == 10
    assert config["enable.partition.eof"] is True
    assert config["isolation.level"] == "read_committed"
    assert config["group.id"].startswith("g-")


def test_a_fetch_setting_in_the_base_wins_over_the_default_but_the_role_settings_do_not_move() -> None:
    base = {"bootstrap.servers": "b:9092", "fetch.queue.backoff.ms": 250, "enable.auto.commit": True}

    config = reader_config(base, group_prefix="g-", isolation_level="read_uncommitted", **{"fetch.wait.max.ms": 100})

    assert config["fetch.queue.backoff.ms"] == 250
    assert config["enable.auto.commit"] is False  # a reader commits nothing, whatever the base says
    assert config["fetch.wait.max.ms"] == 100
