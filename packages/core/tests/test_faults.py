"""The product's fault injection: one interface, nothing by default, a plug-in only where one is installed."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.metadata import EntryPoint

import pytest

from onceflow.core import faults
from onceflow.core.faults import NO_FAULTS, PLUGIN_GROUP, FaultInjector, installed_faults


@pytest.fixture(autouse=True)
def fresh_lookup() -> Iterator[None]:
    installed_faults.cache_clear()
    yield
    installed_faults.cache_clear()


def test_a_process_without_a_plugin_has_no_faults() -> None:
    assert installed_faults("no-such-process") is NO_FAULTS
    NO_FAULTS.at("anything", txn="j:1")  # does nothing


def _plugins(monkeypatch: pytest.MonkeyPatch, *values: str) -> None:
    def entry_points(*, group: str, name: str) -> list[EntryPoint]:
        assert group == PLUGIN_GROUP
        return [EntryPoint(name, value, group) for value in values]

    monkeypatch.setattr(faults, "entry_points", entry_points)


class Counting(FaultInjector):
    built = 0

    def __init__(self) -> None:
        Counting.built += 1

    def at(self, point: str, **ids: object) -> None:
        return None


def test_the_plugin_is_built_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    _plugins(monkeypatch, f"{__name__}:Counting")
    monkeypatch.setattr(Counting, "built", 0)
    first = installed_faults("svc")
    assert isinstance(first, Counting)
    assert installed_faults("svc") is first and Counting.built == 1


def test_a_plugin_that_is_no_injector_or_ambiguous_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    _plugins(monkeypatch, "builtins:object")
    with pytest.raises(TypeError, match=r"builtins:object returned .* not a FaultInjector"):
        installed_faults("svc")
    _plugins(monkeypatch, f"{__name__}:Counting", "other:Counting")
    with pytest.raises(RuntimeError, match=r"2 onceflow\.faults plug-ins for 'other-svc'"):
        installed_faults("other-svc")
