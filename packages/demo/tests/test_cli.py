"""``onceflow demo``'s options: what a resumed run may change (its pace) and what it may not (its input)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from onceflow.core.errors import InvalidConfig
from onceflow.demo.cli import add_arguments, options_from
from onceflow.demo.options import DEFAULT_EVENTS, DEFAULT_RATE, DEFAULT_SEED


def _options(*argv: str):  # type: ignore[no-untyped-def]
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return options_from(parser.parse_args(argv))


def test_a_new_run_takes_the_defaults_or_the_flags() -> None:
    options = _options()
    assert (options.events, options.rate, options.seed) == (DEFAULT_EVENTS, None, DEFAULT_SEED)
    assert options.new_state("r").rate == DEFAULT_RATE
    assert (_options("--events", "5", "--seed", "3", "--rate", "9").events, _options("--seed", "3").seed) == (5, 3)


def test_a_resumed_run_may_take_a_new_pace(tmp_path: Path) -> None:
    options = _options("--resume", "--run-dir", str(tmp_path), "--rate", "20000")
    assert options.resume and options.rate == 20_000


@pytest.mark.parametrize("flag", [("--events", "5"), ("--seed", "3"), ("--input", "access.log")])
def test_a_resumed_run_keeps_its_input(tmp_path: Path, flag: tuple[str, str]) -> None:
    (tmp_path / "access.log").write_text("")
    value = str(tmp_path / flag[1]) if flag[0] == "--input" else flag[1]
    with pytest.raises(InvalidConfig, match=f"{flag[0]}.*keeps the input it was started with"):
        _options("--resume", "--run-dir", str(tmp_path), flag[0], value)


def test_every_flag_reaches_its_option(tmp_path: Path) -> None:
    (tmp_path / "access.log").write_text("")
    options = _options(
        "--run-dir", str(tmp_path / "run"), "--trigger-ms", "100", "--chaos", "--chaos-interval", "3",
        "--input-after-job", "--chaos-seed", "4", "--postgres-dsn", "host=db", "--lakehouse", "--timeout", "60",
        "--plain", "--service-log-level", "DEBUG", "--input", str(tmp_path / "access.log"), "--follow",
        "--idle-timeout", "7", "--bootstrap-servers", "k:9092", "-X", "security.protocol=SSL",
        "--service-property", "spark:a=b",
    )  # fmt: skip
    assert options.run_dir == tmp_path / "run" and options.trigger_ms == 100
    assert (options.chaos, options.chaos_interval_s, options.chaos_seed) == (True, 3.0, 4)
    assert options.input_after_job and not _options().input_after_job
    assert (options.postgres_dsn, options.lakehouse, options.timeout_s, options.plain) == ("host=db", True, 60.0, True)
    assert options.service_log_level == "DEBUG" and options.input_path == tmp_path / "access.log"
    assert (options.follow, options.idle_timeout_s, options.bootstrap_servers) == (True, 7.0, "k:9092")
    assert options.kafka_properties == {"security.protocol": "SSL"}
    assert options.service_kafka_properties == {"spark": {"a": "b"}}
