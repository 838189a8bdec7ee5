"""`python -m f5lite.train +recipe=NAME [key=value ...]` and `f5lite-train`: compose the config and train.

Exit status: 0 when training finished, 2 for a bad config or input (one line on stderr), 143 after SIGTERM (a
checkpoint of the last finished update was written), 1 when training failed.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

from f5lite.config import compose_config
from f5lite.train.trainer import Trainer, TrainingStopped


def main(argv: Sequence[str] | None = None) -> int:
    """Run training from command-line overrides.

    Args:
        argv: Hydra overrides; default `sys.argv[1:]`.

    Returns:
        The process exit status.
    """
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
