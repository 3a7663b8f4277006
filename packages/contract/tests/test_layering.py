"""The contract sits on core, and core never reaches up into it (issue 24, item 4): before the split,
``core.staging`` imported the contract and the contract imported staging, so neither could be read,
tested or shipped without the other."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGES = Path(__file__).resolve().parents[2]
CORE = PACKAGES / "core" / "src" / "onceflow" / "core"


def _imports(path: Path) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def test_core_never_imports_the_contract() -> None:
    found = sorted(
        f"{path.relative_to(CORE)}: {module}"
        for path in CORE.rglob("*.py")
        for module in _imports(path)
        if module == "onceflow.contract" or module.startswith("onceflow.contract.")
    )
    assert not found, f"core imports the contract (move the code, or the shared piece into core): {found}"


def test_the_check_sees_both_import_forms(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import onceflow.contract.txn\nfrom onceflow.contract import TransactionId\n")
    assert list(_imports(module)) == ["onceflow.contract.txn", "onceflow.contract"]
