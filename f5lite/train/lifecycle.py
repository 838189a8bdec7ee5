"""The ends of a training launch: stopping on a signal, and closing down.

Launchers kill a job some seconds after SIGTERM (torchrun and SLURM: 30 s by default), so the checkpoint written on
a stop request is bounded by `ckpt.stop_timeout_s`: a save that has not finished by then is abandoned (the previous
checkpoint stays intact) and the process exits at once, with a message saying so, rather than being killed in the
middle of something else.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable
from typing import NoReturn

from tqdm import tqdm

from f5lite.data.loader import TrainData
from f5lite.storage.lock import RunLock
from f5lite.storage.store import CheckpointStore
from f5lite.train.loggers import MetricLogger
from f5lite.train.signals import StopRequest

log = logging.getLogger(__name__)


class TrainingStopped(SystemExit):
    """Raised after a signal-requested checkpoint; its code is 128 + the signal number (143 for SIGTERM)."""


def stop_after_checkpoint(
    signum: int,
    *,
    main: bool,
    update: int,
    save: Callable[[float], bool],
    store: CheckpointStore,
    lock: RunLock,
    budget: float,
) -> NoReturn:
    """Save the current update within `budget` seconds (rank 0) and stop with 128 + the signal number.

    Args:
        signum: the signal that asked for the stop.
        main: whether this is rank 0 (the one that writes checkpoints).
        update: the update being saved (for messages).
        save: writes the checkpoint, waiting at most the given seconds; False when they passed first.
        store: the checkpoint store (its background save is waited for).
        lock: the run directory's lock, released before an abandoned save's immediate exit.
        budget: `ckpt.stop_timeout_s`.

    Raises:
        TrainingStopped: always, once the checkpoint is written.
    """
    code = 128 + signum
    if main:
        start = time.monotonic()
        done = save(budget) and store.wait(timeout=budget - (time.monotonic() - start))
        if not done:
            message = (
                f"f5lite-train: the checkpoint of update {update} did not finish within "
                f"ckpt.stop_timeout_s={budget:g}; the previous checkpoint is intact (raise the launcher's grace "
                "period and ckpt.stop_timeout_s)\n"
            )
            sys.stderr.write(message)
            sys.stderr.flush()
            lock.release()
            os._exit(code)
        log.info("stopped by signal %d: checkpoint of update %d written", signum, update)
    raise TrainingStopped(code)


def close_launch(
    bar: tqdm, stop: StopRequest, logger: MetricLogger, data: TrainData, store: CheckpointStore, lock: RunLock
) -> None:
    """Undo what a `fit` set up, whatever ended it.

    The progress bar, the signal handlers, the logger, the loader workers, the background checkpoint (waited for),
    and last the run directory's lock.
    """
    bar.close()
    stop.uninstall()
    logger.close()
    data.close_workers()
    try:
        store.wait()
    finally:
        lock.release()
