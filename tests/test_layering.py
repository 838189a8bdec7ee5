"""What may import what inside f5lite, checked on the import statements (read with `ast`, functions included).

The layers, from the bottom:

- `text`, `audio`, `sampling`: front ends and the sampler as functions on tensors; they import no other f5lite
  package, so they can be used (and tested) alone.
- `models`: the velocity networks, their checkpoint files and the optimizations applied from outside; never
  `train`, `infer`, `data`, `prepare` or `storage`.
- `config`: the typed schemas; it imports the lists of choices from the modules that implement them (models,
  sampling, audio, text), never `data`, `prepare`, `storage`, `train` or `infer`.
- `data` (what training reads) and `prepare` (`f5lite-prepare`, which writes it): `data` never imports `prepare`;
  neither imports `train`, `infer` or `storage`.
- `storage`: run directories, checkpoints, LoRA adapters, and `sources` (what is at a path); never `train` or
  `infer`, which both build on it.
- `infer`: never `train` (inference must not drag the trainer in).
- `eval`: speech metrics and the evaluation tool; never `train`, `data`, `prepare` or `storage` (the trainer calls
  it, not the other way round).
- Nothing imports `scripts` (benchmarks and tools stand outside the package).
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FORBIDDEN: dict[str, set[str]] = {
    "text": {"*"},
    "audio": {"*"},
    "sampling": {"*"},
    "models": {"train", "infer", "data", "prepare", "storage"},
    "config": {"data", "prepare", "storage", "train", "infer"},
    "data": {"prepare", "train", "infer", "storage"},
    "prepare": {"train", "infer", "storage"},
    "storage": {"train", "infer"},
    "infer": {"train"},
    "eval": {"train", "data", "prepare", "storage"},
}
"""For each f5lite package, the f5lite packages it must not import (`*`: any other one)."""


def imported_modules(path: Path) -> set[str]:
    """Every module named by an import statement anywhere in the file."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def violations(package_root: Path) -> list[str]:
    """Forbidden imports in the package rooted at `package_root` (a directory named `f5lite`)."""
    found = []
    for path in sorted(package_root.rglob("*.py")):
        parts = path.relative_to(package_root).parts
        if len(parts) < 2:
            continue  # top-level modules (the public API, paths, pretrained) may use any package
        package, where = parts[0], path.relative_to(package_root.parent)
        banned = FORBIDDEN.get(package, set())
        targets = set()
        for module in imported_modules(path):
            head, _, rest = module.partition(".")
            if head == "scripts":
                found.append(f"{where} imports {module}: nothing imports scripts")
            elif head == "f5lite" and rest:
                targets.add(rest.split(".")[0])
        for target in sorted(targets):
            if target != package and (package_root / target).is_dir() and ("*" in banned or target in banned):
                found.append(f"{where} imports f5lite.{target}: {package} must not import {target}")
    return found


def test_f5lite_keeps_its_layers() -> None:
    assert violations(ROOT / "f5lite") == []


def test_tests_and_the_package_do_not_import_scripts() -> None:
    for folder in (ROOT / "f5lite", ROOT / "tests"):
        for path in folder.rglob("*.py"):
            assert not any(m == "scripts" or m.startswith("scripts.") for m in imported_modules(path)), path


def test_a_forbidden_import_is_caught(tmp_path: Path) -> None:
    """The checker on a copy of the package with planted imports across the layers."""
    copy = tmp_path / "f5lite"
    shutil.copytree(ROOT / "f5lite", copy, ignore=shutil.ignore_patterns("__pycache__", "demo_data"))
    assert violations(copy) == []
    (copy / "infer" / "cheat.py").write_text("def f():\n    from f5lite.train.trainer import Trainer\n")
    (copy / "sampling" / "cheat.py").write_text("import f5lite.models\n")
    (copy / "models" / "cheat.py").write_text("from f5lite import data\n")
    (copy / "eval" / "cheat.py").write_text("from f5lite.train import export\n")
    found = violations(copy)
    assert len(found) == 4, found
    assert any("infer must not import train" in v for v in found)
    assert any("sampling must not import models" in v for v in found)
    assert any("models must not import data" in v for v in found)
    assert any("eval must not import train" in v for v in found)
