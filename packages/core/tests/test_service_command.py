"""ServiceCommand: the settings model is what the service factory takes, and --config's help names
the shipped config file."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from onceflow.core.service import ServiceCommand
from onceflow.core.settings import Settings


class FactorySettings(Settings):
    """Settings of the test factories."""


def typed_factory(settings: FactorySettings) -> Any:
    raise AssertionError("not called")


def untyped_factory(settings) -> Any:  # type: ignore[no-untyped-def]
    raise AssertionError("not called")


def wrong_factory(settings: int) -> Any:
    raise AssertionError("not called")


def _command(factory: str, **options: Any) -> ServiceCommand:
    return ServiceCommand(name="thing", help="h", description="d", service=f"{__name__}:{factory}", **options)


def test_the_settings_model_is_the_factorys_first_parameter() -> None:
    assert _command("typed_factory").settings_model() is FactorySettings


@pytest.mark.parametrize("factory", ["untyped_factory", "wrong_factory"])
def test_a_factory_that_takes_no_settings_model_is_a_type_error_naming_it(factory: str) -> None:
    with pytest.raises(TypeError, match=f"{factory} must take a Settings model"):
        _command(factory).settings_model()


@pytest.mark.parametrize(
    ("options", "shipped"),
    [({}, "services/thing/thing.toml"), ({"config_file": "services/x/y.toml"}, "services/x/y.toml")],
)
def test_config_help_names_the_shipped_file(options: dict[str, Any], shipped: str) -> None:
    parser = argparse.ArgumentParser()
    _command("typed_factory", **options).add_arguments(parser)
    assert f"(see {shipped})" in parser.format_help()
