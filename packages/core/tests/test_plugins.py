"""The one entry-point loader: the installed workspace's real entry points, and a real distribution put
on ``sys.path`` for the broken ones (``importlib.metadata`` finds it like any installed one)."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import pytest

from onceflow.core.faults import PLUGIN_GROUP, FaultInjector, NoFaults
from onceflow.core.plugins import CALLABLE, PluginError, load_group
from onceflow.testing.plugins import installed_entry_points

GROUP = "onceflow.test-plugins"


def test_an_installed_group_loads_in_name_order() -> None:
    """onceflow-testing registers the fault plug-ins of three processes."""
    factories = load_group(PLUGIN_GROUP, kind=CALLABLE)
    names = [plugin.name for plugin in factories]
    assert names == sorted(entry.name for entry in entry_points(group=PLUGIN_GROUP))
    assert {"consumer", "coordinator", "participant"} <= set(names)
    (coordinator,) = load_group(PLUGIN_GROUP, kind=CALLABLE, name="coordinator")
    assert coordinator.value == "onceflow.testing.faults.coordinator:from_env"
    assert coordinator.entry.group == PLUGIN_GROUP and coordinator.target.__name__ == "from_env"
    assert load_group(PLUGIN_GROUP, name="no-such-process") == []


def test_a_kind_is_checked_and_every_failure_names_the_entry_point(tmp_path: Path) -> None:
    entries = {
        "good": "onceflow.core.faults:NoFaults",
        "missing": "onceflow.nowhere:Thing",
        "no-attr": "onceflow.core.faults:Nothing",
        "instance": "onceflow.core.faults:NO_FAULTS",
    }
    with installed_entry_points(tmp_path, {GROUP: entries}):
        with pytest.raises(PluginError) as raised:
            load_group(GROUP, kind=FaultInjector)
        assert (raised.value.group, raised.value.name, raised.value.value) == (GROUP, "instance", entries["instance"])
        assert str(raised.value) == (
            f"{GROUP} entry point 'instance' (onceflow.core.faults:NO_FAULTS) is not a FaultInjector class"
        )
        skipped: list[PluginError] = []
        (good,) = load_group(GROUP, kind=FaultInjector, on_error=skipped.append)
    assert good.name == "good" and good.target is NoFaults
    assert [(e.name, e.reason.split(":")[0]) for e in skipped] == [
        ("instance", "is not a FaultInjector class"),
        ("missing", "does not load"),
        ("no-attr", "does not load"),
    ]
    assert "ModuleNotFoundError" in skipped[1].reason and "AttributeError" in skipped[2].reason


def test_callable_plugins_and_no_kind(tmp_path: Path) -> None:
    entries = {"factory": "onceflow.core.faults:NoFaults", "text": "onceflow.core.faults:PLUGIN_GROUP"}
    with installed_entry_points(tmp_path, {GROUP: entries}):
        with pytest.raises(PluginError, match=r"'text' \(onceflow.core.faults:PLUGIN_GROUP\) is not callable"):
            load_group(GROUP, kind=CALLABLE)
        assert [p.target for p in load_group(GROUP)] == [NoFaults, "onceflow.faults"]
    assert load_group(GROUP) == []  # the distribution is gone with its sys.path entry


def test_no_other_product_module_reads_entry_points() -> None:
    """One loader: every entry-point group is read through ``load_group``."""
    packages = Path(__file__).resolve().parents[2]
    readers = [
        str(path.relative_to(packages))
        for path in sorted(packages.glob("*/src/onceflow/**/*.py"))
        if "entry_points" in path.read_text()
    ]
    # onceflow-testing (test scaffolding, no product package) writes entry points for tests
    assert readers == ["core/src/onceflow/core/plugins.py", "testing/src/onceflow/testing/plugins.py"]
