"""Side-by-side measurements: configurations in their own processes, interleaved over rounds, results with a header.

The comparisons in `scripts/` (f5lite against F5-TTS, the training ablation, the loader and duration benchmarks)
each measure a few *configurations* (a command line each) and report them side by side. They share this harness.

- **A process per run.** Every run of a configuration is a fresh interpreter (`run_child`): its peak memory (`VmHWM`,
  `ru_maxrss`) is its own, and nothing carries over from one configuration to the next: no allocator cache, no
  compiled code, no thread pool, no imported module (the F5-TTS side of a comparison must not count f5lite's modules
  in its memory). The parent measures the wall clock from launch to exit, the 1-minute load average at launch, and,
  with a `Watch`, whatever it polls of the running child (the memory of its process tree, say).
- **Interleaved rounds.** A virtual machine's speed drifts by 10-25 % from one minute to the next. All rounds of A,
  then all of B, would put that drift between A and B; `run_interleaved` runs every configuration once per round, in
  turn (A B A B ..., `schedule`), so that a slow minute hits all of them alike, and each configuration reports its
  median round (`median_record`). With `alternate=True` every other round runs in reverse (A B B A ...): no
  configuration always goes first, right after the other's process has exited.
- **A JSON object per run.** A child reports its result on the last line of its standard output, or, when its
  command line holds the placeholder `RESULT`, in the file the harness puts there instead (for a child whose output
  is a trainer's log). A child that exits non-zero, runs past its time limit or reports nothing is a failed `Run`
  whose `failure` is one line naming the configuration; `run_interleaved(check=True)` raises it as `ChildFailedError`.
- **A header in every result file.** Numbers are only comparable with the machine, the software and the date they
  were taken on: `run_header` records the CPU model, the logical cores, the GPU (if any), the OS, the versions of
  Python, torch, f5lite (with its git commit in a checkout) and of the other packages a comparison names (F5-TTS,
  lhotse, accelerate), and the UTC date and time. `write_results` writes the JSON (and a Markdown page) and refuses a
  document, or a row of a list, that does not carry one, in either layout: nested (`date`, `machine`, `versions` at
  the top) or flat (`flat_header`, under `machine`).
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import importlib.metadata
import json
import os
import platform
import re
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

RESULT = "{result}"
"""Placeholder in a configuration's command line: replaced by the file where the child writes its JSON result."""

LAUNCHED_AT_ENV = "F5LITE_LAUNCHED_AT"
"""Environment variable holding the parent's `time.time()` at launch, for a child that times its own start-up."""

_FLAT_MACHINE = ("cpu", "cores", "gpu", "os")
_DISPLAY = {"python": "Python", "f5-tts": "F5-TTS", "f5lite_git": "f5lite git"}


@dataclass(frozen=True)
class Config:
    """One configuration: its name and the command line of its child process.

    Attributes:
        name: Unique label, used in messages and result names.
        argv: The child's command line, e.g. `[sys.executable, "scripts/x.py", "--child", ...]`; items may contain
            `RESULT`.
        env: Environment variables set for the child on top of this process's.
    """

    name: str
    argv: Sequence[str]
    env: Mapping[str, str] = field(default_factory=dict)


class Watch(Protocol):
    """Something observed of a running child: `poll` is called every `poll_s` seconds while it runs."""

    def poll(self, pid: int) -> None:
        """Look at the child process `pid` (it may have exited already)."""

    def summary(self) -> dict[str, Any]:
        """What was observed, stored as `Run.watched`."""


@dataclass(frozen=True)
class Run:
    """One run of one configuration in its own process.

    Attributes:
        config: The configuration's name.
        round: The round, from 0.
        pid: The child's process id.
        returncode: Its exit status; None when it was killed at the time limit.
        started: `time.monotonic()` at launch (the same clock as the child's `time.monotonic()` on Linux).
        wall_s: Seconds from launch to exit.
        load_before: The machine's 1-minute load average at launch.
        result: The child's JSON object; None exactly when `error` is set.
        error: Why there is no result (exit status and the last line of its standard error, time limit, no JSON).
        stdout: The child's standard output.
        stderr: The child's standard error.
        watched: The `Watch`'s summary (empty without one).
    """

    config: str
    round: int
    pid: int
    returncode: int | None
    started: float
    wall_s: float
    load_before: float
    result: dict[str, Any] | None
    error: str | None
    stdout: str
    stderr: str
    watched: dict[str, Any]

    @property
    def ok(self) -> bool:
        """Whether the child exited with 0 and reported a JSON object."""
        return self.error is None

    @property
    def failure(self) -> str:
        """One line naming the configuration and the round, and why the run failed."""
        return f"{self.config!r} failed in round {self.round + 1}: {self.error}"

    def record(self, **identity: Any) -> dict[str, Any]:
        """The child's result, or `{**identity, "error": ...}` for a failed run (a row of a table that goes on)."""
        if self.result is not None:
            return self.result
        return {**identity, "error": self.error}


class ChildFailedError(RuntimeError):
    """A configuration's child failed; the message is `Run.failure`, the run is `.run`."""

    def __init__(self, run: Run) -> None:
        super().__init__(run.failure)
        self.run = run


def schedule(names: Sequence[str], rounds: int, *, alternate: bool = False) -> list[tuple[int, str]]:
    """The order of the runs: every configuration once per round, in turn.

    Args:
        names: The configurations, in the order of the first round.
        rounds: How many rounds.
        alternate: Reverse every other round (A B, B A, A B, ...) instead of keeping the order (A B, A B, ...).

    Returns:
        `(round, name)` pairs in the order they run.

    Raises:
        ValueError: No names, repeated names, or fewer than one round.
    """
    if not names or len(set(names)) != len(names) or rounds < 1:
        raise ValueError(f"need distinct configuration names and at least 1 round, got {list(names)}, {rounds}")
    order: list[tuple[int, str]] = []
    for r in range(rounds):
        turn = names[::-1] if alternate and r % 2 else names
        order += [(r, name) for name in turn]
    return order


def run_child(
    config: Config,
    round_: int = 0,
    *,
    result_dir: Path | None = None,
    timeout: float | None = None,
    watch: Callable[[], Watch] | None = None,
    poll_s: float = 0.2,
) -> Run:
    """Run one configuration in a fresh process and collect its JSON result.

    Args:
        config: What to run.
        round_: The round this run belongs to (names its result file).
        result_dir: Where `RESULT` files go (default: a temporary directory, removed afterwards).
        timeout: Seconds the child may run; then it is killed and the run fails.
        watch: Makes a `Watch` polled every `poll_s` seconds while the child runs.
        poll_s: Seconds between polls.

    Returns:
        The run; check `ok` (a failed child does not raise here).
    """
    with contextlib.ExitStack() as stack:
        if result_dir is None:
            result_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="f5lite_sidebyside_")))
        result_path = result_dir / _result_name(config.name, round_)
        to_file = any(RESULT in item for item in config.argv)
        if to_file:
            result_path.unlink(missing_ok=True)  # a file left by an earlier run is not this run's result
        argv = [item.replace(RESULT, str(result_path)) for item in config.argv]
        load = os.getloadavg()[0]
        env = {**os.environ, **config.env, LAUNCHED_AT_ENV: repr(time.time())}
        # Output goes to files, not pipes: a pipe stays open while any process the child started lives (a loader
        # worker, a compile pool), and reading it to its end would count their shut-down in the wall clock.
        out = stack.enter_context(tempfile.TemporaryFile())
        err = stack.enter_context(tempfile.TemporaryFile())
        started = time.monotonic()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        watcher = watch() if watch is not None else None
        done = threading.Event()
        poller = None
        if watcher is not None:
            poller = threading.Thread(target=_poll, args=(watcher, proc.pid, done, poll_s), daemon=True)
            poller.start()
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            proc.kill()
            proc.wait()
        except BaseException:  # interrupted: leave no child behind
            proc.kill()
            proc.wait()
            raise
        finally:
            wall = time.monotonic() - started
            done.set()
            if poller is not None:
                poller.join()
        stdout, stderr = _text(out), _text(err)
        result, error = None, _exit_error(proc.returncode, stderr)
        if timed_out:
            error = f"no result within {timeout:g} s"
        elif error is None:
            result, error = _read_result(result_path if to_file else None, stdout)
        return Run(
            config=config.name,
            round=round_,
            pid=proc.pid,
            returncode=None if timed_out else proc.returncode,
            started=started,
            wall_s=wall,
            load_before=load,
            result=result,
            error=error,
            stdout=stdout,
            stderr=stderr,
            watched=watcher.summary() if watcher is not None else {},
        )


def run_interleaved(
    configs: Sequence[Config],
    rounds: int,
    *,
    alternate: bool = False,
    check: bool = True,
    timeout: float | None = None,
    work_dir: Path | None = None,
    watch: Callable[[], Watch] | None = None,
    poll_s: float = 0.2,
    on_run: Callable[[Run], None] | None = None,
) -> list[Run]:
    """Run every configuration in its own process, once per round, the configurations in turn within each round.

    Args:
        configs: The configurations, in the order of the first round; their names must differ.
        rounds: How many rounds.
        alternate: Reverse every other round (see `schedule`).
        check: Raise `ChildFailedError` at the first failed run (default); otherwise failed runs are returned too.
        timeout: Seconds each child may run.
        work_dir: Where `RESULT` files go and stay (default: a temporary directory, removed at the end).
        watch: Makes a `Watch` for each run (see `run_child`).
        poll_s: Seconds between polls of the watch.
        on_run: Called with each run as soon as it ends (progress lines, clean-up); what it raises stops the rest.

    Returns:
        The runs in the order they ran.

    Raises:
        ChildFailedError: With `check`, the first run that failed.
    """
    by_name = {c.name: c for c in configs}
    order = schedule([c.name for c in configs], rounds, alternate=alternate)
    runs: list[Run] = []
    with contextlib.ExitStack() as stack:
        if work_dir is None:
            work_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="f5lite_sidebyside_")))
        work_dir.mkdir(parents=True, exist_ok=True)
        for r, name in order:
            run = run_child(by_name[name], r, result_dir=work_dir, timeout=timeout, watch=watch, poll_s=poll_s)
            if check and not run.ok:
                raise ChildFailedError(run)
            runs.append(run)
            if on_run is not None:
                on_run(run)
    return runs


def median_record(records: Sequence[Mapping[str, Any]], key: str) -> dict[str, Any]:
    """The record with the median `key` over the rounds, with every round's value added as `<key>_rounds`.

    Args:
        records: One configuration's records, one per round; those with an `"error"` are left out.
        key: The figure that ranks them (e.g. `"step_s"`).

    Returns:
        A copy of the median record (the lower median for an even count; values listed in ascending order), or of
        the first record when every round failed.
    """
    ok = sorted((r for r in records if "error" not in r), key=lambda r: float(r[key]))
    if not ok:
        return dict(records[0])
    record = dict(ok[(len(ok) - 1) // 2])
    record[f"{key}_rounds"] = [round(float(r[key]), 4) for r in ok]
    return record


# ------------------------------------------------------------------------------------------- the run header


def cpu_model() -> str:
    """The CPU's model name from `/proc/cpuinfo`, else `platform.processor()` or the architecture."""
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown"


def versions(packages: Sequence[str] = ()) -> dict[str, str | None]:
    """Versions of Python, torch, f5lite (and its git commit, `+modified` when its sources differ) and `packages`.

    Args:
        packages: Distribution names (e.g. `"f5-tts"`, `"lhotse"`); one that is not installed is recorded as None.

    Returns:
        Name to version, in that order.
    """
    import torch

    from f5lite.version import __version__

    found: dict[str, str | None] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "f5lite": __version__,
    }
    commit = _git_commit(Path(__file__).resolve().parents[1])
    if commit is not None:
        found["f5lite_git"] = commit
    for name in packages:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def run_header(packages: Sequence[str] = ()) -> dict[str, Any]:
    """Where and when results are taken: the machine, the versions and the UTC date and time.

    Args:
        packages: Other distributions whose versions matter to the comparison (see `versions`).

    Returns:
        `{"date": ISO 8601, "machine": {"cpu", "logical_cores", "gpu", "os"}, "versions": {...}}`; `gpu` is the
        CUDA device's name or None.
    """
    import torch

    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else None
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpu": cpu_model(), "logical_cores": os.cpu_count() or 0, "gpu": gpu, "os": platform.platform()},
        "versions": versions(packages),
    }


def flat_header(header: Mapping[str, Any]) -> dict[str, Any]:
    """`run_header`'s content in one level, as the results stored under `machine` by some scripts hold it.

    Args:
        header: A `run_header()`.

    Returns:
        `{"cpu", "cores" (the logical cores), "gpu", "os", <versions>..., "date"}`.
    """
    machine = header["machine"]
    return {
        "cpu": machine["cpu"],
        "cores": machine["logical_cores"],
        "gpu": machine["gpu"],
        "os": machine["os"],
        **header["versions"],
        "date": header["date"],
    }


def describe(header: Mapping[str, Any]) -> str:
    """A header as one sentence for a Markdown page: machine; versions (those installed); date.

    Args:
        header: A `run_header()` (or a document that starts with one), or a `flat_header()`.

    Returns:
        E.g. `AMD EPYC 7B13, 2 logical cores; Python 3.11.7, torch 2.9.1, f5lite 0.1.0; 2025-06-01T12:00:00+00:00`.
    """
    if "versions" in header:
        machine, found, cores = header["machine"], header["versions"], header["machine"]["logical_cores"]
    else:
        machine, cores = header, header["cores"]
        found = {k: v for k, v in header.items() if k not in (*_FLAT_MACHINE, "date")}
    where = f"{machine['cpu']}, {cores} logical cores" + (f", {machine['gpu']}" if machine.get("gpu") else "")
    names = ", ".join(f"{_DISPLAY.get(name, name)} {value}" for name, value in found.items() if value is not None)
    return f"{where}; {names}; {header['date']}"


def write_results(
    path: Path,
    document: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    markdown: str | None = None,
    *,
    indent: int = 1,
) -> None:
    """Write a results document as JSON at `path` and, if given, the Markdown page beside it (`.md`).

    Args:
        path: The JSON file (its folder is created).
        document: One object, or a list of rows; each must carry a run header, nested (`date`, `machine`,
            `versions` at its top, as `run_header` makes it) or flat (a `flat_header` under `machine`).
        markdown: The page's text.
        indent: JSON indentation.

    Raises:
        ValueError: The document, or a row, records no machine, versions or date.
    """
    rows = [document] if isinstance(document, Mapping) else list(document)
    for row in rows:
        missing = _missing_header(row)
        if missing:
            raise ValueError(f"{path.name}: the results record no {', '.join(missing)}: add run_header()")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=indent) + "\n", encoding="utf-8")
    if markdown is not None:
        path.with_suffix(".md").write_text(markdown, encoding="utf-8")


# ---------------------------------------------------------------------------------------------------- helpers


def _result_name(name: str, round_: int) -> str:
    """A file name for a run's result: readable, and distinct for distinct configuration names."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:60]
    digest = hashlib.sha1(name.encode()).hexdigest()[:8]
    return f"{slug}-{digest}-round{round_}.json"


def _text(file: IO[bytes]) -> str:
    file.seek(0)
    return file.read().decode("utf-8", errors="replace")


def _poll(watcher: Watch, pid: int, done: threading.Event, poll_s: float) -> None:
    while not done.is_set():
        watcher.poll(pid)
        done.wait(poll_s)


def _exit_error(returncode: int, stderr: str) -> str | None:
    """None for exit status 0; else the status (or signal) and the last line the child wrote to its standard error."""
    if returncode == 0:
        return None
    status = f"exit {returncode}"
    if returncode < 0:
        with contextlib.suppress(ValueError):
            status = f"killed by {signal.Signals(-returncode).name}"
    lines = [line for line in stderr.splitlines() if line.strip()]
    return f"{status}: {lines[-1].strip()}" if lines else status


def _read_result(path: Path | None, stdout: str) -> tuple[dict[str, Any] | None, str | None]:
    """The child's JSON object from `path`, or from the last non-empty line of `stdout` when `path` is None."""
    if path is not None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            return None, f"wrote no result to {path}"
    else:
        lines = [line for line in stdout.splitlines() if line.strip()]
        if not lines:
            return None, "printed no result (a JSON object on its last line of output)"
        text = lines[-1]
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None, f"its result is not JSON: {text.strip()[:120]!r}"
    if not isinstance(value, dict):
        return None, f"its result is not a JSON object: {text.strip()[:120]!r}"
    return value, None


def _git_commit(package: Path) -> str | None:
    """The short commit of the checkout holding `package`, `+modified` when its files differ; None outside git."""
    root = package.parent
    if not (root / ".git").exists():
        return None
    git = ["git", "-C", str(root)]
    try:
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run([*git, "status", "--porcelain", "--", package.name], capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return head.stdout.strip() + ("+modified" if dirty.stdout.strip() else "")


def _missing_header(row: Mapping[str, Any]) -> list[str]:
    """What of a run header a results object lacks, in the nested or the flat layout."""
    machine = row.get("machine")
    if not isinstance(machine, Mapping):
        return ["machine", "versions", "date"]
    found = row.get("versions", machine)
    date = row.get("date", machine.get("date"))
    checks = {"CPU": "cpu" in machine, "torch version": "torch" in found, "f5lite version": "f5lite" in found}
    return [what for what, ok in {**checks, "date": bool(date)}.items() if not ok]
