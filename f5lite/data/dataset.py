"""The training dataset: a batch of cuts in, padded mels and text ids out; robust to files that broke after prep.

Ein notation: n - mel frames, N_MELS (100) - mel channels.

The batch sampler hands each loader worker a `CutSet` (metadata only); the worker loads each cut's log-mel: from
the mel cache (`f5lite-prepare --mels`), from a Shar shard's `mel` field, or by decoding the audio (a file, a Shar
shard's `recording` field, or bytes in memory) at 24 kHz mono. The text ids are the ones `f5lite-prepare` stored
(`token_ids`) when the run's vocab extends the one they were made with, else the text is tokenized here.

A cut that cannot be read any more (deleted, truncated, a network file system hiccup), or whose length differs from
what was measured at preparation by more than one frame (a stale manifest would overflow the frame budget), does not
stop training: it is logged once, counted, and replaced by the nearest-length utterance of the batch (or of the
last ones this worker loaded). Training stops with a clear message when the share of failed reads in a process
passes `max_skip_ratio`, because then the data, not one file, is broken.
"""

from __future__ import annotations

import io
import logging
from collections import deque
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from lhotse import CutSet
from lhotse.cut import Cut
from torch import Tensor
from torch.utils.data import Dataset

from f5lite.audio import N_MELS, SAMPLE_RATE, decode_audio, load_audio, log_mel
from f5lite.audio.mel import check_mel_kind
from f5lite.audio.resample import resample
from f5lite.data.collate import Batch, Utterance, collate
from f5lite.data.cuts import MEL_FIELD, MEL_PATH, MEL_TYPE, TOKEN_IDS, TOKENS, frames_of, text_of
from f5lite.data.mel_cache import read_mel
from f5lite.data.shar_reader import SharMembers, field_path
from f5lite.text import TextEncoder

logger = logging.getLogger(__name__)

_RATIO_WARMUP = 100  # failed reads are judged against at least this many reads
_RECENT = 32  # good utterances kept per worker as replacements for a batch whose every cut failed


class CutDataset(Dataset[Batch]):
    """Loads batches of cuts.

    Args:
        encoder: the run's text encoder.
        mel_type: mel convention, "vocos" or "bigvgan".
        pad_multiple: pad batch lengths up to a multiple of this.
        max_skip_ratio: largest tolerated share of failed reads in one process (0 stops at the first one).
        stored_ids: use the `token_ids` cuts carry (the run's vocab extends the one they were made with).
        audio: load the mels; False gives `[frames, 0]` mels of each cut's measured length and reads no audio (what
            the duration predictor trains on alone: text, length and speaker).

    Raises:
        ValueError: a bad argument.
    """

    def __init__(
        self,
        encoder: TextEncoder,
        *,
        mel_type: str = "vocos",
        pad_multiple: int = 1,
        max_skip_ratio: float = 0.05,
        stored_ids: bool = True,
        audio: bool = True,
    ) -> None:
        if not 0.0 <= max_skip_ratio <= 1.0:
            raise ValueError(f"max_skip_ratio={max_skip_ratio} is not valid; it must be in [0, 1]")
        self.encoder = encoder
        self.mel_type = check_mel_kind(mel_type)
        self.pad_multiple = pad_multiple
        self.max_skip_ratio = max_skip_ratio
        self.stored_ids = stored_ids
        self.audio = audio
        self.num_reads = 0
        """Utterance reads attempted in this process (each worker process counts its own)."""
        self.num_failed = 0
        """Utterance reads that failed in this process."""
        self._warned: set[str] = set()
        self._recent: deque[Utterance] = deque(maxlen=_RECENT)
        self._shar = SharMembers()

    def __getitem__(self, cuts: CutSet) -> Batch:
        """Load and collate a batch; unreadable cuts are replaced (see the module docstring).

        Raises:
            RuntimeError: the share of failed reads passed `max_skip_ratio`, or a batch had nothing to replace its
                unreadable cuts with.
        """
        loaded: list[Utterance | None] = []
        failed: list[Cut] = []
        for cut in cuts:
            self.num_reads += 1
            try:
                utterance = self.load(cut)
            except (ValueError, OSError) as err:  # AudioError is a ValueError
                self._record_failure(cut, err)
                loaded.append(None)
                failed.append(cut)
                continue
            loaded.append(utterance)
            self._recent.append(utterance)
        if failed:
            loaded = self._replace(loaded, failed)
        self._check_ratio(None)
        return collate([u for u in loaded if u is not None], self.pad_multiple)

    def load(self, cut: Cut) -> Utterance:
        """One cut's log-mel and text ids.

        Raises:
            ValueError, OSError: it cannot be read, or its length differs from what was measured.
        """
        mel = _same_length(self._mel(cut), cut, _where(cut)) if self.audio else torch.zeros(frames_of(cut), 0)
        return Utterance(mel, self._ids(cut), _where(cut), 0, _speaker(cut))

    def _ids(self, cut: Cut) -> list[int]:
        custom = cut.custom or {}
        if self.stored_ids and TOKEN_IDS in custom:
            return [int(i) for i in custom[TOKEN_IDS]]
        if TOKENS in custom:
            return self.encoder.ids([str(t) for t in custom[TOKENS]])
        return self.encoder.ids(text_of(cut))

    def _mel(self, cut: Cut) -> Tensor:
        custom = cut.custom or {}
        if custom.get(MEL_TYPE) == self.mel_type:
            if custom.get(MEL_PATH):
                try:
                    return _same_length(read_mel(Path(custom[MEL_PATH])), cut, custom[MEL_PATH])
                except ValueError as err:  # damaged or stale: the audio may still be right
                    self._warn_once(str(custom[MEL_PATH]), f"{err}; decoding the audio of {cut.id} instead")
            elif MEL_FIELD in custom:
                data = self._shar.read(field_path(cut, MEL_FIELD), f"{cut.id}.npy")
                return _mel_array(np.load(io.BytesIO(data), allow_pickle=False), cut.id)
        return log_mel(self._audio(cut)[None], self.mel_type)[0]

    def _audio(self, cut: Cut) -> Tensor:
        """24 kHz mono waveform `[samples]` of the cut."""
        recording = cut.recording
        if recording is None:
            raise ValueError(f"cut {cut.id} has no recording")
        source = recording.sources[0]
        whole = cut.start == 0 and abs(cut.duration - recording.duration) < 1e-3
        if source.type == "file" and whole:
            return load_audio(source.source)  # every channel, mixed: what f5lite-prepare checked
        if source.type == "shar":
            tar = field_path(cut, "recording")
            return decode_audio(self._shar.read(tar, self._shar.member(tar, cut.id)), f"{cut.id} in {tar}")
        if source.type == "memory" and whole:
            return decode_audio(bytes(source.source), f"{cut.id} (in memory)")
        # A segment of a longer recording (Lhotse recipes): Lhotse reads just that part of the cut's channel.
        samples = torch.from_numpy(cut.load_audio()).float().mean(dim=0)
        return resample(samples, recording.sampling_rate, SAMPLE_RATE)

    def _replace(self, loaded: list[Utterance | None], failed: list[Cut]) -> list[Utterance | None]:
        pool = [u for u in loaded if u is not None] or list(self._recent)
        if not pool:
            raise RuntimeError(
                f"every utterance of a batch failed to load and there is nothing to replace them with (first: "
                f"{_where(failed[0])}); the data seems broken: check it or run f5lite-prepare again"
            )
        replaced: list[Utterance | None] = []
        for item, cut in zip(loaded, _expand(failed, loaded), strict=True):
            if item is not None:
                replaced.append(item)
                continue
            assert cut is not None
            target = frames_of(cut)
            nearest = min(pool, key=lambda u: abs(u.mel.shape[0] - target))
            replaced.append(replace(nearest, num_skipped=nearest.num_skipped + 1))
        return replaced

    def _record_failure(self, cut: Cut, err: Exception) -> None:
        self.num_failed += 1
        self._warn_once(cut.id, f"skipping an utterance that became unreadable after preparation ({err})")
        self._check_ratio(err)

    def _check_ratio(self, err: Exception | None) -> None:
        judged = max(self.num_reads, _RATIO_WARMUP)
        if self.num_failed > self.max_skip_ratio * judged:
            last = "" if err is None else f"; last: {err}"
            raise RuntimeError(
                f"{self.num_failed} of {self.num_reads} utterance reads in this process failed, more than "
                f"data.max_skip_ratio={self.max_skip_ratio} allows{last}. The files changed since they were "
                "prepared: fix them or run f5lite-prepare again"
            )

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            logger.warning("%s", message)


def _same_length(mel: Tensor, cut: Cut, source: object) -> Tensor:
    """The mel, if it has the frames measured at preparation (one frame of slack covers resampling rounding).

    Raises:
        ValueError: it does not.
    """
    expected = frames_of(cut)
    if abs(mel.shape[0] - expected) > 1:
        raise ValueError(
            f"{source} gives {mel.shape[0]} mel frames but the manifest says {expected}: it changed since it was "
            "measured"
        )
    return mel


def _expand(failed: list[Cut], loaded: list[Utterance | None]) -> list[Cut | None]:
    """The failed cut at each position of `loaded` that holds None, None elsewhere."""
    queue = iter(failed)
    return [next(queue) if item is None else None for item in loaded]


def _speaker(cut: Cut) -> str | None:
    """The speaker of the cut's first supervision, when it names one."""
    supervisions = cut.supervisions
    return supervisions[0].speaker if supervisions and supervisions[0].speaker else None


def _where(cut: Cut) -> str:
    """What to call a cut in messages: its audio file when it has one, else its id."""
    recording = cut.recording
    if recording is not None and recording.sources[0].type == "file":
        return str(recording.sources[0].source)
    return cut.id


def _mel_array(array: np.ndarray, cut_id: str) -> Tensor:
    if array.dtype != np.float32 or array.ndim != 2 or array.shape[1] != N_MELS or array.shape[0] == 0:
        raise ValueError(f"the mel of {cut_id} is {array.dtype} {array.shape}, not float32 [frames, {N_MELS}]")
    return torch.from_numpy(array.copy())
