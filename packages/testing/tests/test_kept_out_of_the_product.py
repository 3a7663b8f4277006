"""The scaffolding stays out of the product: no product package imports it or depends on it, and
its pytest plugins are registered by this package alone."""

from __future__ import annotations

import ast
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

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


def test_no_product_package_depends_on_it() -> None:
    for package in PRODUCT:
        with (package / "pyproject.toml").open("rb") as fh:
            project = tomllib.load(fh)["project"]
        assert not any(dep.startswith("onceflow-testing") for dep in project.get("dependencies", [])), package.name
        assert "pytest11" not in project.get("entry-points", {}), f"{package.name} registers a pytest plugin"


def test_the_fixture_plugins_are_this_packages() -> None:
    plugins = {ep.name: ep.value for ep in entry_points(group="pytest11") if ep.value.startswith("onceflow.")}
    assert plugins == {
        "onceflow_broker": "onceflow.testing.broker.fixtures",
        "onceflow_postgres": "onceflow.testing.sinks.postgres",
        "onceflow_s3": "onceflow.testing.s3.fixtures",
        "onceflow_spark": "onceflow.testing.spark.fixtures",
    }
