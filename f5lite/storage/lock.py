"""Locks that keep two processes from writing one folder: a run directory's, and any folder's on one host.

`RunLock`: one training launch per run directory. `RUN_DIR/run.lock` names the holder (host, pid, the process's
start) and beats while it runs. Two launches into one run directory would overwrite each other's checkpoints (the
second one even removes the first's in-flight `step-N.tmp`). The lock is created with `O_EXCL`, so only one launch
gets it. A lock left behind by a process that died without releasing it (SIGKILL, a node crash) is stale: on the
same host the holder's pid must still be the same process (its start, `process_start`, tells a process apart from a
later one given the same pid, after a restart say); on another host the lock's heartbeat (its modification time,
refreshed while training runs) must be older than `STALE_AFTER_S`. A stale lock is taken over with a warning.

`FolderLock`: one writer of a folder on one host (`f5lite-transcribe`'s OUT, a studio project's job), an advisory
`flock` on an open descriptor. The kernel drops it when the last process holding the descriptor ends, however it
ends, so it is never stale; a child process given the descriptor (`pass_fds`) keeps it for as long as it runs.
`flock` holds between processes of one host (on a network file system it may not hold across hosts).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import time
from pathlib import Path

from f5lite.storage.names import LOCK_FILE

log = logging.getLogger(__name__)

STALE_AFTER_S = 600.0
"""A lock held from another host whose heartbeat is older than this is taken for abandoned."""


class RunLockError(ValueError):
    """The run directory is in use by another launch."""


def process_start(pid: int) -> str | None:
    """When process `pid` started, as `BOOT_ID:TICKS` (the kernel's boot id, the start in clock ticks since boot).

    Two processes given the same pid (one after the other, or before and after a restart) never share it.

    Returns:
        The stamp; None when no such process runs, or there is no `/proc` to ask.
    """
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 22 (starttime); the command name (field 2) may hold spaces and parentheses, so count after the last ")".
    return f"{boot}:{stat.rsplit(')', 1)[1].split()[19]}"


def alive(pid: int, start: str | None = None) -> bool:
    """Whether process `pid` runs, and, when `start` is given, is the process that started then (`process_start`).

    An ended process, a zombie (ended, not yet reaped) and a later process given the same pid (after a restart, or
    once the pids wrapped) are not. Without `/proc` the pid alone decides.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # someone else's process: alive
            return True
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z" and (start is None or process_start(pid) == start)


class RunLock:
    """The lock of one run directory, held by this process between `acquire` and `release`."""

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.path = Path(run_dir) / LOCK_FILE
        self.held = False

    def acquire(self) -> None:
        """Take the lock (creating the run directory if needed), taking over a stale one with a warning.

        Raises:
            RunLockError: another live launch holds it (one line naming the holder).
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        me = {"host": socket.gethostname(), "pid": os.getpid(), "start": process_start(os.getpid())}
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                self._check_holder(me)
                continue
            # Not an atomic write (`f5lite.atomic`): the lock is taken by creating the file with O_EXCL; a rename over
            # the name would succeed for two launches at once. A holder's file read half-written is "unreadable" to
            # `_check_holder`, which refuses until it is old enough to be stale.
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                json.dump({**me, "since": time.time()}, file)
                file.flush()
                os.fsync(file.fileno())
            self.held = True
            return
        raise RunLockError(f"{self.path} keeps changing: another launch is taking this run directory")

    def _check_holder(self, me: dict[str, object]) -> None:
        """Remove the existing lock if it is stale or our own; raise if a live launch holds it."""
        try:
            holder = json.loads(self.path.read_text(encoding="utf-8"))
            host, pid, start = str(holder["host"]), int(holder["pid"]), holder.get("start")
            age = time.time() - self.path.stat().st_mtime
        except FileNotFoundError:
            return  # released meanwhile: try again
        except (OSError, ValueError, KeyError, TypeError):
            host, pid, start, age = "?", -1, None, time.time() - self.path.stat().st_mtime
            if age < STALE_AFTER_S:
                raise RunLockError(
                    f"run_dir {self.path.parent} is locked ({self.path} is unreadable, last touched {age:.0f} s ago); "
                    "if no launch uses it, remove the file"
                ) from None
        if host == me["host"] and pid == me["pid"]:
            log.debug("%s is held by this process already", self.path)
        elif host == me["host"] and alive(pid, start):
            raise RunLockError(
                f"run_dir {self.path.parent} is in use by pid {pid} on this host ({host}); stop that run first, or "
                "give another run_dir"
            )
        elif host != me["host"] and host != "?" and age < STALE_AFTER_S:
            raise RunLockError(
                f"run_dir {self.path.parent} is in use by pid {pid} on host {host} (alive {age:.0f} s ago); stop "
                f"that run first, or give another run_dir (a lock silent for {STALE_AFTER_S:.0f} s is taken over)"
            )
        else:
            log.warning("taking over the stale lock %s of pid %s on host %s", self.path, pid, host)
        self.path.unlink(missing_ok=True)

    def heartbeat(self) -> None:
        """Show that the holder is alive (other hosts judge staleness by this)."""
        if self.held:
            os.utime(self.path)

    def release(self) -> None:
        """Remove the lock if this process holds it."""
        if self.held:
            self.path.unlink(missing_ok=True)
            self.held = False


class FolderLockError(ValueError):
    """Another process holds the folder's lock."""


class FolderLock:
    """An exclusive `flock` on a file or a folder (see the module docstring), held from `acquire` to `release`.

    Args:
        path: the file (created if missing) or the existing folder to lock.
        busy: the one-line message of `FolderLockError` when another process holds it.
    """

    def __init__(self, path: str | os.PathLike[str], busy: str) -> None:
        self.path = Path(path)
        self.busy = busy
        self.fd: int | None = None

    def acquire(self) -> FolderLock:
        """Take the lock without waiting.

        Returns:
            The lock, held (`fd` is its descriptor: pass it to a child that is to keep holding it).

        Raises:
            FolderLockError: another process (or another descriptor of this one) holds it.
        """
        flags = os.O_RDONLY if self.path.is_dir() else os.O_RDWR | os.O_CREAT
        fd = os.open(self.path, flags, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise FolderLockError(self.busy) from None
        self.fd = fd
        return self

    def release(self) -> None:
        """Close this process's descriptor (a child given it keeps the lock until it ends)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
