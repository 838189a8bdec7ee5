"""Long jobs as processes whose whole state is in a folder: started, running, ended with an exit status, its log.

A job folder holds `job.json` (the command, the wrapper's pid, when it started), `output.log` (the command's stdout
and stderr) and, once the command has ended, `status.json` (written by `f5lite.studio.child`). `state` reads only
these files and the process table, so the studio can be restarted, or the page reloaded, while a job runs: the job
is found running, or ended with its status and the last lines of its log. A wrapper killed outright (SIGKILL, a
machine restart) leaves no status: the job reads as `lost`.

One job runs per folder at a time (`start` refuses while one runs). Jobs run in their own session, so `stop`
signals the command and nothing else, and a Ctrl-C of the studio does not reach them.
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


def alive(pid: int) -> bool:
    """Whether a process of that id runs (a zombie, ended but not yet reaped, does not)."""
    child = _children.get(pid)
    if child is not None:
        return child.poll() is None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def state(folder: Path) -> JobState:
    """The job's state, from its folder and the process table."""
    try:
        job = json.loads((folder / JOB_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return JobState("none")
    except (OSError, ValueError):
        return JobState("lost")
    command, pid, started = tuple(job["command"]), int(job["pid"]), float(job["started"])
    status = folder / STATUS_FILE
    if not status.is_file():
        if alive(pid):
            return JobState("running", None, command, pid, started)
        if not status.is_file():  # it may have been written since
            return JobState("lost", None, command, pid, started)
    try:
        rc = int(json.loads(status.read_text(encoding="utf-8"))["rc"])
    except (OSError, ValueError, KeyError, TypeError):
        return JobState("lost", None, command, pid, started)
    name = "done" if rc == 0 else "stopped" if rc in (128 + signal.SIGTERM, 128 + signal.SIGINT) else "failed"
    return JobState(name, rc, command, pid, started)


def start(folder: Path, command: list[str], cwd: Path | None = None) -> JobState:
    """Start `command` as the folder's job (its previous log and status are replaced).

    Args:
        folder: the job folder (created if missing).
        command: the program and its arguments.
        cwd: the working directory (default: the folder).

    Returns:
        The running job's state.

    Raises:
        JobBusyError: the folder's job is running.
    """
    if state(folder).running:
        raise JobBusyError(f"a job is already running in {folder}: stop it or wait for it to end")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / STATUS_FILE).unlink(missing_ok=True)
    wrapper = [sys.executable, "-m", "f5lite.studio.child", str(folder), "--", *command]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with open(folder / LOG_FILE, "wb") as log:
        process = subprocess.Popen(
            wrapper, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cwd or folder, env=env,
            start_new_session=True,
        )  # fmt: skip
    _children[process.pid] = process
    write_json_atomic(folder / JOB_FILE, {"command": command, "pid": process.pid, "started": time.time()})
    return state(folder)


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
