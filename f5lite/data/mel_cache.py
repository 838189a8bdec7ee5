"""The optional cache of 24 kHz log-mels that `f5lite-prepare --mels` writes, so training need not decode audio.

Each utterance's mel `[frames, 100]` is a float32 `.npy` file under `mels/` in the prepared directory, named by
a hash of the audio path and the mel convention: re-running `f5lite-prepare` rewrites the same files, and removes
those its previous cuts named and the new ones do not (see `f5lite.prepare.ownership`). Each cut names its mel in
`custom["mel_path"]`, relative to the prepared directory.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from f5lite.atomic import atomic_path
from f5lite.audio import N_MELS


def mel_cache_path(mel_dir: Path, audio_path: Path, mel_type: str) -> Path:
    """Where the cached mel of `audio_path` goes.

    Two hex digits of the hash make a sub-folder, so that no folder holds more than a few thousand files even
    for a million utterances.

    Args:
        mel_dir: The cache folder (`OUT_DIR/mels`).
        audio_path: The absolute path of the source audio.
        mel_type: The mel convention ("vocos" or "bigvgan").

    Returns:
        The `.npy` path.
    """
    digest = hashlib.sha1(f"{mel_type}\0{audio_path}".encode()).hexdigest()[:20]
    return mel_dir / digest[:2] / f"{digest}.npy"


def write_mel(path: Path, mel: Tensor) -> None:
    """Save a mel `[frames, N_MELS]` as float32 `.npy`, atomically, creating its folder.

    Args:
        path: The target file.
        mel: The log-mel, `[frames, N_MELS]`.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as temporary, temporary.open("wb") as file:
        np.save(file, mel.detach().to(device="cpu", dtype=torch.float32).numpy())


def read_mel(path: Path) -> Tensor:
    """Load a cached mel.

    Args:
        path: A file written by `write_mel`.

    Returns:
        Tensor `[frames, N_MELS]` float32.

    Raises:
        ValueError: The file is unreadable or does not hold a float32 `[frames, N_MELS]` array.
    """
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        raise ValueError(f"cannot read cached mel {path}: {err}") from err
    if array.dtype != np.float32 or array.ndim != 2 or array.shape[1] != N_MELS or array.shape[0] == 0:
        raise ValueError(f"cached mel {path} is {array.dtype} {array.shape}, not float32 [frames, {N_MELS}]")
    return torch.from_numpy(array)
