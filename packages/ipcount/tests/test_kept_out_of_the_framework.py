"""The IP-count example stays out of the framework: no product module imports it or names it, and no
product package depends on it, except the demo (which uses it as any user would).

``NOT_YET_MOVED`` listed the modules that still imported it until their IP-count parts moved here
(issue 24, item 1), and ``DEPENDING`` the packages that depended on it for them; both are empty now
and must stay so (a listed module that no longer imports the example fails too)."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
#: The example itself, the demo (a user of it) and the test scaffolding (not product).
USERS = {"ipcount", "demo", "testing"}
FRAMEWORK = sorted(p for p in (ROOT / "packages").iterdir() if p.is_dir() and p.name not in USERS)
#: Framework modules that still hold IP-count code, with what is left to move.
NOT_YET_MOVED: set[str] = set()
#: Framework packages that depend on the example because of ``NOT_YET_MOVED``.
DEPENDING: set[str] = set()


def _names_the_example(path: Path) -> bool:
    """Whether ``path`` imports ``onceflow.ipcount`` or names one of its modules in a string (an entry point)."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [node.value] if node.value.startswith("onceflow.ipcount") else []
        else:
            continue
        if any(name == "onceflow.ipcount" or name.startswith("onceflow.ipcount.") for name in names):
            return True
    return False


def test_no_framework_module_imports_or_names_the_example() -> None:
    naming = {
        str(source.relative_to(ROOT))
        for package in FRAMEWORK
        for source in sorted((package / "src").rglob("*.py"))
        if _names_the_example(source)
    }
    assert naming - NOT_YET_MOVED == set(), "the framework knows jobs, outputs and bindings, not the IP-count example"
    assert NOT_YET_MOVED - naming == set(), "moved out: take these off NOT_YET_MOVED"


def test_no_framework_package_depends_on_the_example() -> None:
    depending = set()
    for package in FRAMEWORK:
        with (package / "pyproject.toml").open("rb") as fh:
            project = tomllib.load(fh)["project"]
        if any(dep.startswith("onceflow-ipcount") for dep in project.get("dependencies", [])):
            depending.add(package.name)
    assert depending == DEPENDING


def test_the_check_sees_an_import_and_an_entry_point(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    for text, found in [
        ("from onceflow.ipcount.schema import IP_COUNT_TABLE\n", True),
        ("import onceflow.ipcount\n", True),
        ('ENTRYPOINT = "onceflow.ipcount.job:job"\n', True),
        ("from onceflow.contract import SinkBinding\n", False),
        ('NAME = "onceflow.ipcounting"\n', False),
    ]:
        module.write_text(text)
        assert _names_the_example(module) is found, text
