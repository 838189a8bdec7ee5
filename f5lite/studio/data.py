"""Data: recordings in, a prepared dataset out, through `f5lite-transcribe` and `f5lite-prepare` run as processes.

Recordings added on the page are copied into `raw/` under a safe file name. `f5lite-transcribe raw transcribed`
cuts and transcribes them (its progress bar, in hours of audio, is read back from its log); its clips are then
proofread here: each clip's `.txt` is the transcript training will read, so fixing a text rewrites that file and
dropping a clip deletes the clip and its text (a later transcription run does not bring them back: it skips the
recordings it finished). The vocabulary check compares the clips' transcripts with the vocabulary of the model to
fine-tune and writes the extended vocabulary (`f5lite.transcribe.vocab`), and `f5lite-prepare` turns the clips into
the dataset training reads, with a validation split. A dataset prepared elsewhere can be linked instead.
"""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import soundfile as sf

from f5lite.atomic import write_text_atomic
from f5lite.audio.io import AUDIO_EXTENSIONS
from f5lite.studio import jobs
from f5lite.studio.names import inside
from f5lite.studio.project import DATASET_FILE, DATASET_LINK, Project
from f5lite.text import write_vocab
from f5lite.transcribe.vocab import VocabCheck, check_vocab, load_base_vocab
from f5lite.transcribe.workspace import CLIPS_DIR, VOCAB_OUT

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_PERCENT = re.compile(r"(\d+)%\|")


@dataclass(frozen=True)
class Clip:
    """A transcribed clip.

    Attributes:
        path: the WAV file, relative to the project's `transcribed/clips`.
        seconds: its length.
        text: its transcript as it is now.
    """

    path: str
    seconds: float
    text: str


def add_recordings(project: Project, files: list[Path]) -> list[str]:
    """Copy recordings into `raw/` under safe names (an existing name is kept and the new file numbered).

    Returns:
        The names written.

    Raises:
        ValueError: no files, or a file that is no audio libsndfile reads (naming it; nothing is copied then).
    """
    if not files:
        raise ValueError("no recordings given: add audio files (wav, flac, ogg, mp3, ...)")
    for file in files:
        try:
            sf.info(str(file))
        except (RuntimeError, sf.LibsndfileError):
            raise ValueError(f"{Path(file).name} is not an audio file this machine can read") from None
    project.raw.mkdir(parents=True, exist_ok=True)
    written = []
    for file in files:
        stem = _UNSAFE.sub("_", Path(file).stem).strip("._") or "recording"
        suffix = Path(file).suffix.lower() if Path(file).suffix.lower() in AUDIO_EXTENSIONS else ".wav"
        target, n = project.raw / f"{stem}{suffix}", 1
        while target.exists():
            target, n = project.raw / f"{stem}_{n}{suffix}", n + 1
        shutil.copyfile(file, target)
        written.append(target.name)
    return written


def recordings(project: Project) -> list[str]:
    """The recordings in `raw/`."""
    return sorted(p.name for p in project.raw.iterdir() if p.is_file()) if project.raw.is_dir() else []


def job_dir(project: Project, kind: str) -> Path:
    """The folder of the project's `kind` job (`transcribe`, `prepare`, `eval`, `export`)."""
    return project.folder / "jobs" / kind


def start_transcribe(project: Project, workers: int = 1) -> jobs.JobState:
    """Start `f5lite-transcribe raw transcribed` (it continues an earlier run on the same folders).

    Raises:
        ValueError: no recordings, or a transcription of the project runs already.
    """
    if not recordings(project):
        raise ValueError("there are no recordings: add some first")
    command = [sys.executable, "-m", "f5lite.transcribe", str(project.raw), str(project.transcribed)]
    return jobs.start(job_dir(project, "transcribe"), [*command, "--workers", str(max(1, workers))])


def progress(log: str) -> float | None:
    """The fraction done that a tool's progress bar last showed in its log (None before it shows one)."""
    found = _PERCENT.findall(log)
    return int(found[-1]) / 100 if found else None


def clips(project: Project) -> list[Clip]:
    """Every transcribed clip with its text as it is now, in folder order."""
    root = project.transcribed / CLIPS_DIR
    found = []
    for wav in sorted(root.rglob("*.wav")) if root.is_dir() else []:
        text = wav.with_suffix(".txt")
        if text.is_file():
            found.append(Clip(str(wav.relative_to(root)), sf.info(str(wav)).duration, text.read_text().strip()))
    return found


def clip_path(project: Project, clip: str) -> Path:
    """The WAV file of a clip named as `Clip.path`.

    Raises:
        ValueError: a path outside the clips folder, or no such clip.
    """
    path = inside(project.transcribed / CLIPS_DIR, clip, "clip")
    if path.suffix != ".wav" or not path.is_file():
        raise ValueError(f"there is no clip {clip!r}")
    return path


def set_text(project: Project, clip: str, text: str) -> None:
    """Replace a clip's transcript.

    Raises:
        ValueError: no such clip, or an empty text (drop the clip instead).
    """
    path = clip_path(project, clip)
    text = " ".join((text or "").split())
    if not text:
        raise ValueError(f"the text of {clip} would be empty: drop the clip instead")
    write_text_atomic(path.with_suffix(".txt"), text + "\n")


def drop(project: Project, clip: str) -> None:
    """Delete a clip and its transcript.

    Raises:
        ValueError: no such clip.
    """
    path = clip_path(project, clip)
    path.with_suffix(".txt").unlink(missing_ok=True)
    path.unlink()


def vocab_check(project: Project, base: Path, tokenizer: str = "char") -> VocabCheck:
    """Compare the clips' transcripts with a model's vocabulary; write `transcribed/vocab.txt`, extended.

    Args:
        project: the project.
        base: a model directory with a `vocab.txt`, or a vocab file.
        tokenizer: the model's tokens, `char` or `pinyin`.

    Raises:
        ValueError: no clips, or no vocabulary at `base`.
    """
    found = clips(project)
    if not found:
        raise ValueError("there are no transcribed clips: transcribe recordings first")
    vocab = load_base_vocab(base)
    check = check_vocab(((c.path, c.text) for c in found), vocab, tokenizer)
    write_vocab(project.transcribed / VOCAB_OUT, list(check.tokens))
    return check


def start_prepare(project: Project, extend_vocab: bool, val_count: int) -> jobs.JobState:
    """Start `f5lite-prepare transcribed/clips dataset`, with the checked vocabulary if asked.

    Raises:
        ValueError: no clips, no checked vocabulary when asked for one, or a preparation that runs already.
    """
    if not clips(project):
        raise ValueError("there are no transcribed clips: transcribe recordings first")
    command = [
        sys.executable,
        "-m",
        "f5lite.prepare",
        str(project.transcribed / CLIPS_DIR),
        str(project.folder / "dataset"),
    ]
    if extend_vocab:
        vocab = project.transcribed / VOCAB_OUT
        if not vocab.is_file():
            raise ValueError("run the vocabulary check against the model to fine-tune first")
        command += ["--vocab", str(vocab)]
    if val_count > 0:
        command += ["--val-count", str(val_count)]
    return jobs.start(job_dir(project, "prepare"), command)


def link_dataset(project: Project, folder: str) -> Path:
    """Train on a dataset prepared elsewhere (read where it is; nothing is copied).

    Raises:
        ValueError: the folder is not a prepared dataset.
    """
    path = Path(folder.strip()).expanduser().resolve()
    if not (path / DATASET_FILE).is_file():
        raise ValueError(f"{folder} is not a prepared dataset (no {DATASET_FILE}): prepare it with f5lite-prepare")
    write_text_atomic(project.folder / DATASET_LINK, f"{path}\n")
    return path
