"""The training dataset: one log-mel and one transcript per manifest row, robust to files that broke after prep.

Ein notation: n - mel frames, N_MELS (100) - mel channels.

A prepared directory is read from its `manifest.jsonl` (see `f5lite-prepare`), or from an F5-TTS prepared
directory (`raw.arrow`, `duration.json`, `vocab.txt`) when the optional `datasets` package is installed. Mels come
from the cache when `f5lite-prepare --mels` wrote one for the same mel convention, otherwise from the audio.

A file that cannot be read any more (deleted, truncated, a network file system hiccup) does not stop training:
it is logged once, counted, and replaced by the item nearest in length, trying at most `max_retries` others in a
loop (no recursion). Training stops with a clear message when the share of failed reads in a process passes
`max_skip_ratio`, because then the data, not one file, is broken.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from torch import Tensor
from torch.utils.data import Dataset

from f5lite.audio import load_audio, log_mel
from f5lite.audio.mel import check_mel_kind
from f5lite.data.manifest import MANIFEST_NAME, VOCAB_NAME, ManifestRow, read_manifest
from f5lite.data.mel_cache import read_mel

logger = logging.getLogger(__name__)

F5TTS_MARKERS = ("raw.arrow", "raw")
"""Names that mark an F5-TTS prepared directory (the arrow file, or its `save_to_disk` folder)."""

_RATIO_WARMUP = 100  # failed reads are judged against at least this many reads (or the dataset size)


@dataclass(frozen=True)
class Utterance:
    """One training item.

    Attributes:
        mel: Log-mel `[n, N_MELS]` float32, at 24 kHz.
        text: The transcript (a tuple of tokens for datasets tokenized ahead of time).
        path: The audio file it came from.
        num_skipped: Unreadable items that were replaced to produce this one (0 normally).
    """

    mel: Tensor
    text: str | tuple[str, ...]
    path: str
    num_skipped: int


def load_rows(data_dir: str | os.PathLike[str]) -> list[ManifestRow]:
    """Read the rows of a prepared directory: f5lite's `manifest.jsonl`, else F5-TTS's `raw.arrow`.

    Args:
        data_dir: The directory.

    Returns:
        The rows, at least one.

    Raises:
        ValueError: The directory is missing, holds neither format, or holds no row.
        ImportError: It is an F5-TTS directory and `datasets` is not installed.
    """
    directory = Path(data_dir)
    if not directory.is_dir():
        raise ValueError(f"data directory {directory} does not exist (make one with f5lite-prepare)")
    if (directory / MANIFEST_NAME).is_file():
        rows = read_manifest(directory / MANIFEST_NAME)
    elif any((directory / name).exists() for name in F5TTS_MARKERS):
        from f5lite.data.f5tts_arrow import read_f5tts_dataset  # needs the optional `datasets` package

        rows = read_f5tts_dataset(directory)
    else:
        raise ValueError(
            f"data directory {directory} holds no {MANIFEST_NAME} (make one with f5lite-prepare) and no F5-TTS "
            "raw.arrow"
        )
    if not rows:
        raise ValueError(f"data directory {directory} holds no utterance")
    return rows


class ManifestDataset(Dataset[Utterance]):
    """Utterances of a prepared directory, as log-mels and transcripts.

    Args:
        data_dir: A directory made by `f5lite-prepare`, or an F5-TTS prepared directory.
        mel_type: Mel convention, "vocos" or "bigvgan".
        max_skip_ratio: Largest tolerated share of failed reads in one process (0 stops at the first one).
        max_retries: Replacement items tried, one after the other, for one unreadable item.

    Raises:
        ValueError: A bad directory (see `load_rows`) or argument.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        mel_type: str = "vocos",
        max_skip_ratio: float = 0.05,
        max_retries: int = 8,
    ) -> None:
        if not 0.0 <= max_skip_ratio <= 1.0:
            raise ValueError(f"max_skip_ratio={max_skip_ratio} is not valid; it must be in [0, 1]")
        if max_retries < 0:
            raise ValueError(f"max_retries={max_retries} is not valid; it must be >= 0")
        self.data_dir = Path(data_dir)
        self.rows = load_rows(self.data_dir)
        self.mel_type = check_mel_kind(mel_type)
        self.max_skip_ratio = max_skip_ratio
        self.max_retries = max_retries
        self._frames = [row.frames for row in self.rows]
        # Replacements for an unreadable item are taken in length order, so a batch keeps to its frame budget.
        self._by_length = np.argsort(np.asarray(self._frames), kind="stable")
        self._position = np.empty_like(self._by_length)
        self._position[self._by_length] = np.arange(len(self._by_length))
        self.num_reads = 0
        """Item reads attempted in this process (each worker process counts its own)."""
        self.num_failed = 0
        """Item reads that failed in this process."""
        self._warned: set[Path] = set()

    @property
    def frames(self) -> list[int]:
        """Mel frame count of every item, for the batch sampler."""
        return self._frames

    @property
    def vocab_path(self) -> Path | None:
        """The directory's `vocab.txt`, or None when it has none."""
        path = self.data_dir / VOCAB_NAME
        return path if path.is_file() else None

    def __len__(self) -> int:
        """Number of items."""
        return len(self.rows)

    def __getitem__(self, index: int) -> Utterance:
        """Load item `index`, or the nearest-length readable item when it cannot be read.

        Args:
            index: Item index.

        Returns:
            The utterance.

        Raises:
            RuntimeError: `max_retries + 1` items in a row could not be read, or the share of failed reads passed
                `max_skip_ratio`.
        """
        candidate = index
        for attempt in range(self.max_retries + 1):
            row = self.rows[candidate]
            self.num_reads += 1
            try:
                mel = self._mel(row)
            except (ValueError, OSError) as err:  # AudioError is a ValueError
                self._record_failure(row, err)
                candidate = int(self._by_length[(self._position[index] + attempt + 1) % len(self)])
                continue
            self._check_ratio(row.audio_path, None)
            return Utterance(mel, row.text, str(row.audio_path), attempt)
        raise RuntimeError(
            f"{self.max_retries + 1} items in a row could not be read, starting at {self.rows[index].audio_path} "
            f"(item {index}); the data directory {self.data_dir} seems broken: check it or run f5lite-prepare again"
        )

    def _mel(self, row: ManifestRow) -> Tensor:
        # The batch sampler budgets frames by the manifest: a file that changed since would overflow the budget
        # (and memory) mid-run. One frame of slack covers resampling rounding.
        if row.mel_path is not None and row.mel_type == self.mel_type:
            try:
                return self._checked(read_mel(row.mel_path), row, row.mel_path)
            except ValueError as err:
                self._warn_once(row.mel_path, f"{err}; decoding {row.audio_path} instead")
        return self._checked(log_mel(load_audio(row.audio_path)[None], self.mel_type)[0], row, row.audio_path)

    @staticmethod
    def _checked(mel: Tensor, row: ManifestRow, source: Path) -> Tensor:
        if abs(mel.shape[0] - row.frames) > 1:
            raise ValueError(
                f"{source} gives {mel.shape[0]} mel frames but the manifest says {row.frames}: it changed since "
                "f5lite-prepare measured it"
            )
        return mel

    def _record_failure(self, row: ManifestRow, err: Exception) -> None:
        self.num_failed += 1
        self._warn_once(row.audio_path, f"skipping an item that became unreadable after f5lite-prepare ({err})")
        self._check_ratio(row.audio_path, err)

    def _check_ratio(self, path: Path, err: Exception | None) -> None:
        # Early failures are judged against the warm-up count, so that one bad file among the first reads does
        # not look like 100%, while max_skip_ratio=0 still stops at the first failure.
        judged = max(self.num_reads, min(len(self), _RATIO_WARMUP))
        if self.num_failed > self.max_skip_ratio * judged:
            last = "" if err is None else f"; last: {err}" if str(path) in str(err) else f"; last: {path}: {err}"
            raise RuntimeError(
                f"{self.num_failed} of {self.num_reads} item reads in this process failed, more than "
                f"data.max_skip_ratio={self.max_skip_ratio} allows{last}. The files changed since f5lite-prepare "
                "checked them: fix them or run f5lite-prepare again"
            )

    def _warn_once(self, path: Path, message: str) -> None:
        if path not in self._warned:
            self._warned.add(path)
            logger.warning("%s", message)
