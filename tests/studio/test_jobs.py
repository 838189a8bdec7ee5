"""The studio's parts without a page: job folders, names, scripts, training plans and what a run directory shows."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser
from support.studio_assets import wait_for

from f5lite.credentials import STUDIO_AUTH_ENV
from f5lite.storage.lock import process_start
from f5lite.studio import jobs, training
from f5lite.studio.names import inside, typed_name
from f5lite.studio.overrides import ALLOWED, check_extra, quote
from f5lite.studio.project import StudioRoot
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
        wait_for(lambda: not jobs.state(folder).running, 30, "the kill")
        assert jobs.state(folder).state == "lost"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)  # still our child: reap it


def test_a_job_holds_its_folder_s_lock_so_a_second_start_is_refused_whatever_job_json_says(tmp_path: Path) -> None:
    folder = tmp_path / "job"
    jobs.start(folder, python("import time; print('up', flush=True); time.sleep(60)"))
    wait_for(lambda: jobs.log_tail(folder) == "up", 30, "the job's start")
    first = jobs.state(folder)
    assert first.pid is not None
    job_json = (folder / jobs.JOB_FILE).read_text()
    jobs._children.pop(first.pid)  # a restarted studio: it did not start the job, and lost track of it
    (folder / jobs.JOB_FILE).write_text("{}")  # even when job.json no longer says that a job runs
    try:
        with pytest.raises(jobs.JobBusyError, match="already running"):
            jobs.start(folder, python("pass"))
        assert (folder / jobs.JOB_FILE).read_text() == "{}" and jobs.log_tail(folder) == "up"  # nothing written
    finally:
        (folder / jobs.JOB_FILE).write_text(job_json)
        os.killpg(first.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(first.pid, 0)
    wait_for(lambda: not jobs.state(folder).running, 30, "the kill")
    jobs.start(folder, python("print('second')"))  # the wrapper ended: so did its lock
    assert jobs.wait(folder, 60).state == "done" and jobs.log_tail(folder) == "second"


def test_concurrent_starts_of_one_job_start_it_once(tmp_path: Path) -> None:
    folder = tmp_path / "job"
    outcomes: list[str] = []

    def start() -> None:
        try:
            jobs.start(folder, python("import time; time.sleep(60)"))
            outcomes.append("started")
        except jobs.JobBusyError as err:
            outcomes.append(str(err))

    threads = [threading.Thread(target=start) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert outcomes.count("started") == 1, outcomes
        assert all("already running" in o for o in outcomes if o != "started")
        assert len([p for p in jobs._children.values() if p.poll() is None]) == 1
    finally:
        assert jobs.stop(folder)
        jobs.wait(folder, 30)


def test_a_reused_pid_is_not_the_job_and_stop_does_not_signal_it(tmp_path: Path) -> None:
    folder = tmp_path / "job"
    folder.mkdir()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:  # a job.json naming a live process group leader that started at another time than the job's wrapper
        stamp = process_start(other.pid)
        assert stamp is not None
        job = {"command": ["x"], "pid": other.pid, "started": 0.0, "process_start": stamp + "0"}
        (folder / jobs.JOB_FILE).write_text(json.dumps(job))
        assert jobs.state(folder).state == "lost"
        assert not jobs.stop(folder, signal.SIGKILL)
        assert other.poll() is None  # not signalled
        (folder / jobs.JOB_FILE).write_text(json.dumps({**job, "process_start": stamp}))
        assert jobs.state(folder).running  # the same record with the process's own start: it is the job
    finally:
        other.kill()
        other.wait()


def test_a_job_does_not_inherit_the_studio_s_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STUDIO_AUTH_ENV, "user:secret")
    monkeypatch.setenv("F5LITE_API_KEY", "key")
    monkeypatch.setenv("F5LITE_STUDIO_TEST_VAR", "kept")
    folder = tmp_path / "job"
    names = (STUDIO_AUTH_ENV, "F5LITE_API_KEY", "F5LITE_STUDIO_TEST_VAR")
    code = f"import os; print(*(os.environ.get(k) for k in {names!r}))"
    jobs.start(folder, python(code))
    assert jobs.wait(folder, 60).state == "done"
    assert jobs.log_tail(folder) == "None None kept"


def test_names_and_paths_cannot_leave_their_folder(tmp_path: Path) -> None:
    for bad in ("../x", "a/b", ".hidden", "", " ", "x" * 65, "a\\b", "tab\tname"):
        with pytest.raises(ValueError, match="is not valid"):
            typed_name(bad, "project")
    assert typed_name(" Alice_2.v1 ", "voice") == "Alice_2.v1"
    (tmp_path / "clips").mkdir()
    (tmp_path / "secret").write_text("no")
    (tmp_path / "clips" / "link").symlink_to(tmp_path / "secret")
    assert inside(tmp_path / "clips", "a/b.wav", "clip") == (tmp_path / "clips" / "a" / "b.wav").resolve()
    for escape in ("../secret", "link", "/etc/passwd"):
        with pytest.raises(ValueError, match="outside"):
            inside(tmp_path / "clips", escape, "clip")
    workspace = StudioRoot(tmp_path / "ws")
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
    assert args[:3] == ["+recipe=debug_tiny", f"data.dir='{data}'", f"run_dir='{run}'"]
    expected = {"optim.max_updates=50", "ckpt.every=5", "eval.every=5", "logger.sample_every=5", "optim.lr=0.0001"}
    assert expected | {"init.weights='/models/base'", "finetune.lora.rank=16"} <= set(args)
    assert not any(a.startswith("init.") for a in training.Plan("demo").overrides(data, run))
    for bad, message in (
        (training.Plan("demo", "full"), "needs a base model"),
        (training.Plan("demo", "half"), "is not valid"),
        (training.Plan("demo", max_updates=0), "at least 1"),
        (training.Plan("../x"), "not one of the studio's recipes"),
        (training.Plan("demo", precision="no run_dir=/x"), "precision .* is not valid"),
        (training.Plan("demo", "full", base="/m/${oc.env:HOME}"), "the base model .* holds"),
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
    me = {"host": socket.gethostname(), "pid": os.getpid(), "start": process_start(os.getpid())}
    (run / "run.lock").write_text(json.dumps(me))
    assert training.view(run).state == "running"  # a live holder of the run's lock
    (run / "run.lock").write_text(json.dumps({**me, "start": "another-boot:1"}))
    assert training.view(run).state == "stopped"  # its pid, reused: not the holder
    (run / "run.lock").write_text(json.dumps({"host": socket.gethostname(), "pid": 2**22 + 1}))
    (run / "export").mkdir()
    assert training.view(run).state == "done"  # a stale lock, and the run exported


@pytest.mark.parametrize(
    "path",
    ["/w/wo,rk's [x]/r", "a\\", "a\\'b", "'", "''", 'say "hi"', "a b=c:d", "{x}(y)", "é/ü", "$HOME", "t\tn\nx", ""],
)
def test_a_quoted_path_reaches_hydra_byte_for_byte(path: str) -> None:
    override = OverridesParser.create().parse_override(f"data.dir={quote(path, 'the dataset')}")
    assert str(override.value()) == path


def test_a_path_with_an_interpolation_is_refused() -> None:
    with pytest.raises(ValueError, match=r"the dataset '/d/\$\{oc.env:X\}' holds"):
        quote("/d/${oc.env:X}", "the dataset")


def test_more_overrides_are_allow_listed() -> None:
    ok = ["optim.weight_decay=0.1", "perf.compile=true", "ema.decay=0.99", "model.depth=4", "eval.every=5", "seed=1"]
    assert check_extra(ok) == ok
    for token, why in (
        ("run_dir=/tmp/elsewhere", "set with the Run name"),
        ("optim.lr=1", "set with the Learning rate field"),
        ("+foo=1", "not added or deleted"),
        ("++optim.eps=1", "not added or deleted"),
        ("~ema", "not added or deleted"),
        ("hydra.run.dir=x", "not a setting the page may change"),
        ("data.vocab=/etc/passwd", "not a setting the page may change"),
        ("eval.asr=whisper:/x", "not a setting the page may change"),
        ("model=unett", "not a setting the page may change"),
        ("optim.eps", "give key=value"),
        ("optim.eps=${oc.env:F5LITE_STUDIO_AUTH}", "interpolations"),
        ("optim.betas=[0.9,${x}]", "interpolations"),
    ):
        with pytest.raises(ValueError) as err:
            check_extra(["optim.eps=1e-6", token])
        assert str(err.value).startswith(f"override {token!r} is refused: ") and why in str(err.value), err.value


def test_every_allowed_override_is_a_setting_of_the_trainer_and_none_is_a_path() -> None:
    from dataclasses import fields, is_dataclass

    from f5lite.config.model import MODEL_SCHEMAS
    from f5lite.config.train_run import TrainConfig

    def keys(schema: type, prefix: str = "") -> set[str]:
        found = set()
        for f in fields(schema):
            kind = getattr(schema(), f.name) if f.name != "model" else None
            if is_dataclass(kind):
                found |= keys(type(kind), f"{prefix}{f.name}.")
            else:
                found.add(f"{prefix}{f.name}")
        return found

    known = keys(TrainConfig) | {f"model.{k}" for s in MODEL_SCHEMAS.values() for k in keys(s)} | {"ckpt.async"}
    assert known >= ALLOWED, ALLOWED - known
    paths = {"run_dir", "data.dir", "data.sources", "data.vocab", "eval.val_dir", "eval.prompts", "init.weights"}
    assert not ALLOWED & (paths | {"init.vocab", "distill.teacher", "sample.vocoder_source", "logger.backend"})


def test_number_limits_refuse_what_the_page_s_bounds_let_through() -> None:
    from f5lite.studio.limits import LEARNING_RATE, SCRIPT_CHARS, UPDATES

    assert UPDATES.whole(500.0) == 500 and LEARNING_RATE.check(0.001) == 0.001
    for limit, value in ((UPDATES, float("nan")), (UPDATES, float("inf")), (UPDATES, 2.5), (UPDATES, None)):
        with pytest.raises(ValueError, match="Updates must be a whole number from 1 to 10,000,000"):
            limit.check(value)
    with pytest.raises(ValueError, match="Learning rate must be a number from 0 to 1, not nan"):
        LEARNING_RATE.check(float("nan"))
    with pytest.raises(ValueError, match=f"say at most {SCRIPT_CHARS}"):
        parse_script("a" * (SCRIPT_CHARS + 1))
