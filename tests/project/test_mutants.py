"""scripts/mutants.py: every planted bug still applies to today's source (the run itself is `make test-mutants`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]


def load_mutants():
    return load_script("mutants")


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
