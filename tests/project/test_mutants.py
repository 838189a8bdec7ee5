"""scripts/mutants.py: every planted bug still applies to today's source and names tests that exist, so that a rename
or a move fails here, loudly, instead of a mutant that no longer plants anything or is never caught (the run itself
is `make test-mutants`)."""

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
    assert [problem for m in mutants.MUTANTS for problem in mutants.stale(m, ROOT)] == []


def test_a_mutant_that_no_longer_applies_is_reported(tmp_path: Path) -> None:
    mutants = load_mutants()
    stale = mutants.Mutant("Z", "gone", "f5lite/__init__.py", "text that is not there", "x", ("tests",))
    with pytest.raises(ValueError, match="occurs 0 times"):
        mutants.mutated(stale, ROOT)
    moved = mutants.Mutant("Z", "moved", "f5lite/bench/sidebyside.py", "x", "y", ("tests/project/test_mutants.py",))
    assert mutants.stale(moved, ROOT) == [
        "mutant Z: f5lite/bench/sidebyside.py is no file (moved or renamed? re-point the mutant)"
    ]


def test_a_renamed_or_moved_test_is_reported(tmp_path: Path) -> None:
    """The node ids are read from the test files: a test file gone, a test renamed or nested, a parametrized or class
    test, and one marked `gpu` (deselected by the mutants' run) are told apart without importing anything."""
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_x.py").write_text(
        "import pytest\n\n\ndef test_top():\n    def test_nested():\n        pass\n\n\n"
        "@pytest.mark.parametrize('n', [1, 2])\ndef test_param(n):\n    pass\n\n\n"
        "class TestGroup:\n    def test_method(self):\n        pass\n\n\n"
        "@pytest.mark.gpu\ndef test_cuda():\n    pass\n\n\ndef helper():\n    pass\n"
    )
    missing = load_mutants().missing_test
    for ok in ("tests/test_x.py", "tests/test_x.py::test_top", "tests/test_x.py::test_param[1]",
               "tests/test_x.py::TestGroup::test_method"):  # fmt: skip
        assert missing(ok, tmp_path) is None, ok
    for bad, says in (
        ("tests/test_gone.py::test_top", "no test file"),
        ("tests/test_x.py::test_renamed", "no test 'test_renamed'"),
        ("tests/test_x.py::test_nested", "no test 'test_nested'"),
        ("tests/test_x.py::TestGroup::test_gone", "no test 'test_gone'"),
        ("tests/test_x.py::helper", "no test 'helper'"),
        ("tests/test_x.py::test_cuda", "marked gpu"),
    ):
        assert says in (missing(bad, tmp_path) or ""), bad
    mutants = load_mutants()
    renamed = mutants.Mutant("Z", "z", "tests/test_x.py", "def helper", "def helper2", ("tests/test_x.py::test_old",))
    assert mutants.stale(renamed, tmp_path) == [
        "mutant Z: tests/test_x.py::test_old: no test 'test_old' in tests/test_x.py (renamed or moved? re-point the mutant)"
    ]
