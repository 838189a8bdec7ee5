"""One training launch per run directory: `RUN_DIR/run.lock` names the holder (host, pid) and beats while it runs.

Two launches into one run directory would overwrite each other's checkpoints (the second one even removes the
first's in-flight `step-N.tmp`). The lock is created with `O_EXCL`, so only one launch gets it. A lock left behind
by a process that died without releasing it (SIGKILL, a node crash) is stale: on the same host the holder's pid is
checked; on another host the lock's heartbeat (its modification time, refreshed while training runs) must be older
than `STALE_AFTER_S`. A stale lock is taken over with a warning.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from pathlib import Path

log = logging.getLogger(__name__)

LOCK_FILE = "run.lock"
"""The lock's file name inside the run directory."""
STALE_AFTER_S = 600.0
"""A lock held from another host whose heartbeat is older than this is taken for abandoned."""


class RunLockError(ValueError):
    """The run directory is in use by another launch."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


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
        me = {"host": socket.gethostname(), "pid": os.getpid()}
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                self._check_holder(me)
                continue
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
            host, pid = str(holder["host"]), int(holder["pid"])
            age = time.time() - self.path.stat().st_mtime
        except FileNotFoundError:
            return  # released meanwhile: try again
        except (OSError, ValueError, KeyError, TypeError):
            host, pid, age = "?", -1, time.time() - self.path.stat().st_mtime
            if age < STALE_AFTER_S:
                raise RunLockError(
                    f"run_dir {self.path.parent} is locked ({self.path} is unreadable, last touched {age:.0f} s ago); "
                    "if no launch uses it, remove the file"
                ) from None
        if host == me["host"] and pid == me["pid"]:
            log.debug("%s is held by this process already", self.path)
        elif host == me["host"] and _alive(pid):
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
