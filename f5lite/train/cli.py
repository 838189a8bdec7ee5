"""`python -m f5lite.train +recipe=NAME [key=value ...]` and `f5lite-train`: compose the config and train.

Exit status: 0 when training finished, 2 for a bad config or input (one line on stderr), 143 after SIGTERM (a
checkpoint of the last finished update was written), 1 when training failed.

Before anything else, `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` is set unless the user configured the CUDA
allocator (`default_allocator`).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import MutableMapping, Sequence

from f5lite.config import compose_config
from f5lite.train.lifecycle import TrainingStopped
from f5lite.train.trainer import Trainer

ALLOC_CONF = "PYTORCH_CUDA_ALLOC_CONF"
"""The CUDA allocator's settings; `PYTORCH_ALLOC_CONF` (its newer name) and the HIP one count as set by the user too."""
_ALLOC_VARS = (ALLOC_CONF, "PYTORCH_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF")


def default_allocator(environ: MutableMapping[str, str] = os.environ) -> bool:
    """Set `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` unless the user configured the allocator.

    Batches of varying lengths ask for blocks of ever-different sizes; fixed-size segments then fragment, and the
    reserved memory grows past what is used until an out-of-memory error. Expandable segments grow in place
    instead. The allocator reads the variable once, when CUDA first allocates, so this runs first thing in `main`.

    Args:
        environ: the environment to update (the process's by default).

    Returns:
        Whether the variable was set here.
    """
    if any(environ.get(name) for name in _ALLOC_VARS):
        return False
    environ[ALLOC_CONF] = "expandable_segments:True"
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """Run training from command-line overrides.

    Args:
        argv: Hydra overrides; default `sys.argv[1:]`.

    Returns:
        The process exit status.
    """
    default_allocator()  # before anything touches CUDA
    args = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        cfg = compose_config(args)
        trainer = Trainer(cfg)
    except ValueError as err:
        sys.stderr.write(f"f5lite-train: {err}\n")
        return 2
    try:
        trainer.fit()
    except TrainingStopped as stopped:
        sys.stderr.write(f"f5lite-train: stopped by a signal; checkpoint at update {trainer.update}\n")
        return int(stopped.code or 1)
    except ValueError as err:  # the run directory was taken by another launch meanwhile
        sys.stderr.write(f"f5lite-train: {err}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
