"""Long jobs as processes whose whole state is in a folder: started, running, ended with an exit status, its log.

A job folder holds `job.json` (the command, the wrapper's pid and its `process_start` stamp, when it started),
`output.log` (the command's stdout and stderr) and, once the command has ended, `status.json` (written by
`f5lite.studio.child`). `state` reads only these files and the process table, so the studio can be restarted, or
the page reloaded, while a job runs: the job is found running, or ended with its status and the last lines of its
log. A wrapper killed outright (SIGKILL, a machine restart) leaves no status: the job reads as `lost`. The recorded
stamp tells the wrapper apart from a later process given the same pid, so that one never reads as the job, and
`stop` never signals it.

One job runs per folder at a time: `Claim` takes the folder's `FolderLock` (or that of a folder several job
folders share, as a project's trainings share its `runs/`) before anything is written and hands it to the job's
wrapper, which holds it until the job ends, so two starts at once (two clicks, a second studio) cannot both start,
and `job.json` is never replaced while its job runs; a job reads `running` for as long as its wrapper does. Jobs run
in their own session, so `stop` signals the command and nothing else, and a Ctrl-C of the studio does not reach
them. Their environment is the studio's less its secrets (`f5lite.credentials.CREDENTIAL_ENV`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from f5lite.atomic import write_json_atomic
from f5lite.credentials import CREDENTIAL_ENV
from f5lite.storage.lock import FolderLock, FolderLockError, process_start
from f5lite.storage.lock import alive as process_alive
from f5lite.studio.child import STATUS_FILE

JOB_FILE = "job.json"
LOG_FILE = "output.log"

_children: dict[int, subprocess.Popen[bytes]] = {}
"""Wrappers this studio process started, polled so that an ended one is reaped (a zombie still has a pid)."""


class JobBusyError(ValueError):
    """A job already runs in this folder."""


@dataclass(frozen=True)
class JobState:
    """What a job folder says.

    Attributes:
        state: `none` (never started), `running`, `done` (exit 0), `failed` (another exit status), `stopped` (ended
            by the studio's stop: SIGTERM, or exit 143 from a trainer that saved its checkpoint), `lost` (the wrapper
            disappeared without recording an exit status).
        rc: the exit status, when it ended with one.
        command: the command line.
        pid: the wrapper's process id.
        started: when it started (seconds since the epoch).
    """

    state: str
    rc: int | None = None
    command: tuple[str, ...] = ()
    pid: int | None = None
    started: float | None = None

    @property
    def running(self) -> bool:
        """Whether the job is running."""
        return self.state == "running"


def alive(pid: int, start: str | None) -> bool:
    """Whether process `pid` runs and is the process that started at `start` (`f5lite.storage.lock.alive`)."""
    child = _children.get(pid)
    if child is not None and child.poll() is not None:
        return False  # ours, and ended: reaped now
    return process_alive(pid, start)


def state(folder: Path) -> JobState:
    """The job's state, from its folder and the process table."""
    try:
        job = json.loads((folder / JOB_FILE).read_text(encoding="utf-8"))
        command, pid, started = tuple(job["command"]), int(job["pid"]), float(job["started"])
        stamp = job.get("process_start")
    except FileNotFoundError:
        return JobState("none")
    except (OSError, ValueError, KeyError, TypeError):
        return JobState("lost")
    # Running until the wrapper is gone (it writes the status, then ends): as long as it holds the job's lock.
    if alive(pid, stamp):
        return JobState("running", None, command, pid, started)
    try:
        rc = int(json.loads((folder / STATUS_FILE).read_text(encoding="utf-8"))["rc"])
    except (OSError, ValueError, KeyError, TypeError):
        return JobState("lost", None, command, pid, started)
    name = "done" if rc == 0 else "stopped" if rc in (128 + signal.SIGTERM, 128 + signal.SIGINT) else "failed"
    return JobState(name, rc, command, pid, started)


def child_environment() -> dict[str, str]:
    """The environment of a job: the studio's, less its secrets (`f5lite.credentials.CREDENTIAL_ENV`), with unbuffered Python output."""
    return {**{k: v for k, v in os.environ.items() if k not in CREDENTIAL_ENV}, "PYTHONUNBUFFERED": "1"}


class Claim:
    """The right to start a folder's job: a `FolderLock` taken before anything is written, then handed to the job.

    `with Claim(folder) as claim: ...; claim.start(command)`. Entering takes the lock without waiting (the folder
    itself, or the folder `lock`, shared by several job folders; created if missing). `start` passes its
    descriptor to the job's wrapper (`f5lite.studio.child`), which holds it for as long as the job runs, whichever
    studio process is running by then; this process's descriptor is closed after the start, or on leaving the block.

    Args:
        folder: the job folder.
        lock: the folder to lock instead (a training locks its project's `runs/`: one training at a time).

    Raises:
        JobBusyError: on entering, while another job (or another start) holds the lock.
    """

    def __init__(self, folder: Path, lock: Path | None = None) -> None:
        self.folder = folder
        self.lock = FolderLock(lock or folder, f"a job is already running in {folder}: stop it or wait for it to end")

    def __enter__(self) -> Claim:
        self.lock.path.mkdir(parents=True, exist_ok=True)
        try:
            self.lock.acquire()
        except FolderLockError as err:
            raise JobBusyError(str(err)) from None
        return self

    def __exit__(self, *exc: object) -> None:
        self.lock.release()

    def start(self, command: list[str], cwd: Path | None = None) -> JobState:
        """Start `command` as the folder's job (its previous log and status are replaced).

        Args:
            command: the program and its arguments.
            cwd: the working directory (default: the folder).

        Returns:
            The running job's state.
        """
        assert self.lock.fd is not None, "start inside `with Claim(...)`"
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / STATUS_FILE).unlink(missing_ok=True)
        wrapper = [sys.executable, "-m", "f5lite.studio.child", str(self.folder), "--", *command]
        with open(self.folder / LOG_FILE, "wb") as log:
            process = subprocess.Popen(
                wrapper, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cwd or self.folder,
                env=child_environment(), start_new_session=True, pass_fds=(self.lock.fd,),
            )  # fmt: skip
        _children[process.pid] = process
        job = {
            "command": command,
            "pid": process.pid,
            "started": time.time(),
            "process_start": process_start(process.pid),
        }
        write_json_atomic(self.folder / JOB_FILE, job)
        self.lock.release()
        return state(self.folder)


def start(folder: Path, command: list[str], cwd: Path | None = None) -> JobState:
    """Claim the folder (`Claim`) and start `command` as its job.

    Raises:
        JobBusyError: the folder's job is running.
    """
    with Claim(folder) as claim:
        return claim.start(command, cwd)


def stop(folder: Path, signum: int = signal.SIGTERM) -> bool:
    """Signal the running job's session (the command; the wrapper records the end).

    Returns:
        Whether a running job was signalled.
    """
    current = state(folder)
    if not current.running or current.pid is None:
        return False
    try:
        os.killpg(current.pid, signum)
    except ProcessLookupError:
        return False
    return True


def wait(folder: Path, timeout: float) -> JobState:
    """Wait up to `timeout` seconds for the folder's job to end; its state then."""
    deadline = time.monotonic() + timeout
    current = state(folder)
    while current.running and time.monotonic() < deadline:
        time.sleep(0.2)
        current = state(folder)
    return current


def log_tail(folder: Path, lines: int = 30, max_bytes: int = 64_000) -> str:
    """The last `lines` lines of the job's log, as a terminal shows them (a progress bar's redraws collapsed)."""
    path = folder / LOG_FILE
    try:
        with open(path, "rb") as file:
            file.seek(max(0, path.stat().st_size - max_bytes))
            text = file.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    shown = [line.rstrip("\r").rsplit("\r", 1)[-1] for line in text.split("\n")]
    return "\n".join(shown[-lines:]).strip("\n")
