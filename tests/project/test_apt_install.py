"""scripts/apt_install.sh, which `make test`, `make test-heavy` and `make test-browser` run before their tests: a
present program costs nothing, and a missing one that cannot be installed is one line, fatal or not as asked."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "apt_install.sh"


def run(program: str, mode: str, path: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path}
    command = [
        shutil.which("bash") or "/bin/bash",
        str(SCRIPT),
        program,
        "some-package",
        str(tmp_path / "log"),
        mode,
        "make test",
    ]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=30)


def test_a_present_program_is_left_alone(tmp_path: Path) -> None:
    done = run("/bin/sh", "fail", os.environ["PATH"], tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


@pytest.mark.parametrize(("mode", "status"), [("warn", 0), ("fail", 1)])
def test_a_program_that_cannot_be_installed_is_one_line(tmp_path: Path, mode: str, status: int) -> None:
    # A PATH with the tools the script uses but no apt-get (and no sudo), whoever runs it.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("id", "dirname", "mkdir"):
        found = shutil.which(tool)
        assert found is not None
        (bin_dir / tool).symlink_to(found)
    done = run(str(tmp_path / "missing-program"), mode, str(bin_dir), tmp_path)
    assert done.returncode == status
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("make test: needs ") and "some-package" in lines[0]
    assert not (tmp_path / "log").exists()
