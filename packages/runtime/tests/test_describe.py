"""``onceflow connect describe``: every setting of every installed plugin, without a worker."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from onceflow.runtime.plugins import PluginRegistry
from onceflow.runtime.worker.worker import connector_config_def
from onceflow.testing.plugins import installed_entry_points

ONCEFLOW = Path(sys.executable).parent / "onceflow"


def test_describe_lists_every_setting_with_type_default_and_description() -> None:
    result = subprocess.run(
        [str(ONCEFLOW), "connect", "describe"], capture_output=True, text=True, timeout=60, check=True
    )
    registry = PluginRegistry.discover()
    assert registry.plugins()
    for plugin in registry.plugins():
        assert f"{plugin.name} ({plugin.connector_type.value} connector" in result.stdout
        settings = connector_config_def(plugin.connector_class).keys()
        for key in settings:
            assert f"  {key.name}  {key.type.value}  default " in result.stdout, key.name
            assert key.doc in result.stdout
    assert "end.of.input  string  default never  (one of never, eof, idle)" in result.stdout


def test_describe_names_an_unknown_plugin() -> None:
    result = subprocess.run(
        [str(ONCEFLOW), "connect", "describe", "no-such-plugin"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "no-such-plugin" in result.stderr


def test_a_broken_connector_plugin_is_skipped(tmp_path: Path) -> None:
    """A worker runs the connectors that load; the others are logged and left out."""
    broken = {"broken": "onceflow.nowhere:Connector", "not-a-connector": "onceflow.runtime.plugins:PluginRegistry"}
    with installed_entry_points(tmp_path, {"onceflow.connectors": broken}):
        names = [plugin.name for plugin in PluginRegistry.discover().plugins()]
    assert "access-log-file" in names and "broken" not in names and "not-a-connector" not in names
