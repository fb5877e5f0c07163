"""The package's import rules (CONTRIBUTING.md section 2), read from the source: device
placement below the algorithm protocol, the core below the families, no reach into the
repository."""

import ast
from pathlib import Path

import pytest

from jaxopt_icml import FAMILIES

PACKAGE = Path(__file__).resolve().parents[1] / "jaxopt_icml"
CORE = sorted(p for p in PACKAGE.rglob("*.py")
              if p.relative_to(PACKAGE).parts[0] not in FAMILIES)


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports (``from a import b`` gives ``a`` and ``a.b``)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{alias.name}" for alias in node.names)
    return out


def _package_imports(path):
    return {m for m in _imports(path) if m.startswith("jaxopt_icml")}


def test_sharding_imports_nothing_from_the_package():
    assert not _package_imports(PACKAGE / "sharding.py")


def test_base_imports_sharding_not_mesh():
    imports = _package_imports(PACKAGE / "base.py")
    assert "jaxopt_icml.sharding" in imports
    assert not any(m.startswith("jaxopt_icml.mesh") for m in imports), imports


@pytest.mark.parametrize("path", CORE, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_core_modules_import_no_family_and_nothing_outside_the_package(path):
    imports = _imports(path)
    families = {m for m in imports
                if m.split(".")[0] == "jaxopt_icml" and len(m.split(".")) > 1
                and m.split(".")[1] in FAMILIES}
    assert not families, f"{path.name} imports families {sorted(families)}"
    outside = {m for m in imports if m.split(".")[0] in ("experiments", "tests", "colab")}
    assert not outside, f"{path.name} imports {sorted(outside)}"


def test_the_rules_can_fail(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from jaxopt_icml import minimax\nimport experiments.runner\n")
    imports = _imports(bad)
    assert "jaxopt_icml.minimax" in imports and "experiments.runner" in imports
