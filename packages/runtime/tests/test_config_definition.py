"""Connector configs are checked against their declared definition; errors name the setting."""

from __future__ import annotations

import pytest

from onceflow.core.errors import InvalidConfig
from onceflow.runtime.config import ConfigDef, ConfigType, load_connector_file, source_config_def
from onceflow.runtime.config.files import parse_properties


def test_parse_gives_typed_values_and_defaults() -> None:
    parsed = source_config_def().parse({"name": "gen", "connector.class": "x", "tasks.max": "3"})
    assert parsed.get_int("tasks.max") == 3
    assert parsed.get_str("transaction.boundary") == "interval"
    assert parsed.get_int("transaction.boundary.interval.ms") == 100


@pytest.mark.parametrize(
    ("config", "setting", "fragment"),
    [
        ({"connector.class": "x"}, "name", "required"),
        ({"name": "a", "connector.class": "x", "tasks.max": "many"}, "tasks.max", "integer"),
        ({"name": "a", "connector.class": "x", "tasks.max": "0"}, "tasks.max", ">= 1"),
        ({"name": "a", "connector.class": "x", "transaction.boundary": "never"}, "transaction.boundary", "poll"),
        ({"name": "a/b", "connector.class": "x"}, "name", "slashes"),
    ],
)
def test_bad_values_name_the_setting(config: dict[str, str], setting: str, fragment: str) -> None:
    with pytest.raises(InvalidConfig) as info:
        source_config_def().parse(config)
    assert info.value.setting == setting
    assert fragment in str(info.value)


def test_validate_reports_every_problem() -> None:
    definition = (
        ConfigDef().define("a", ConfigType.INT, "an int").define("b", ConfigType.BOOLEAN, "a flag", default=False)
    )
    results = {r.name: r.errors for r in definition.validate({"b": "maybe"})}
    assert results["a"] and "required" in results["a"][0]
    assert results["b"] == ["expected true or false, got 'maybe'"]


def test_connector_files_json_and_properties(tmp_path: pytest.TempPathFactory) -> None:
    json_file = tmp_path / "gen.json"  # type: ignore[operator]
    json_file.write_text('{"name": "gen", "config": {"connector.class": "access-log-generator", "count": 10}}')
    assert load_connector_file(json_file) == (
        "gen",
        {"connector.class": "access-log-generator", "count": "10", "name": "gen"},
    )
    props = tmp_path / "tail.properties"  # type: ignore[operator]
    props.write_text("# comment\nname=tail\nconnector.class = access-log-file\nfile=/var/log/a.log\n")
    assert load_connector_file(props)[1]["file"] == "/var/log/a.log"
    with pytest.raises(InvalidConfig, match="expected key=value"):
        parse_properties("just words")
