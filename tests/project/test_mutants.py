"""scripts/mutants.py: every planted bug still applies to today's source (the run itself is `make test-mutants`)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_mutants():
    spec = importlib.util.spec_from_file_location("mutants", ROOT / "scripts" / "mutants.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutants"] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_every_mutant_applies_once_and_names_existing_tests() -> None:
    mutants = load_mutants()
    assert len({m.key for m in mutants.MUTANTS}) == len(mutants.MUTANTS)
    for m in mutants.MUTANTS:
        planted = mutants.mutated(m, ROOT)
        assert planted != (ROOT / m.path).read_text() and compile(planted, m.path, "exec")
        for test in m.tests:
            file, _, name = test.partition("::")
            assert (ROOT / file).is_file(), test
            assert not name or f"def {name}(" in (ROOT / file).read_text(), test


def test_a_mutant_that_no_longer_applies_is_reported(tmp_path: Path) -> None:
    mutants = load_mutants()
    stale = mutants.Mutant("Z", "gone", "f5lite/__init__.py", "text that is not there", "x", ("tests",))
    with pytest.raises(ValueError, match="occurs 0 times"):
        mutants.mutated(stale, ROOT)
