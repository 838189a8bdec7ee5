"""benchmarks.runner with real child processes (tiny `python -c` programs): the interleaving order, a process per
run, the result protocols (last stdout line, a file, `--child SPEC`), failures named by configuration, time limits,
the watch, the /proc readings; and benchmarks.results: the run header every results file must record (machine,
versions, date)."""

from __future__ import annotations

import datetime
import json
import multiprocessing
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

import f5lite
from benchmarks import results
from benchmarks import runner as sbs
from benchmarks.runner import RESULT, ChildFailedError, Config

# Prints its name, pid and start time as one JSON line after a line of noise (the harness reads the last line).
REPORT = (
    "import json, os, sys, time; t = time.monotonic(); print('warming up'); "
    "print(json.dumps({'name': sys.argv[1], 'pid': os.getpid(), 't': t}))"
)


def child(code: str, *args: str) -> list[str]:
    return [sys.executable, "-c", code, *args]


def reporters(*names: str) -> list[Config]:
    return [Config(name, child(REPORT, name)) for name in names]


def test_rounds_run_a_b_a_b_each_in_its_own_process() -> None:
    seen: list[str] = []
    runs = sbs.run_interleaved(reporters("A", "B"), 3, on_run=lambda run: seen.append(run.config))
    assert [run.config for run in runs] == seen == ["A", "B"] * 3
    assert [run.round for run in runs] == [0, 0, 1, 1, 2, 2]
    # What the children themselves saw: one after the other, in that order, each a process of its own.
    results = [run.result for run in runs]
    assert all(r is not None for r in results)
    by_start = sorted(runs, key=lambda run: run.result["t"] if run.result else 0.0)
    assert [run.result["name"] for run in by_start if run.result] == ["A", "B"] * 3
    pids = [run.pid for run in runs]
    assert [r["pid"] for r in results if r] == pids and len(set(pids)) == 6 and os.getpid() not in pids
    for before, after in zip(runs, runs[1:], strict=False):
        assert before.started + before.wall_s <= after.started  # never two at once
    assert all(run.ok and run.returncode == 0 and run.wall_s > 0 for run in runs)


def test_alternate_reverses_every_other_round() -> None:
    assert sbs.schedule(["A", "B", "C"], 2) == [(0, "A"), (0, "B"), (0, "C"), (1, "A"), (1, "B"), (1, "C")]
    order = sbs.schedule(["A", "B"], 3, alternate=True)
    assert [name for _, name in order] == ["A", "B", "B", "A", "A", "B"]
    runs = sbs.run_interleaved(reporters("A", "B"), 2, alternate=True)
    assert [(run.round, run.result["name"] if run.result else None) for run in runs] == [
        (0, "A"),
        (0, "B"),
        (1, "B"),
        (1, "A"),
    ]
    for bad in ([], ["A", "A"]):
        with pytest.raises(ValueError):
            sbs.schedule(bad, 1)
    with pytest.raises(ValueError):
        sbs.schedule(["A"], 0)


def test_a_failing_child_is_one_line_naming_its_configuration() -> None:
    failing = Config("bf16 + compile", child("import sys; print('partial'); sys.exit('RuntimeError: boom')"))
    seen: list[str] = []
    with pytest.raises(ChildFailedError) as exc:
        sbs.run_interleaved([*reporters("A"), failing, *reporters("C")], 2, on_run=lambda r: seen.append(r.config))
    message = str(exc.value)
    assert "\n" not in message and "'bf16 + compile'" in message and "round 1" in message
    assert "exit 1" in message and "RuntimeError: boom" in message
    assert seen == ["A"]  # it stopped there: C never ran
    assert exc.value.run.returncode == 1 and exc.value.run.result is None

    runs = sbs.run_interleaved([*reporters("A"), failing], 1, check=False)
    assert [run.ok for run in runs] == [True, False]
    assert runs[1].record(label="bf16 + compile") == {"label": "bf16 + compile", "error": runs[1].error}
    assert runs[0].record(label="A") == runs[0].result


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("print('done')", "its result is not JSON: 'done'"),
        ("print('[1, 2]')", "not a JSON object"),
        ("pass", "printed no result"),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "killed by SIGKILL"),
    ],
)
def test_a_child_without_a_result_fails(code: str, error: str) -> None:
    run = sbs.run_child(Config("quiet", child(code)))
    assert not run.ok and run.result is None and error in (run.error or "")
    assert run.failure.startswith("'quiet' failed in round 1: ")


def test_result_file_placeholder(tmp_path: Path) -> None:
    write = "import json, sys; print('a trainer log, not JSON'); json.dump({'loss': 1.5, 'to': sys.argv[1]}, open(sys.argv[1], 'w'))"
    runs = sbs.run_interleaved([Config("file", child(write, RESULT))], 2, work_dir=tmp_path)
    assert [run.result["loss"] if run.result else None for run in runs] == [1.5, 1.5]
    paths = [Path(run.result["to"]) for run in runs if run.result]
    assert len(set(paths)) == 2 and all(p.parent == tmp_path and p.is_file() for p in paths)
    # A file left over from an earlier run is not taken for this run's result.
    stale = sbs.run_child(Config("file", child("pass", RESULT)), 1, result_dir=tmp_path)
    assert not stale.ok and "wrote no result" in (stale.error or "")


def test_wall_clock_ends_when_the_child_exits() -> None:
    # A descendant that outlives the child (a loader worker, a compile pool) keeps its output open: not waited for.
    code = "import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(3)']); print('{}')"
    start = time.monotonic()
    run = sbs.run_child(Config("parent", child(code)))
    assert run.ok and run.wall_s < 2 and time.monotonic() - start < 2


def test_time_limit_kills_the_child() -> None:
    start = time.monotonic()
    run = sbs.run_child(Config("sleeper", child("import time; time.sleep(30)")), timeout=0.5)
    assert time.monotonic() - start < 10
    assert run.returncode is None and run.error == "no result within 0.5 s"


def test_environment_and_launch_time() -> None:
    code = f"import json, os; print(json.dumps({{k: os.environ.get(k) for k in ('F5_X', '{sbs.LAUNCHED_AT_ENV}')}}))"
    before = time.time()
    run = sbs.run_child(Config("env", child(code), env={"F5_X": "1"}))
    assert run.result is not None and run.result["F5_X"] == "1"
    assert before <= float(run.result[sbs.LAUNCHED_AT_ENV]) <= time.time()
    assert run.load_before >= 0


def pid_watch() -> Callable[[int], dict[str, object]]:
    pids: list[int] = []

    def poll(pid: int) -> dict[str, object]:
        pids.append(pid)
        return {"pids": list(pids)}

    return poll


def test_watch_polls_the_running_child() -> None:
    run = sbs.run_child(
        Config("slow", child("import time; time.sleep(0.4); print('{}')")), watch=pid_watch, poll_s=0.05
    )
    assert run.ok and len(run.watched["pids"]) >= 3 and set(run.watched["pids"]) == {run.pid}
    quick = sbs.run_child(Config("quick", child("print('{}')")), watch=pid_watch, poll_s=5)
    assert quick.ok and quick.watched == {"pids": [quick.pid]}  # polled once however short the run


def test_header_records_machine_versions_and_date() -> None:
    header = results.run_header(["pytest", "no-such-distribution-f5lite"])
    date = datetime.datetime.fromisoformat(header["date"])
    assert date.utcoffset() == datetime.timedelta(0)
    assert abs((datetime.datetime.now(datetime.timezone.utc) - date).total_seconds()) < 60
    machine = header["machine"]
    assert machine["cpu"] and machine["cpu"] == results.cpu_model() and machine["logical_cores"] == os.cpu_count()
    assert machine["gpu"] == (torch.cuda.get_device_name() if torch.cuda.is_available() else None)
    assert machine["os"] == platform.platform()
    found = header["versions"]
    assert (found["python"], found["torch"], found["f5lite"]) == (
        platform.python_version(),
        torch.__version__,
        f5lite.__version__,
    )
    assert found["pytest"] == pytest.__version__ and found["no-such-distribution-f5lite"] is None
    for form in (header, {**header, "rows": [1]}):  # a header, or a document that starts with one
        line = results.describe(form)
        assert machine["cpu"] in line and f"torch {torch.__version__}" in line and header["date"] in line
        assert f"Python {platform.python_version()}" in line and "None" not in line


def test_results_files_must_carry_the_header(tmp_path: Path) -> None:
    header = results.run_header()
    nested = {**header, "rows": [1, 2]}
    results.write_results(tmp_path / "sub" / "nested.json", nested, "# page\n", indent=2)
    assert json.loads((tmp_path / "sub" / "nested.json").read_text()) == nested
    assert (tmp_path / "sub" / "nested.md").read_text() == "# page\n"
    rows = [{"label": "a", **header}, {"label": "b", **header}]
    results.write_results(tmp_path / "rows.json", rows)
    assert json.loads((tmp_path / "rows.json").read_text()) == rows and not (tmp_path / "rows.md").exists()
    undated = {**header, "date": ""}
    no_torch = {**header, "versions": {"python": "3"}}
    no_versions = {"machine": header["machine"], "date": header["date"]}
    one_bare_row = [rows[0], {"label": "c"}]
    for bad, missing in (
        (undated, "date"),
        (no_torch, "torch version"),
        (one_bare_row, "machine"),
        ({}, "date"),
        (no_versions, "versions"),
    ):
        with pytest.raises(ValueError, match=missing):
            results.write_results(tmp_path / "bad.json", bad)
    assert not (tmp_path / "bad.json").exists()


def test_median_record() -> None:
    runs = [{"label": "a", "step_s": s} for s in (3.0, 1.0, 2.0, 9.0)] + [{"label": "a", "error": "x"}]
    chosen = sbs.median_record(runs, "step_s")
    assert chosen["step_s"] == 2.0 and chosen["step_s_rounds"] == [1.0, 2.0, 3.0, 9.0]
    assert sbs.median_record([{"label": "a", "error": "boom"}], "step_s") == {"label": "a", "error": "boom"}


def test_child_spec_round_trip() -> None:
    config = sbs.child_config("a", "x.py", {"kind": "mels", "workers": 2}, F5_X="1")
    assert config.argv[1:3] == ["x.py", "--child"] and config.env == {"F5_X": "1"}
    assert sbs.child_spec(config.argv[2:]) == {"kind": "mels", "workers": 2}
    assert sbs.child_spec(["--quick"]) is None and sbs.child_spec([]) is None


def test_proc_readings() -> None:
    assert sbs.peak_rss() > 0 and sbs.peak_rss(os.getpid()) > 0
    assert sbs.peak_rss(2**22 + 12345) is None  # no such process
    assert sbs.cpu_seconds() > 0 and sbs.cpu_seconds(2**22 + 12345) is None
    assert sbs.status_kb("self", "VmRSS") > 0 and sbs.status_kb("self", "NoSuchKey") is None


def test_forked_children_are_the_forked_workers_not_a_spawned_helper() -> None:
    forked = multiprocessing.get_context("fork").Process(target=time.sleep, args=(30,))
    forked.start()
    spawned = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        found = sbs.forked_children()
        assert forked.pid in found and spawned.pid not in found and os.getpid() not in found
    finally:
        forked.kill()
        spawned.kill()
        forked.join()
        spawned.wait()
    assert forked.pid not in sbs.forked_children()
