"""Per-file work of `f5lite-prepare` spread over processes, results in input order, behind one progress bar."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from typing import Any, TypeVar

import torch
from tqdm import tqdm

Item = TypeVar("Item")
Result = TypeVar("Result")


def map_in_workers(
    function: Callable[[Item, Any], Result],
    items: Sequence[Item],
    setup: Any,
    *,
    workers: int,
    progress: bool,
    desc: str = "f5lite-prepare",
) -> Iterator[Result]:
    """Yield `function(item, setup)` for every item, in order, computed by `workers` processes.

    Args:
        function: A module-level function (the workers import it by name).
        items: The inputs; each is sent to a worker on its own.
        setup: What every call needs besides its item; sent once per worker, not with every item.
        workers: Processes to use; 1 (or fewer than two items) runs everything in this process.
        progress: Show a progress bar on a terminal.
        desc: The progress bar's label.

    Yields:
        The results, in the order of `items`.

    Raises:
        OSError: A worker process died (killed for memory, or crashed inside a decoder).
    """
    bar = tqdm(total=len(items), desc=desc, unit="file", disable=None if progress else True)
    with bar:
        if workers == 1 or len(items) < 2:
            for item in items:
                yield function(item, setup)
                bar.update()
            return
        # spawn, not fork: the caller may already run torch threads, which a forked child would inherit broken.
        context = get_context("spawn")
        with ProcessPoolExecutor(
            workers, mp_context=context, initializer=_init_worker, initargs=(function, setup)
        ) as pool:
            chunk = max(1, min(64, len(items) // (workers * 8)))
            try:
                for outcome in pool.map(_call_in_worker, items, chunksize=chunk):
                    yield outcome
                    bar.update()
            except BrokenProcessPool as err:
                raise OSError(
                    f"a worker process died ({err}); run again with --workers 1 to see on which file"
                ) from err


_worker_function: Callable[[Any, Any], Any] | None = None
_worker_setup: Any = None


def _init_worker(function: Callable[[Any, Any], Any], setup: Any) -> None:
    global _worker_function, _worker_setup
    _worker_function, _worker_setup = function, setup
    torch.set_num_threads(1)  # the workers are the parallelism; intra-op threads would oversubscribe the cores


def _call_in_worker(item: Any) -> Any:
    assert _worker_function is not None, "worker used without _init_worker"
    return _worker_function(item, _worker_setup)
