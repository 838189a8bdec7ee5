"""The input layouts `f5lite-prepare` reads, each turned into the same list of (audio file, transcript) rows.

- `f5tts_csv`: F5-TTS's `metadata.csv`: a header `audio_file|text` (or `audio_file|text|speaker`), then one row
  per utterance; audio paths absolute or relative to the CSV's folder.
- `ljspeech`: a folder with `metadata.csv` rows `id|text|normalized text` (no header; the normalized text is used,
  the raw one when it is missing or empty) and the audio as `wavs/<id>.wav`.
- `folder`: a folder (searched recursively) of audio files, each with a same-named `.txt` or `.lab` transcript
  next to it (`.txt` wins when both exist). Files in a sub-folder take its first-level name as their speaker.
- `lhotse_cuts`: a Lhotse CutSet file (`*.jsonl.gz` or `*.jsonl`), as Lhotse's recipes make them (`lhotse prepare
  libritts`, `ljspeech`, `emilia`, ... then `CutSet.from_manifests(...).to_file(...)`): each cut's audio file, its
  supervision text and speaker. A cut that is a segment of a longer recording (or not a single file) is skipped:
  the checks here are of whole files; train on such a CutSet directly (`data.dir=CUTS data.vocab=...`).

In every layout a transcript's runs of white space (line breaks included) become single spaces, so the same
transcript gives the same text whichever layout holds it. Rows that cannot be used before any audio is read (an
unparsable line, an audio file without a transcript, a transcript without its audio, an audio file listed twice)
come back as `Skip`s, never dropped silently.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from f5lite.audio.io import AUDIO_EXTENSIONS
from f5lite.prepare.skips import Skip

Layout = Literal["f5tts_csv", "ljspeech", "folder", "lhotse_cuts"]
LAYOUTS: tuple[Layout, ...] = get_args(Layout)
"""The accepted input layouts."""

TRANSCRIPT_EXTENSIONS = (".txt", ".lab")
"""Transcript suffixes of the folder layout, in order of preference."""

METADATA_NAME = "metadata.csv"
_F5TTS_HEADERS = (("audio_file", "text"), ("audio_file", "text", "speaker"))


@dataclass(frozen=True)
class SourceRow:
    """One utterance named by the input.

    Attributes:
        audio_path: The audio file, absolute (normalized, symlinks not resolved).
        text: The transcript, every run of white space (line breaks included) made one space, ends stripped.
        speaker: The speaker, when the layout gives one.
        origin: Where the row came from, for messages: `metadata.csv:12` or the transcript file.
    """

    audio_path: Path
    text: str
    speaker: str | None
    origin: str


@dataclass
class Source:
    """Everything read from an input: its layout, the usable rows and the rows skipped while reading."""

    layout: Layout
    """Which layout the input was recognised as."""
    rows: list[SourceRow] = field(default_factory=list)
    """The rows to check, in input order (the folder layout: sorted by path)."""
    skipped: list[Skip] = field(default_factory=list)
    """Rows that could not be used, with the reason."""


def read_source(input_path: str | os.PathLike[str], *, ignore: Collection[Path] = ()) -> Source:
    """Recognise the layout of `input_path` and read its rows.

    A file is read as a metadata CSV: F5-TTS's when its first line is the `audio_file|text` header, else
    LJSpeech's (which needs a `wavs/` folder beside it). A folder holding a `metadata.csv` is read the same way;
    any other folder is read as audio files with transcripts.

    Args:
        input_path: A metadata CSV, an LJSpeech folder or a folder of audio files with transcripts.
        ignore: Absolute paths (files or folders) that the folder layout must not pick up, such as the outputs
            of an earlier run written into the same folder.

    Returns:
        The layout, the rows and the rows skipped while reading (duplicates included).

    Raises:
        ValueError: The input does not exist, is not UTF-8, or is a CSV in neither format. One line, naming it.
    """
    path = _absolute(Path(input_path))
    if not path.exists():
        raise ValueError(f"input {path} does not exist")
    if path.is_file() and (path.name.endswith(".jsonl.gz") or path.suffix == ".jsonl"):
        source = _read_lhotse_cuts(path)
        _skip_duplicates(source)
        return source
    if path.is_dir() and (path / METADATA_NAME).is_file():
        path = path / METADATA_NAME
    if path.is_dir():
        source = _read_folder(path, {_absolute(p) for p in ignore})
    else:
        lines = _read_lines(path)
        header = tuple(cell.strip().lower() for cell in lines[0].split("|")) if lines else ()
        if header in _F5TTS_HEADERS:
            source = _read_f5tts_csv(path, lines, with_speaker=len(header) == 3)
        elif (path.parent / "wavs").is_dir():
            source = _read_ljspeech(path, lines)
        else:
            raise ValueError(
                f"input {path} is neither an F5-TTS metadata.csv (its first line must be the header "
                "'audio_file|text') nor LJSpeech metadata (there is no wavs/ folder beside it)"
            )
    _skip_duplicates(source)
    return source


def _absolute(path: Path) -> Path:
    return Path(os.path.abspath(path))


def _read_lines(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        raise ValueError(f"input {path} is not UTF-8: undecodable byte at offset {err.start}") from err
    except OSError as err:
        raise ValueError(f"cannot read input {path}: {err.strerror or err}") from err
    return text.splitlines()


def _read_f5tts_csv(path: Path, lines: list[str], *, with_speaker: bool) -> Source:
    source = Source(layout="f5tts_csv")
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        origin = f"{path.name}:{number}"
        audio, sep, rest = line.partition("|")
        speaker: str | None = None
        if with_speaker:
            rest, sep_speaker, speaker = rest.rpartition("|")
            sep = sep if sep_speaker else ""
        if not sep or not audio.strip():
            expected = "audio_file|text|speaker" if with_speaker else "audio_file|text"
            source.skipped.append(Skip(path, "malformed_row", f"{origin}: expected '{expected}', got {line!r}"))
            continue
        audio_path = _absolute(path.parent / audio.strip())
        source.rows.append(SourceRow(audio_path, _clean(rest), (speaker or "").strip() or None, origin))
    return source


def _read_ljspeech(path: Path, lines: list[str]) -> Source:
    source = Source(layout="ljspeech")
    wavs = path.parent / "wavs"
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        origin = f"{path.name}:{number}"
        cells = line.split("|")
        if len(cells) not in (2, 3) or not cells[0].strip():
            source.skipped.append(Skip(path, "malformed_row", f"{origin}: expected 'id|text|normalized text'"))
            continue
        utterance = cells[0].strip()
        text = cells[2] if len(cells) == 3 and cells[2].strip() else cells[1]
        name = utterance if Path(utterance).suffix.lower() in AUDIO_EXTENSIONS else f"{utterance}.wav"
        source.rows.append(SourceRow(_absolute(wavs / name), _clean(text), None, origin))
    return source


def _read_folder(root: Path, ignore: set[Path]) -> Source:
    source = Source(layout="folder")
    audio_files: list[Path] = []
    transcripts: set[Path] = set()
    for directory, subdirs, files in os.walk(root):
        here = Path(directory)
        subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and here / d not in ignore)
        for name in files:
            file = here / name
            if name.startswith(".") or file in ignore:
                continue
            suffix = file.suffix.lower()
            if suffix in AUDIO_EXTENSIONS:
                audio_files.append(file)
            elif suffix in TRANSCRIPT_EXTENSIONS:
                transcripts.add(file)
    used: set[Path] = set()
    for audio in sorted(audio_files):
        relative = audio.relative_to(root)
        speaker = relative.parts[0] if len(relative.parts) > 1 else None
        transcript = next((t for t in _transcript_candidates(audio) if t in transcripts), None)
        if transcript is None:
            names = " or ".join(f"{audio.stem}{ext}" for ext in TRANSCRIPT_EXTENSIONS)
            source.skipped.append(Skip(audio, "no_transcript", f"no {names} next to it"))
            continue
        used.update(_transcript_candidates(audio))
        try:
            text = transcript.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as err:
            source.skipped.append(Skip(audio, "unreadable", f"cannot read transcript {transcript.name}: {err}"))
            continue
        source.rows.append(SourceRow(audio, _clean(text), speaker, str(transcript.relative_to(root))))
    for orphan in sorted(transcripts - used):
        source.skipped.append(Skip(orphan, "missing_audio", "a transcript without an audio file of the same name"))
    return source


def _read_lhotse_cuts(path: Path) -> Source:
    from lhotse import CutSet  # the recipe's cuts: read lazily, one line at a time

    source = Source(layout="lhotse_cuts")
    try:
        for cut in CutSet.from_jsonl_lazy(path):
            origin = f"{path.name}:{cut.id}"
            recording = cut.recording
            sources = [] if recording is None else recording.sources
            if len(sources) != 1 or sources[0].type != "file":
                source.skipped.append(Skip(path, "malformed_row", f"{origin}: its audio is not a single file"))
                continue
            audio = _absolute(path.parent / str(sources[0].source))
            if cut.start > 0 or abs(cut.duration - recording.duration) > 1e-3:
                detail = f"{origin}: a {cut.duration:.2f} s segment of a longer recording; train on the CutSet directly"
                source.skipped.append(Skip(audio, "segment", detail))
                continue
            texts = [s.text for s in cut.supervisions if s.text]
            speakers = {s.speaker for s in cut.supervisions if s.speaker}
            speaker = speakers.pop() if len(speakers) == 1 else None
            source.rows.append(SourceRow(audio, _clean(" ".join(texts)), speaker, origin))
    except (ValueError, KeyError, TypeError, OSError) as err:
        raise ValueError(f"input {path} is not a readable Lhotse CutSet: {err}".replace("\n", " ")) from None
    return source


def _clean(text: str) -> str:
    # One utterance is one line of text whatever the layout: a transcript wrapped over several lines, tabs or
    # doubled spaces all become single spaces, so the three layouts give the same text for the same transcript.
    return " ".join(text.split())


def _transcript_candidates(audio: Path) -> list[Path]:
    return [audio.with_suffix(ext) for ext in TRANSCRIPT_EXTENSIONS]


def _skip_duplicates(source: Source) -> None:
    first_seen: dict[Path, str] = {}
    unique = []
    for row in source.rows:
        if row.audio_path in first_seen:
            detail = f"{row.origin} names the same audio as {first_seen[row.audio_path]}"
            source.skipped.append(Skip(row.audio_path, "duplicate", detail))
            continue
        first_seen[row.audio_path] = row.origin
        unique.append(row)
    source.rows = unique
