"""The product's fault injection: one interface, nothing by default, a plug-in only where one is installed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from onceflow.core.faults import NO_FAULTS, PLUGIN_GROUP, FaultInjector, installed_faults
from onceflow.core.plugins import PluginError
from onceflow.testing.plugins import installed_entry_points


@pytest.fixture(autouse=True)
def fresh_lookup() -> Iterator[None]:
    installed_faults.cache_clear()
    yield
    installed_faults.cache_clear()


def test_a_process_without_a_plugin_has_no_faults() -> None:
    assert installed_faults("no-such-process") is NO_FAULTS
    NO_FAULTS.at("anything", txn="j:1")  # does nothing


class Counting(FaultInjector):
    built = 0

    def __init__(self) -> None:
        Counting.built += 1

    def at(self, point: str, **ids: object) -> None:
        return None


def test_the_plugin_is_built_once_per_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Counting, "built", 0)
    with installed_entry_points(tmp_path, {PLUGIN_GROUP: {"svc": f"{__name__}:Counting"}}):
        first = installed_faults("svc")
    assert isinstance(first, Counting)
    assert installed_faults("svc") is first and Counting.built == 1


def test_a_plugin_that_is_no_injector_or_ambiguous_is_refused(tmp_path: Path) -> None:
    with (
        installed_entry_points(tmp_path / "object", {PLUGIN_GROUP: {"svc": "builtins:object"}}),
        pytest.raises(PluginError, match=r"'svc' \(builtins:object\) built <object .*>, not a FaultInjector"),
    ):
        installed_faults("svc")
    with (
        installed_entry_points(tmp_path / "one", {PLUGIN_GROUP: {"other-svc": f"{__name__}:Counting"}}),
        installed_entry_points(tmp_path / "two", {PLUGIN_GROUP: {"other-svc": "onceflow.core.faults:NoFaults"}}),
        pytest.raises(RuntimeError, match=r"2 onceflow\.faults plug-ins for 'other-svc'"),
    ):
        installed_faults("other-svc")
