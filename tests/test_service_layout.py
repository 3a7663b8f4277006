"""Every service is in the same place (issue 24): its ``Service`` in ``onceflow.<package>.service``, its
command one :class:`ServiceCommand` declaration in ``onceflow.<package>.command``, one ready-file module."""

from __future__ import annotations

import ast
import re
from importlib.metadata import entry_points
from pathlib import Path
from pkgutil import resolve_name

import pytest

from onceflow.core.service import ServiceCommand
from onceflow.core.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = sorted(p for p in (ROOT / "packages").glob("*/src/onceflow/*") if p.is_dir() and p.name != "testing")
#: The only module that writes or reads ready files.
READY_FILE_MODULE = ROOT / "packages/core/src/onceflow/core/service/ready_file.py"


def _modules() -> list[tuple[Path, ast.Module]]:
    return [(path, ast.parse(path.read_text(), str(path))) for package in PRODUCT for path in package.rglob("*.py")]


MODULES = _modules()


def _where(path: Path) -> tuple[str, str]:
    """(package, path inside it) of a product module."""
    package = path.relative_to(ROOT / "packages").parts[0]
    return package, "/".join(path.relative_to(ROOT / "packages" / package / "src" / "onceflow" / package).parts)


#: The service bases (``onceflow.core.service``): a class on one of them is a service.
SERVICE_BASES = {"Service", "GrpcService"}


def test_every_service_class_lives_in_its_packages_service_module() -> None:
    found = []
    for path, tree in MODULES:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(getattr(b, "id", None) in SERVICE_BASES for b in node.bases):
                package, inner = _where(path)
                if package == "core" and inner.startswith("service/"):
                    continue  # the bases themselves
                found.append((package, node.name))
                assert inner == "service.py", (
                    f"{node.name} is a Service in {path.relative_to(ROOT)}: it belongs in onceflow.{package}.service"
                )
    assert {package for package, _ in found} >= {"broker", "consumer", "coordinator", "runtime", "sinks", "spark"}
    # a service is one module, not a package beside it (core's ``service`` package is the serve loop)
    packages = [p.relative_to(ROOT) for p in PRODUCT if p.name != "core" and any((p / "service").glob("*.py"))]
    assert not packages, f"a service package; its Service belongs in service.py, the rest in modules: {packages}"


def test_commands_are_declared_only_in_command_modules_and_run_only_by_core() -> None:
    for path, tree in MODULES:
        package, inner = _where(path)
        calls = {
            node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        }
        if "ServiceCommand" in calls:
            assert inner == "command.py", f"{path.relative_to(ROOT)} declares a service command outside command.py"
        if package != "core":
            assert not calls & {"run_service", "serve_until_signalled"}, (
                f"{path.relative_to(ROOT)} runs a service itself: declare a ServiceCommand instead"
            )


def _service_commands() -> dict[str, ServiceCommand]:
    commands = {}
    for entry_point in entry_points(group="onceflow.cli"):
        if entry_point.attr.endswith("COMMAND.register"):
            commands[entry_point.name] = resolve_name(entry_point.value.removesuffix(".register"))
    return commands


def test_every_service_command_is_a_declaration_whose_references_resolve() -> None:
    commands = _service_commands()
    assert set(commands) == {"broker", "consumer", "coordinator", "participant", "connect-worker"}
    from onceflow.spark.command import COMMAND, JOB_COMMAND
    from onceflow.spark.submit import SUBMIT_COMMAND

    for command in [*commands.values(), COMMAND, JOB_COMMAND, SUBMIT_COMMAND]:
        assert isinstance(command, ServiceCommand)
        model = command.settings_model()
        assert issubclass(model, Settings) and model.__module__.startswith("onceflow."), model
        shipped = command.config_file or f"services/{command.name}/{command.name}.toml"
        assert (ROOT / shipped).is_file(), f"{command.name}: --config's help points to {shipped}, which is missing"
        module = command.service.partition(":")[0]
        assert module.endswith(".service"), f"{command.name}'s service is not in its package's service module"
        assert callable(resolve_name(command.service)), command.service
        for error in command.unreachable:
            kind = resolve_name(error)
            assert isinstance(kind, type) and issubclass(kind, BaseException), error


@pytest.mark.parametrize("package", ["broker", "consumer", "coordinator", "sinks", "runtime", "spark"])
def test_python_m_runs_the_declaration(package: str) -> None:
    main = (ROOT / "packages" / package / "src/onceflow" / package / "__main__.py").read_text()
    assert f"from onceflow.{package}.command import COMMAND" in main
    assert "COMMAND.main(" in main


def test_one_ready_file_module() -> None:
    for path, tree in MODULES:
        if path == READY_FILE_MODULE:
            continue
        names = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        own = {name for name in names if re.search(r"(read|write|clear|remove)_ready", name)}
        assert not own, f"{path.relative_to(ROOT)} handles ready files itself ({own}): use core.service.ready_file"
