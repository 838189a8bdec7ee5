"""`f5lite-prepare --shar DIR`: the kept cuts as Lhotse Shar shards, audio and mels inside, for sequential reading.

DIR receives, per shard of `--shard-size` cuts (default 1000), Lhotse's `cuts.000000.jsonl.gz` and
`recording.000000.tar` (each utterance as 24 kHz mono 16-bit FLAC, mixed and resampled here as training would),
with `--mels` also `mel.000000.tar` (the field `mel`: the cached log-mel `[frames, 100]` float32, whole, as a
plain Lhotse array; and the cut's `mel_type`), then `000001`, ... A copy of `vocab.txt` sits beside them, so DIR
works as `data.dir` on its own. Each cut keeps its id, supervision, `token_ids` and `frames`; `mel_path` is dropped
(the field replaces it).

Lhotse's `CutSet.from_shar(in_dir=DIR)` takes every file in DIR for a field, `vocab.txt` included, so read DIR
with the field paths listed (`shar_fields`), as training does.

DIR is replaced whole (written next to it, then swapped in): it must be missing, empty, or an earlier Shar export
of f5lite-prepare; any other non-empty folder is refused before any work. Re-running gives the same bytes.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import soundfile as sf
from lhotse import CutSet, MonoCut, Recording
from lhotse.utils import fastcopy

from f5lite.atomic import atomic_directory
from f5lite.audio import SAMPLE_RATE, load_audio
from f5lite.data.cuts import FRAMES, MEL_FIELD, MEL_PATH, TOKEN_IDS
from f5lite.data.manifest import VOCAB_NAME
from f5lite.data.mel_cache import read_mel
from f5lite.prepare.workers import map_in_workers

RECORDING_FIELD = "recording"
"""Name of the Shar field holding each utterance's audio."""
DEFAULT_SHARD_SIZE = 1000
"""Cuts per shard unless `--shard-size` says otherwise."""

_SHAR_FILE = re.compile(rf"cuts\.\d{{6,}}\.jsonl\.gz|({RECORDING_FIELD}|{MEL_FIELD})\.\d{{6,}}\.tar|{VOCAB_NAME}")
_WHAT = "a Shar export of f5lite-prepare"


@dataclass(frozen=True)
class SharItem:
    """One kept utterance to export.

    Attributes:
        cut: Its cut as written to `cuts.jsonl.gz`.
        audio_path: The source audio, absolute.
        mel_path: The cached mel, absolute, or None without a mel cache.
    """

    cut: MonoCut
    audio_path: Path
    mel_path: Path | None


def check_shar_target(shar_dir: Path, out: Path, input_path: Path) -> None:
    """Refuse a `--shar` DIR that this run may not replace whole, before any work.

    Args:
        shar_dir: The Shar directory, absolute.
        out: The run's OUT_DIR, absolute.
        input_path: The run's INPUT, absolute.

    Raises:
        ValueError: DIR is a file, holds OUT_DIR or the input, or is a non-empty folder other than an earlier
            Shar export of f5lite-prepare. One line, naming it.
    """
    for other, what in ((out, "OUT_DIR"), (input_path, "INPUT")):
        if shar_dir == other or shar_dir in other.parents:
            raise ValueError(f"--shar {shar_dir} holds the {what} {other}, and it is replaced whole: choose another")
    if shar_dir.exists() and not shar_dir.is_dir():
        raise ValueError(f"--shar {shar_dir} exists and is not a directory")
    if shar_dir.is_dir() and any(shar_dir.iterdir()) and not is_shar_export(shar_dir):
        raise ValueError(
            f"--shar {shar_dir} is a non-empty directory that is not {_WHAT}, which never replaces files it did "
            "not write: move its files away or choose another directory"
        )


def is_shar_export(directory: Path) -> bool:
    """Whether `directory` holds only what `write_shar` writes, and its cuts carry f5lite's token ids and frames.

    Args:
        directory: An existing directory.

    Returns:
        True for an earlier export of ours (which a new one may replace whole).
    """
    entries = list(directory.iterdir())
    if not all(entry.is_file() and _SHAR_FILE.fullmatch(entry.name) for entry in entries):
        return False
    try:
        with gzip.open(directory / "cuts.000000.jsonl.gz", "rt", encoding="utf-8") as lines:
            first = json.loads(lines.readline())
    except (OSError, EOFError, ValueError):
        return False
    custom = first.get("custom") if isinstance(first, dict) else None
    return isinstance(custom, dict) and TOKEN_IDS in custom and FRAMES in custom


def shar_fields(directory: str | os.PathLike[str]) -> dict[str, list[str]]:
    """The shard files of each field in a Shar directory, for `lhotse.CutSet.from_shar(fields=...)`.

    Args:
        directory: A directory written by `write_shar` (or any Lhotse Shar export).

    Returns:
        `{"cuts": [...], "recording": [...], "mel": [...]}` (the fields present), each in shard order.
    """
    fields: dict[str, list[str]] = {}
    for path in sorted(Path(directory).iterdir()):
        field, _, rest = path.name.partition(".")
        if rest.endswith((".jsonl.gz", ".tar")) and rest.split(".")[0].isdigit():
            fields.setdefault(field, []).append(str(path))
    return fields


def write_shar(
    shar_dir: Path,
    items: list[SharItem],
    *,
    shard_size: int = DEFAULT_SHARD_SIZE,
    vocab_path: Path | None = None,
    workers: int = 1,
    progress: bool = False,
) -> int:
    """Write the items as Shar shards into `shar_dir`, replacing an earlier export whole.

    Args:
        shar_dir: The Shar directory, absolute (checked with `check_shar_target` first).
        items: The kept utterances, in order; with mels, every item has a `mel_path`.
        shard_size: Cuts per shard.
        vocab_path: The `vocab.txt` to copy beside the shards, or None (the byte tokenizer has none).
        workers: Processes that decode and encode the audio.
        progress: Show a progress bar on a terminal.

    Returns:
        The number of shards written (0 when there are no items: DIR is left empty).

    Raises:
        ValueError: DIR may not be replaced, or an audio file no longer decodes.
        OSError: DIR cannot be written.
    """
    fields = {RECORDING_FIELD: "flac"}
    if any(item.mel_path is not None for item in items):
        fields[MEL_FIELD] = "numpy"
    with atomic_directory(shar_dir, is_shar_export, _WHAT) as staging:
        if not items:
            return 0
        flacs = map_in_workers(
            _flac_of,
            [item.audio_path for item in items],
            None,
            workers=workers,
            progress=progress,
            desc="f5lite-prepare --shar",
        )
        cuts = CutSet(_shar_cut(item, flac) for item, flac in zip(items, flacs, strict=True))
        written = cuts.to_shar(staging, fields=fields, shard_size=shard_size)
        for path in written["cuts"]:
            _reproducible_gzip(Path(path))
        if vocab_path is not None:
            shutil.copyfile(vocab_path, staging / VOCAB_NAME)
        return len(written["cuts"])


def _flac_of(path: Path, _: None) -> bytes:
    """The audio as training reads it (24 kHz mono), as 16-bit FLAC: what Lhotse writes into the shard."""
    waveform = load_audio(path).numpy()
    buffer = io.BytesIO()
    # 16 bits because Lhotse decodes the recording and encodes it again with its default FLAC subtype: the same
    # samples give the same bytes. Samples beyond full scale are clipped by libsndfile.
    sf.write(buffer, waveform, SAMPLE_RATE, format="FLAC", subtype="PCM_16")
    return buffer.getvalue()


def _shar_cut(item: SharItem, flac: bytes) -> MonoCut:
    """The cut with its audio in memory (and its mel attached), so that Lhotse stores exactly these."""
    cut = item.cut
    recording = Recording.from_bytes(flac, recording_id=cut.id)
    custom = {key: value for key, value in (cut.custom or {}).items() if key != MEL_PATH}
    shar_cut = MonoCut(
        id=cut.id,
        start=0.0,
        duration=recording.duration,
        channel=0,
        recording=recording,
        supervisions=[fastcopy(s, start=0.0, duration=recording.duration, channel=0) for s in cut.supervisions],
        custom=custom or None,
    )
    if item.mel_path is None:
        return shar_cut
    # A plain array, not a temporal one: Lhotse cuts a temporal array to round(duration / frame_shift) frames when
    # it stores or loads it, one frame fewer than the `frames` of F5-TTS's centered STFT for about half the lengths.
    return shar_cut.attach_tensor(MEL_FIELD, read_mel(item.mel_path).numpy())


def _reproducible_gzip(path: Path) -> None:
    """Write a gzip file again without the time stamp Lhotse's writer puts in its header."""
    data = gzip.decompress(path.read_bytes())
    path.write_bytes(gzip.compress(data, mtime=0))
