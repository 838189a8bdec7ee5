"""SIGTERM (and SIGINT) handling: note the request in the handler, act on it at the next update boundary.

Clusters send SIGTERM before killing a job. The handler does no I/O; the training loop checks the flag after each
optimizer update, writes a checkpoint synchronously, and exits with 128 + the signal number (143 for SIGTERM).
"""

from __future__ import annotations

import signal
import threading
from types import FrameType


class StopRequest:
    """Records the first termination signal received while installed."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, object] = {}

    def install(self) -> None:
        """Install the handlers (only possible, and only done, in the main thread)."""
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGTERM, signal.SIGINT):
            self._previous[signum] = signal.signal(signum, self._handle)

    def uninstall(self) -> None:
        """Restore the previous handlers."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        self._previous.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum

    @property
    def exit_code(self) -> int:
        """The conventional exit status for the received signal (128 + its number)."""
        return 128 + (self.signum or 0)
