"""The monorepo keeps its shape: packages, BUILD files, Pants source roots, requirements, stubs."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = sorted(p for p in (ROOT / "packages").iterdir() if p.is_dir())


def _requirement_name(spec: str) -> str:
    return re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0].strip().lower()


def _pyproject(path: Path) -> dict:  # type: ignore[type-arg]
    with (path / "pyproject.toml").open("rb") as fh:
        return tomllib.load(fh)


def test_top_level_layout() -> None:
    for name in ["packages", "services", "proto", "deploy", "tests", "docs", "bench"]:
        assert (ROOT / name).is_dir(), name
    for name in ["pants.toml", "Makefile", "README.md", ".ci/run", "uv.lock", "pyproject.toml", "BUILD"]:
        assert (ROOT / name).is_file(), name


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_package_layout(package: Path) -> None:
    name = package.name
    assert _pyproject(package)["project"]["name"] == f"onceflow-{name}"
    assert (package / "src" / "onceflow" / name / "__init__.py").is_file()
    assert (package / "src" / "onceflow" / name / "py.typed").is_file()
    assert not (package / "src" / "onceflow" / "__init__.py").exists(), "onceflow is a PEP 420 namespace"
    assert any((package / "tests").glob("**/test_*.py")), f"{name} has no tests"
    assert (package / "BUILD").is_file(), f"{name} has no BUILD file"


def test_workspace_installs_every_package() -> None:
    root = _pyproject(ROOT)
    assert root["tool"]["uv"]["workspace"]["members"] == ["packages/*"]
    deps = {_requirement_name(d) for d in root["project"]["dependencies"]}
    assert deps == {f"onceflow-{p.name}" for p in PACKAGES}


def test_every_pants_source_root_exists_and_every_package_has_roots() -> None:
    with (ROOT / "pants.toml").open("rb") as fh:
        roots = tomllib.load(fh)["source"]["root_patterns"]
    for root in roots:
        assert (ROOT / root.lstrip("/")).is_dir(), f"pants.toml source root {root} does not exist"
    for package in PACKAGES:
        assert f"/packages/{package.name}/src" in roots
        assert f"/packages/{package.name}/tests" in roots


def test_pants_build_files_name_their_package() -> None:
    for package in PACKAGES:
        build = (package / "BUILD").read_text()
        assert f"src/onceflow/{package.name}/**/*.py" in build
        assert f'python_artifact(name="onceflow-{package.name}"' in build


def test_pants_requirements_cover_every_third_party_dependency() -> None:
    pinned = {
        _requirement_name(line)
        for line in (ROOT / "pants-requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    needed: set[str] = set()
    for package in PACKAGES:
        needed |= {_requirement_name(d) for d in _pyproject(package)["project"].get("dependencies", [])}
    needed |= {_requirement_name(d) for d in _pyproject(ROOT)["dependency-groups"]["dev"]}
    needed = {n for n in needed if not n.startswith("onceflow-") and n not in {"ruff", "mypy"}}
    assert needed - pinned == set(), "add these to pants-requirements.txt"
    assert pinned - needed == set(), "no package uses these any more"


def test_generated_grpc_stubs_are_fresh() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "proto" / "generate.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


def test_ci_runs_exactly_make_test() -> None:
    commands = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert commands[-1] == "exec make test"
