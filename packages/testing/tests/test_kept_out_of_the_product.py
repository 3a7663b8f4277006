"""The scaffolding stays out of the product: no product package imports it or depends on it, no
product package holds a fault implementation (a crash, a hold), and its pytest and fault plug-ins are
registered by this package alone."""

from __future__ import annotations

import ast
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

from onceflow.core.faults import PLUGIN_GROUP

ROOT = Path(__file__).resolve().parents[3]
PRODUCT = sorted(p for p in (ROOT / "packages").iterdir() if p.is_dir() and p.name != "testing")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_no_product_module_imports_the_scaffolding() -> None:
    offenders = [
        f"{source.relative_to(ROOT)} imports {name}"
        for package in PRODUCT
        for source in sorted((package / "src").rglob("*.py"))
        for name in sorted(_imports(source))
        if name == "onceflow.testing" or name.startswith("onceflow.testing.")
    ]
    assert offenders == []


def _fault_implementations(path: Path) -> list[str]:
    """What in ``path`` implements a fault: a ``FaultInjector`` other than the no-op one, an ``os._exit``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ClassDef) and node.name != "NoFaults":
            bases = {base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "") for base in node.bases}
            if "FaultInjector" in bases:
                found.append(f"class {node.name}(FaultInjector)")
        elif isinstance(node, ast.Attribute) and node.attr == "_exit":
            found.append(f"line {node.lineno}: ._exit")
    return found


def test_no_product_package_holds_a_fault_implementation() -> None:
    """Product modules reach fault points through the no-op interface only; every crash or hold that
    a test installs comes from this package (onceflow.testing.faults)."""
    offenders = [
        f"{source.relative_to(ROOT)}: {found}"
        for package in PRODUCT
        for source in sorted((package / "src").rglob("*.py"))
        for found in _fault_implementations(source)
    ]
    assert offenders == []


def test_no_product_package_depends_on_it() -> None:
    for package in PRODUCT:
        with (package / "pyproject.toml").open("rb") as fh:
            project = tomllib.load(fh)["project"]
        assert not any(dep.startswith("onceflow-testing") for dep in project.get("dependencies", [])), package.name
        assert "pytest11" not in project.get("entry-points", {}), f"{package.name} registers a pytest plugin"
        assert PLUGIN_GROUP not in project.get("entry-points", {}), f"{package.name} registers a fault plug-in"


def test_the_fixture_plugins_are_this_packages() -> None:
    plugins = {ep.name: ep.value for ep in entry_points(group="pytest11") if ep.value.startswith("onceflow.")}
    assert plugins == {
        "onceflow_broker": "onceflow.testing.broker.fixtures",
        "onceflow_postgres": "onceflow.testing.sinks.postgres",
        "onceflow_s3": "onceflow.testing.s3.fixtures",
        "onceflow_spark": "onceflow.testing.spark.fixtures",
    }


def test_the_fault_plugins_are_this_packages() -> None:
    plugins = {ep.name: ep.value for ep in entry_points(group=PLUGIN_GROUP)}
    assert plugins == {
        "coordinator": "onceflow.testing.faults.coordinator:from_env",
        "participant": "onceflow.testing.faults.participant:from_env",
        "consumer": "onceflow.testing.faults.consumer:from_env",
        "spark-sink": "onceflow.testing.faults.spark:from_env",
    }
