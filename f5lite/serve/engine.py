"""Pieces of speech from many requests, batched into one sampler call: the server's only user of the model.

A request's text is cut into pieces (`f5lite.serve.speech`); each piece is submitted here on its own (a `Task`), the
next only when the one before has come back, so a request holds at most one place in the queue and a long text does not keep
short ones waiting: requests take turns, piece by piece.

One thread runs the model. It takes the oldest piece, then waits up to `max_wait` seconds for more pieces with the
same sampler settings, in arrival order, while the batch stays within `max_batch_frames` (the sum of the pieces'
frames, reference included: what the backbone's attention and the vocoder hold) and `max_batch` pieces; then one
`Synthesizer.generate` call makes them all (one sampler call, each piece with its own reference, text and length;
each piece vocoded on its own): the engine decides only what runs together, and when. A piece whose request was
cancelled (the client went away, or ran out of time) is dropped before it is run; a piece taken into a batch is marked running (its future can no
longer be cancelled, so its result always has a place to go). A failure in a batch fails its pieces, not the thread.
Every piece's frames are bounded before it is submitted (`f5lite.serve.speech.plan_request`), and `submit` refuses a
piece over `max_batch_frames` (`OverBudgetError`) rather than queue it: the first piece of a batch is taken whatever
its size, so no batch, even of one piece, may hold the model longer than its budget of frames takes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

from torch import Tensor

from f5lite.infer.plan import Piece
from f5lite.infer.synthesizer import Synthesizer
from f5lite.sampling import SamplerOptions

logger = logging.getLogger(__name__)


class OverBudgetError(ValueError):
    """A piece with more frames than a whole batch may hold: refused, never run."""


@dataclass(eq=False)
class Task:
    """One piece of one request, queued.

    Attributes:
        piece: what to make (its voice, words and frames).
        options: the sampler settings (pieces batch together only with equal settings).
        cancelled: set when the request is abandoned.
        result: the piece's waveform `[samples]` (24 kHz, the voice's loudness), once made.
    """

    piece: Piece
    options: SamplerOptions
    cancelled: threading.Event
    result: Future[Tensor] = field(default_factory=Future)


class Engine:
    """The model's thread and its queue.

    Args:
        synthesizer: the loaded model, text encoder, vocoder and duration estimator.
        max_batch: most pieces per sampler call.
        max_batch_frames: most mel frames (summed over the pieces) per sampler call.
        max_wait: seconds the first piece of a batch waits for others.
        seed: noise seed of every batch (F5-TTS seeds each sample alike, so a piece sounds the same in any batch);
            None draws.
    """

    def __init__(
        self,
        synthesizer: Synthesizer,
        max_batch: int,
        max_batch_frames: int,
        max_wait: float,
        seed: int | None = None,
    ) -> None:
        self.synthesizer = synthesizer
        self._max_batch = max_batch
        self._max_frames = max_batch_frames
        self._max_wait = max_wait
        self._seed = seed
        self.on_batch: Callable[[int], None] = lambda size: None
        """Called with the size of every batch run (the server's metrics set it)."""
        self._pending: deque[Task] = deque()
        self._ready = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="f5lite-serve-engine", daemon=True)
        self._thread.start()

    def check(self, piece: Piece) -> None:
        """Refuse a piece that no batch can hold.

        Raises:
            OverBudgetError: one line with the piece's frames and the budget.
        """
        if piece.frames > self._max_frames:
            raise OverBudgetError(
                f"a piece of {piece.frames} frames is over the server's {self._max_frames} frames per batch "
                "(--max-batch-frames): it is not run"
            )

    def submit(self, task: Task) -> Future[Tensor]:
        """Queue a piece; its `result` completes with the waveform (or the error, or `CancelledError`).

        Raises:
            OverBudgetError: the piece is over the batch budget (`check`); nothing is queued.
        """
        self.check(task.piece)
        with self._ready:
            self._pending.append(task)
            self._ready.notify()
        return task.result

    def pending(self) -> int:
        """Pieces waiting."""
        with self._ready:
            return len(self._pending)

    def stop(self) -> None:
        """Finish the running batch and stop the thread; queued pieces are cancelled."""
        with self._ready:
            self._stopping = True
            self._ready.notify()
        self._thread.join()
        for task in self._pending:
            task.result.cancel()

    def _loop(self) -> None:
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            try:
                waves = self._run(batch)
            except Exception as err:  # noqa: BLE001 - a failed batch fails its requests; the server goes on
                logger.exception("a batch of %d piece(s) failed", len(batch))
                for task in batch:
                    task.result.set_exception(err)
                continue
            for task, wave in zip(batch, waves, strict=True):
                task.result.set_result(wave)

    def _next_batch(self) -> list[Task] | None:
        """The oldest live piece and those that join it within `max_wait` (see the module docstring)."""
        with self._ready:
            first = None
            while first is None:
                while not self._pending and not self._stopping:
                    self._ready.wait()
                if self._stopping:
                    return None
                first = self._live(self._pending.popleft())
            batch, frames = [first], first.piece.frames
            deadline = time.monotonic() + self._max_wait
            while len(batch) < self._max_batch:
                for task in list(self._pending):
                    if len(batch) == self._max_batch:
                        break
                    if task.options == first.options and frames + task.piece.frames <= self._max_frames:
                        self._pending.remove(task)
                        if self._live(task) is not None:
                            batch.append(task)
                            frames += task.piece.frames
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._stopping:
                    break
                self._ready.wait(remaining)
            return batch

    @staticmethod
    def _live(task: Task) -> Task | None:
        """The task, claimed for a batch; None (its result cancelled) when its request was abandoned."""
        if task.cancelled.is_set():
            task.result.cancel()
        # False when the waiting side cancelled its future already (a request given up while queued).
        return task if task.result.set_running_or_notify_cancel() else None

    def _run(self, batch: list[Task]) -> list[Tensor]:
        """One `Synthesizer.generate` call for the batch."""
        waves = self.synthesizer.generate([task.piece for task in batch], batch[0].options, seed=self._seed)
        self.on_batch(len(batch))
        return waves
