"""Processes for the benchmarks: every run of a configuration in a fresh interpreter, rounds interleaved, time limits.

A fresh process per run keeps its peak memory its own and carries nothing over. A child reports a JSON object on its
last line of output, or in the file that replaces `RESULT` in its command line. A VM's speed drifts by 10-25 % within
minutes, so `run_interleaved` runs every configuration once per round, in turn; `median_record` keeps the median.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

RESULT = "{result}"
"""Placeholder in a command line: replaced by the file where the child writes its JSON result."""
LAUNCHED_AT_ENV = "F5LITE_LAUNCHED_AT"
"""Environment variable holding the parent's `time.time()` at launch, for a child that times its own start-up."""
CHILD = "--child"
"""The option of a script's child mode: `script --child SPEC` measures one configuration (`child_config`)."""


@dataclass(frozen=True)
class Config:
    """One configuration: a unique name, its child's command line (items may hold `RESULT`), extra environment."""

    name: str
    argv: Sequence[str]
    env: Mapping[str, str] = field(default_factory=dict)


def child_config(name: str, script: str | Path, spec: Mapping[str, Any], **env: str) -> Config:
    """A configuration running `script --child SPEC`, the spec as JSON (the child reads it with `child_spec`)."""
    return Config(name, [sys.executable, str(script), CHILD, json.dumps(spec)], env)


def child_spec(argv: Sequence[str]) -> dict[str, Any] | None:
    """The spec of a `--child SPEC` command line, or None for any other."""
    return json.loads(argv[1]) if list(argv[:1]) == [CHILD] else None


@dataclass(frozen=True)
class Run:
    """One run: process, exit status, clock (`started`: monotonic at launch), load, result or error, output, watch."""

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
        return self.result if self.result is not None else {**identity, "error": self.error}


class ChildFailedError(RuntimeError):
    """A configuration's child failed; the message is `Run.failure`, the run is `.run`."""

    def __init__(self, run: Run) -> None:
        super().__init__(run.failure)
        self.run = run


def schedule(names: Sequence[str], rounds: int, *, alternate: bool = False) -> list[tuple[int, str]]:
    """The `(round, name)` order of the runs: every name once per round, every other round reversed if `alternate`."""
    if not names or len(set(names)) != len(names) or rounds < 1:
        raise ValueError(f"need distinct configuration names and at least 1 round, got {list(names)}, {rounds}")
    return [(r, name) for r in range(rounds) for name in (names[::-1] if alternate and r % 2 else names)]


def run_child(
    config: Config,
    round_: int = 0,
    *,
    result_dir: Path | None = None,
    timeout: float | None = None,
    watch: Callable[[], Callable[[int], Mapping[str, Any]]] | None = None,
    poll_s: float = 0.2,
) -> Run:
    """Run one configuration in a fresh process and collect its JSON result (a failure does not raise here).

    Args:
        config: What to run.
        round_: The round this run belongs to (names its result file).
        result_dir: Where `RESULT` files go (default: a temporary directory, removed afterwards).
        timeout: Seconds the child may run before it is killed and the run fails.
        watch: Makes a function called with the child's pid every `poll_s` seconds while it runs (at least once);
            the dict it returned last becomes `Run.watched`.
        poll_s: Seconds between polls.
    """
    with contextlib.ExitStack() as stack:
        if result_dir is None:
            result_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="f5lite_bench_")))
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", config.name)[:60]
        result_path = result_dir / f"{slug}-{hashlib.sha1(config.name.encode()).hexdigest()[:8]}-round{round_}.json"
        to_file = any(RESULT in item for item in config.argv)
        result_path.unlink(missing_ok=True)  # a file left by an earlier run is not this run's result
        argv = [item.replace(RESULT, str(result_path)) for item in config.argv]
        load = os.getloadavg()[0]
        env = {**os.environ, **config.env, LAUNCHED_AT_ENV: repr(time.time())}
        # Files, not pipes: a pipe stays open while anything the child started lives (a loader worker, a compile
        # pool), and reading it to its end would count their shut-down in the wall clock.
        out, err = (stack.enter_context(tempfile.TemporaryFile()) for _ in range(2))
        started = time.monotonic()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        watcher, done, watched = (watch() if watch else None), threading.Event(), dict[str, Any]()
        poller = threading.Thread(target=_poll, args=(watcher, proc.pid, done, poll_s, watched), daemon=True)
        if watcher is not None:
            poller.start()
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:  # timed out or interrupted: leave no child behind
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            wall = time.monotonic() - started
            done.set()
            if watcher is not None:
                poller.join()
        stdout, stderr = _text(out), _text(err)
        result, error = None, _exit_error(proc.returncode, stderr)
        if timed_out:
            error = f"no result within {timeout:g} s"
        elif error is None:
            result, error = _read_result(result_path if to_file else None, stdout)
        return Run(config.name, round_, proc.pid, None if timed_out else proc.returncode, started, wall, load,
                   result, error, stdout, stderr, watched)  # fmt: skip


def run_interleaved(
    configs: Sequence[Config],
    rounds: int,
    *,
    alternate: bool = False,
    check: bool = True,
    work_dir: Path | None = None,
    on_run: Callable[[Run], None] | None = None,
    **child: Any,
) -> list[Run]:
    """Every configuration (names distinct) in its own process, once per round, in turn (see `schedule`); the runs.

    `check` raises `ChildFailedError` at the first failed run (else failed runs are returned too); `work_dir` keeps
    the `RESULT` files (default: a temporary directory per run); `on_run` sees each run as soon as it ends (what it
    raises stops the rest); `child` holds `timeout`, `watch` and `poll_s` of `run_child`.
    """
    by_name, runs = {c.name: c for c in configs}, list[Run]()
    if work_dir is not None:
        work_dir.mkdir(parents=True, exist_ok=True)
    for r, name in schedule([c.name for c in configs], rounds, alternate=alternate):
        run = run_child(by_name[name], r, result_dir=work_dir, **child)
        if check and not run.ok:
            raise ChildFailedError(run)
        runs.append(run)
        if on_run is not None:
            on_run(run)
    return runs


def median_record(records: Sequence[Mapping[str, Any]], key: str) -> dict[str, Any]:
    """The record with the (lower) median `key` of those without an error (else the first), all as `<key>_rounds`."""
    ok = sorted((r for r in records if "error" not in r), key=lambda r: float(r[key]))
    if not ok:
        return dict(records[0])
    return {**ok[(len(ok) - 1) // 2], f"{key}_rounds": [round(float(r[key]), 4) for r in ok]}


def threads_env(threads: int) -> dict[str, str]:
    """The environment of a child limited to `threads` threads (torch and the BLAS libraries read these)."""
    return dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse `type` for one integer of at least `minimum` (e.g. `--rounds 3`)."""

    def parse(text: str) -> int:
        if not re.fullmatch(r"-?\d+", text.strip()) or int(text) < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer >= {minimum}")
        return int(text)

    return parse


def int_list(minimum: int) -> Callable[[str], list[int]]:
    """An argparse `type` for comma-separated integers, each at least `minimum` (e.g. `--mel-lengths 300,340`)."""

    def parse(text: str) -> list[int]:
        try:
            values = [int(v) for v in text.split(",") if v]
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None
        if not values or min(values) < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} needs integers >= {minimum}")
        return values

    return parse


def status_kb(pid: int | str, key: str) -> int | None:
    """A `/proc/PID/status` figure in KiB (`VmHWM`, the peak resident set; `VmRSS`), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            return next((int(line.split()[1]) for line in status if line.startswith(f"{key}:")), None)
    except (OSError, ValueError):
        return None


def peak_rss(pid: int | str = "self") -> int | None:
    """`VmHWM` (peak resident set size) of a process in bytes, or None when it is gone."""
    kb = status_kb(pid, "VmHWM")
    return None if kb is None else kb * 1024


def forked_children() -> list[int]:
    """This process's live children forked from it (DataLoader workers; not a spawned helper process), in pid order."""
    own, found = Path("/proc/self/cmdline").read_bytes(), set[int]()
    for task in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError):
            found.update(int(p) for p in Path(f"/proc/self/task/{task}/children").read_text().split())
    forked = []
    for pid in sorted(found):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/cmdline").read_bytes() == own:
                forked.append(pid)
    return forked


def cpu_seconds(pid: int | str = "self") -> float | None:
    """User + system CPU seconds a process has used so far, or None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime and stime of proc(5), in ticks


@contextlib.contextmanager
def serving(model: str, voices: Path, extra: list[str], log: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """`f5lite-serve model=MODEL --voices VOICES` on a free port: its process and URL once `/health` answers.

    Its output goes into `log` (an unread pipe would fill and block it); SystemExit when it fails or is not ready.
    It is stopped at the end.
    """
    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, "-m", "f5lite.serve", f"model={model}", "--voices", str(voices), "--port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen([*command, *extra], stdout=out, stderr=subprocess.STDOUT)
    url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 300
    try:
        while True:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            if process.poll() is not None:
                raise SystemExit(f"the server failed: {log.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise SystemExit("the server was not ready in 300 s")
            time.sleep(0.2)
        yield process, url
    finally:
        process.terminate()
        process.wait(timeout=60)


def _text(file: IO[bytes]) -> str:
    file.seek(0)
    return file.read().decode("utf-8", errors="replace")


def _poll(poll: Callable[[int], Mapping[str, Any]], pid: int, done: threading.Event, poll_s: float, into: dict) -> None:
    while True:  # at least once, however short the run
        into.update(poll(pid))
        if done.wait(poll_s):
            return


def _exit_error(returncode: int, stderr: str) -> str | None:
    """None for exit status 0; else the status (or signal) and the last line the child wrote to its standard error."""
    if returncode == 0:
        return None
    status = f"exit {returncode}"
    if returncode < 0:
        with contextlib.suppress(ValueError):
            status = f"killed by {signal.Signals(-returncode).name}"
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return f"{status}: {lines[-1]}" if lines else status


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
