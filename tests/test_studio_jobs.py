"""The studio's parts without a page: job folders, names, scripts, training plans and what a run directory shows."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
from pathlib import Path

import pytest
from studio_assets import wait_for

from f5lite.studio import jobs, training
from f5lite.studio.names import check_name, inside
from f5lite.studio.project import Workspace
from f5lite.studio.speak import parse_script

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the studio's job handling reads /proc")


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_a_job_ends_with_its_status_and_its_log(tmp_path: Path) -> None:
    folder = tmp_path / "job"
    assert jobs.state(folder).state == "none"
    jobs.start(
        folder, python("import sys; print('first'); print('progress 10%|', end='\\r'); print('50%|'); sys.exit(3)")
    )
    ended = jobs.wait(folder, 60)
    assert (ended.state, ended.rc) == ("failed", 3)
    assert jobs.log_tail(folder).splitlines() == ["first", "50%|"]  # a progress bar's redraws collapsed
    jobs.start(folder, python("print('again')"))
    assert jobs.wait(folder, 60).state == "done" and jobs.log_tail(folder) == "again"


def test_one_job_per_folder_and_stop_reaches_the_command(tmp_path: Path) -> None:
    folder = tmp_path / "job"
    marker = tmp_path / "stopped"
    code = (
        "import signal, sys, time, pathlib\n"
        f"signal.signal(signal.SIGTERM, lambda *_: (pathlib.Path({str(marker)!r}).write_text('x'), sys.exit(143)))\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    jobs.start(folder, python(code))
    wait_for(lambda: jobs.log_tail(folder) == "ready", 30, "the job's start")
    assert jobs.state(folder).running
    with pytest.raises(jobs.JobBusyError, match="already running"):
        jobs.start(folder, python("pass"))
    assert jobs.stop(folder)
    ended = jobs.wait(folder, 30)
    assert (ended.state, ended.rc) == ("stopped", 143) and marker.read_text() == "x"
    assert not jobs.stop(folder)


def test_a_running_job_is_found_by_a_new_studio_and_a_killed_one_reads_lost(tmp_path: Path) -> None:
    folder = tmp_path / "job"
    jobs.start(folder, python("import time; print('up', flush=True); time.sleep(60)"))
    wait_for(lambda: jobs.log_tail(folder) == "up", 30, "the job's start")
    pid = jobs.state(folder).pid
    assert pid is not None
    jobs._children.pop(pid)  # as a studio process that did not start it sees it: from the folder and /proc only
    try:
        assert jobs.state(folder).running
        os.killpg(pid, signal.SIGKILL)  # wrapper and command killed outright: no exit status is written
        wait_for(lambda: not jobs.alive(pid), 30, "the kill")
        assert jobs.state(folder).state == "lost"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)  # still our child: reap it


def test_names_and_paths_cannot_leave_their_folder(tmp_path: Path) -> None:
    for bad in ("../x", "a/b", ".hidden", "", " ", "x" * 65, "a\\b", "tab\tname"):
        with pytest.raises(ValueError, match="is not valid"):
            check_name(bad, "project")
    assert check_name(" Alice_2.v1 ", "voice") == "Alice_2.v1"
    (tmp_path / "clips").mkdir()
    (tmp_path / "secret").write_text("no")
    (tmp_path / "clips" / "link").symlink_to(tmp_path / "secret")
    assert inside(tmp_path / "clips", "a/b.wav", "clip") == (tmp_path / "clips" / "a" / "b.wav").resolve()
    for escape in ("../secret", "link", "/etc/passwd"):
        with pytest.raises(ValueError, match="outside"):
            inside(tmp_path / "clips", escape, "clip")
    workspace = Workspace(tmp_path / "ws")
    with pytest.raises(ValueError, match="there is no project"):
        workspace.project("missing")
    project = workspace.project("p", create=True)
    with pytest.raises(ValueError, match="run name"):
        project.child("runs", "../../x")


def test_scripts_switch_voices_at_markers() -> None:
    assert parse_script("Hello there.  {Alice} Good\nmorning. {Bob}{Alice}Bye.") == [
        (None, "Hello there."),
        ("Alice", "Good morning."),
        ("Alice", "Bye."),
    ]
    assert parse_script("{Bob} Only Bob.") == [("Bob", "Only Bob.")]
    with pytest.raises(ValueError, match="text is empty"):
        parse_script(" {Alice} ")
    with pytest.raises(ValueError, match="is not valid"):
        parse_script("Hi {../x} there")


def test_a_plan_becomes_the_trainer_s_overrides(tmp_path: Path) -> None:
    data, run = tmp_path / "data", tmp_path / "run"
    args = training.Plan("debug_tiny", "lora", base="/models/base", max_updates=50, every=5, lr=1e-4).overrides(
        data, run
    )
    assert args[:3] == ["+recipe=debug_tiny", f"data.dir={data}", f"run_dir={run}"]
    expected = {"optim.max_updates=50", "ckpt.every=5", "eval.every=5", "logger.sample_every=5", "optim.lr=0.0001"}
    assert expected | {"init.weights=/models/base", "finetune.lora.rank=16"} <= set(args)
    assert not any(a.startswith("init.") for a in training.Plan("demo").overrides(data, run))
    for bad, message in (
        (training.Plan("demo", "full"), "needs a base model"),
        (training.Plan("demo", "half"), "is not valid"),
        (training.Plan("demo", max_updates=0), "at least 1"),
    ):
        with pytest.raises(ValueError, match=message):
            bad.overrides(data, run)


def test_a_run_directory_is_read_as_it_is(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert training.view(run).state == "none"
    (run / "checkpoints" / "step-00000020").mkdir(parents=True)
    (run / "logs").mkdir()
    lines = [{"update": 10, "loss": 2.0}, {"update": 20, "loss": 1.5}, {"update": 20, "loss": 1.4}]
    (run / "logs" / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines) + '{"update": 30, "lo')
    (run / "logs" / "eval.jsonl").write_text(json.dumps({"update": 20, "val/loss": 1.7}) + "\n")
    view = training.view(run)  # started from a terminal, no studio files: resumable
    assert (view.state, view.updates, view.val, view.last_update) == (
        "stopped",
        [(10, 2.0), (20, 1.4)],
        [(20, 1.7)],
        20,
    )
    (run / "run.lock").write_text(json.dumps({"host": socket.gethostname(), "pid": os.getpid()}))
    assert training.view(run).state == "running"  # a live holder of the run's lock
    (run / "run.lock").write_text(json.dumps({"host": socket.gethostname(), "pid": 2**22 + 1}))
    (run / "export").mkdir()
    assert training.view(run).state == "done"  # a stale lock, and the run exported
