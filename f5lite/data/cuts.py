"""The cut: one utterance as f5lite writes and reads it, in Lhotse's CutSet format.

`f5lite-prepare` writes `cuts.jsonl.gz`, one Lhotse `MonoCut` per kept utterance, read lazily (one line at a time)
by training. A cut holds:

- `recording`: the audio file (`type: file`, path relative to the cuts file's folder when inside it, else absolute),
  its sample rate, sample count and channels (training mixes all channels to mono, as `f5lite-prepare` checked);
- one supervision: the transcript `text`, and the `speaker` when the layout gives one;
- `custom`: `token_ids` (the text as ids of the prepared directory's `vocab.txt`, so no tokenizer runs while
  training), `frames` (mel frames at 24 kHz: what the frame budget counts), and with a mel cache `mel_path` and
  `mel_type`.

Lhotse's own recipes (`lhotse prepare libritts`, `emilia`, ...) write cuts without the `custom` part; they are read
as well (the text is tokenized on the fly and the frames follow from the duration). In Shar shards
(`f5lite-prepare --shar`) the audio is 24 kHz mono FLAC and, with `--mels`, the log-mel is the array field `mel`.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lhotse import MonoCut, Recording, SupervisionSegment
from lhotse.audio import AudioSource
from lhotse.cut import Cut

from f5lite.atomic import atomic_path
from f5lite.audio import HOP_LENGTH, SAMPLE_RATE
from f5lite.data.manifest import ManifestRow

CUTS_NAME = "cuts.jsonl.gz"
"""File name of the CutSet in a prepared directory."""
TOKEN_IDS = "token_ids"
"""Custom key: the transcript as ids of the prepared directory's vocab."""
TOKENS = "tokens"
"""Custom key: the transcript already split into tokens (F5-TTS's pinyin datasets), looked up in the run's vocab."""
FRAMES = "frames"
"""Custom key: mel frames of the utterance at 24 kHz."""
MEL_PATH = "mel_path"
"""Custom key: the cached log-mel `.npy` (relative to the cuts file's folder, or absolute)."""
MEL_TYPE = "mel_type"
"""Custom key: the mel convention of the cached mel or of the Shar `mel` field (`vocos`, `bigvgan`)."""
MEL_FIELD = "mel"
"""Name of the Shar field holding the log-mel `[frames, 100]`."""


def cut_id_for(audio_path: Path, base: Path) -> str:
    """A stable, unique id for an utterance: its path relative to `base` without the suffix, else a hash."""
    try:
        relative = audio_path.relative_to(base)
    except ValueError:
        return "x" + hashlib.sha1(str(audio_path).encode()).hexdigest()[:16]
    return relative.with_suffix("").as_posix()


def portable_source(audio_path: Path, base: Path) -> str:
    """The path to record for `audio_path`: relative to `base` (the cuts file's folder) when inside it."""
    try:
        return audio_path.relative_to(base).as_posix()
    except ValueError:
        return str(audio_path)


def make_cut(
    cut_id: str,
    source: str,
    *,
    sample_rate: int,
    num_samples: int,
    channels: int,
    text: str,
    speaker: str | None = None,
    token_ids: list[int] | None = None,
    frames: int | None = None,
    mel_path: str | None = None,
    mel_type: str | None = None,
) -> MonoCut:
    """One utterance as a cut (see the module docstring).

    Args:
        cut_id: unique id (`cut_id_for`).
        source: the audio file as it should be recorded (`portable_source`).
        sample_rate: of the file.
        num_samples: samples per channel in the file.
        channels: channel count of the file.
        text: the transcript.
        speaker: the speaker, when known.
        token_ids: the transcript as vocab ids.
        frames: mel frames at 24 kHz.
        mel_path: the cached log-mel, as recorded (relative or absolute).
        mel_type: the cached mel's convention.

    Returns:
        The cut.
    """
    duration = num_samples / sample_rate
    recording = Recording(
        id=cut_id,
        sources=[AudioSource(type="file", channels=list(range(channels)), source=source)],
        sampling_rate=sample_rate,
        num_samples=num_samples,
        duration=duration,
        channel_ids=list(range(channels)),
    )
    supervision = SupervisionSegment(
        id=cut_id, recording_id=cut_id, start=0.0, duration=duration, channel=0, text=text, speaker=speaker
    )
    custom: dict[str, Any] = {}
    if token_ids is not None:
        custom[TOKEN_IDS] = list(token_ids)
    if frames is not None:
        custom[FRAMES] = frames
    if mel_path is not None:
        custom[MEL_PATH] = mel_path
        custom[MEL_TYPE] = mel_type
    return MonoCut(
        id=cut_id,
        start=0.0,
        duration=duration,
        channel=0,
        recording=recording,
        supervisions=[supervision],
        custom=custom or None,
    )


def text_of(cut: Cut) -> str:
    """The transcript: the cut's supervision texts, joined."""
    return " ".join(s.text for s in cut.supervisions if s.text)


def frames_of(cut: Cut) -> int:
    """Mel frames at 24 kHz: recorded by `f5lite-prepare`, else computed from the duration."""
    custom = cut.custom or {}
    if FRAMES in custom:
        return int(custom[FRAMES])
    return 1 + round(cut.duration * SAMPLE_RATE) // HOP_LENGTH


def write_cuts(path: str | os.PathLike[str], cuts: Iterable[Cut]) -> int:
    """Write cuts as gzipped JSON lines, atomically and byte for byte reproducibly (no timestamp in the gzip header).

    Returns:
        How many cuts were written.
    """
    count = 0
    with (
        atomic_path(path) as temporary,
        open(temporary, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as packed,
        io.TextIOWrapper(packed, encoding="utf-8") as text,
    ):
        for cut in cuts:
            text.write(json.dumps(cut.to_dict(), ensure_ascii=False) + "\n")
            count += 1
    return count


def row_to_cut(row: ManifestRow, base: Path) -> Cut:
    """A manifest row (or an F5-TTS row) as a cut; the sample count follows from the duration."""
    rate = row.sample_rate or 24000
    text = row.text if isinstance(row.text, str) else "".join(row.text)
    cut = make_cut(
        cut_id_for(row.audio_path, base),
        str(row.audio_path),
        sample_rate=rate,
        num_samples=max(1, round(row.duration * rate)),
        channels=1,
        text=text,
        speaker=row.speaker,
        frames=row.frames,
        mel_path=None if row.mel_path is None else str(row.mel_path),
        mel_type=row.mel_type,
    )
    if not isinstance(row.text, str):  # tokenized at preparation (F5-TTS pinyin datasets)
        cut.custom = {**(cut.custom or {}), TOKENS: list(row.text)}
    return cut
