r"""`transcribe()`: every recording under IN to clips in OUT, in parallel, resumable, with its report.

The order of work, so that a mistake costs nothing and an interruption costs little:

1. Everything that can fail for the whole run fails first, before OUT is touched: IN not a folder or without
   recordings, a path (IN, OUT, `--vocab-of`, `--asr`'s) that is not valid UTF-8, OUT refused by
   `f5lite.transcribe.workspace` (inside IN or around it; another run's at the moment: OUT's lock is taken before
   anything slower is checked), a `--vocab-of` that is not a vocabulary, a missing extra or ASR model, OUT refused
   for what it holds (someone else's files, other settings).
2. The sources not finished yet go to worker processes (spawned, each with its own VAD and recogniser, torch's
   threads shared out between them); a worker writes a source's clips into its own staging folder and returns the
   record; this process publishes each source as it finishes. The progress bar counts hours of audio.
3. A file that cannot be read or decoded is a `Failure` in the report, never the end of the run (it is tried
   again by the next run): so is a file no recording can come from (a pipe, a link to nothing or a link loop, one
   without read permission), checked here before any work, and a file whose path under IN is not valid UTF-8 (Linux
   allows any bytes; the audio library opens files by UTF-8 names, and the clips and report are named after it; the
   report names it with `\xNN` escapes). A worker process that dies (out of memory) ends the run with a clear
   message, and the next run continues after the sources already published.
4. The vocabulary check and the report cover every finished source, of this run and earlier ones.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import active_children, get_context
from pathlib import Path
from typing import Any

import soundfile as sf
import torch
from tqdm import tqdm

from f5lite.audio.io import AUDIO_EXTENSIONS
from f5lite.metrics.asr import load_recognizer
from f5lite.text import Vocab, write_vocab
from f5lite.transcribe.report import build_report, write_reports
from f5lite.transcribe.source import Failure, Job, SourceRecord, TranscribeSettings, Work, process_source
from f5lite.transcribe.vad import load_vad_model
from f5lite.transcribe.vocab import VocabCheck, check_vocab, load_base_vocab
from f5lite.transcribe.workspace import (
    REPORT_HTML,
    REPORT_JSON,
    VOCAB_OUT,
    TranscribeWorkspace,
    claim_out,
    open_workspace,
)

logger = logging.getLogger(__name__)

_NOT_UTF8 = (
    "its path under IN is not valid UTF-8 (the audio library opens files, and the clips and the report are named, "
    "by UTF-8 names); rename it"
)


@dataclass(frozen=True)
class TranscribeOptions:
    """How a run works (its `settings` decide the clips; the rest only how fast and what else is written)."""

    settings: TranscribeSettings = field(default_factory=TranscribeSettings)
    """Cutting, recognising and filtering; a resumed run must use the same."""
    workers: int = 1
    """Source files transcribed at once, each in its own process (1: in this process)."""
    batch_size: int = 8
    """Clips per recogniser call."""
    vocab_of: Path | None = None
    """A model directory or vocab file to check the transcripts' tokens against (`--vocab-of`)."""
    tokenizer: str = "char"
    """The tokenizer the vocabulary check tokenizes with ("char" or "pinyin")."""

    def __post_init__(self) -> None:
        for name in ("workers", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)} is not valid; it must be >= 1")


@dataclass(frozen=True)
class TranscribeResult:
    """What a run did.

    Attributes:
        report: the content of `report.json`.
        failures: the sources that could not be transcribed in this run.
        vocab: the vocabulary check, with `--vocab-of`.
    """

    report: dict[str, Any]
    failures: list[Failure]
    vocab: VocabCheck | None


def find_recordings(in_dir: Path) -> list[Path]:
    """Every audio file under `in_dir` (by suffix, any depth, hidden files and folders skipped), sorted."""
    found = []
    for root, dirs, files in os.walk(in_dir):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [Path(root, f) for f in files if not f.startswith(".") and Path(f).suffix.lower() in AUDIO_EXTENSIONS]
    return sorted(found)


def transcribe(
    in_dir: str | os.PathLike[str],
    out: str | os.PathLike[str],
    options: TranscribeOptions,
    *,
    progress: bool = False,
) -> TranscribeResult:
    """Turn the recordings under IN into clips and transcripts in OUT (see the module docstring).

    Args:
        in_dir: IN, a folder of recordings (read only).
        out: OUT (see `f5lite.transcribe.workspace` for its layout).
        options: the run's options.
        progress: show a progress bar in hours of audio on a terminal.

    Returns:
        The report, this run's failures and the vocabulary check.

    Raises:
        ValueError: IN, OUT, `--vocab-of` or a setting is not usable, or another run holds OUT (nothing was
            written).
        ImportError: the `transcribe` or `eval` extra, or a backend's package, is missing.
        OSError: a worker process died.
    """
    source_dir, target = Path(in_dir).resolve(), Path(out).resolve()
    paths = {"IN": source_dir, "OUT": target, "--vocab-of": options.vocab_of or "", "--asr": options.settings.asr}
    for what, path in paths.items():
        if not _utf8(path):
            raise ValueError(
                f"{what} {_legible(path)} is not valid UTF-8 (the audio library opens files, and the report names "
                "them, by UTF-8 names); rename it"
            )
    if not source_dir.is_dir():
        raise ValueError(f"IN {in_dir} is not a folder")
    recordings = find_recordings(source_dir)
    if not recordings:
        suffixes = ", ".join(sorted(s.lstrip(".") for s in AUDIO_EXTENSIONS))
        raise ValueError(f"IN {in_dir} holds no audio files ({suffixes})")
    with claim_out(source_dir, target):
        return _run(source_dir, target, recordings, options, progress)


def _run(
    source_dir: Path, target: Path, recordings: list[Path], options: TranscribeOptions, progress: bool
) -> TranscribeResult:
    """`transcribe` once IN and OUT's place are checked and OUT is held."""
    settings = options.settings
    base = load_base_vocab(options.vocab_of) if options.vocab_of is not None else None
    if base is not None:
        check_vocab([], base, options.tokenizer)  # a tokenizer without a vocabulary, or a missing extra, fails now
    load_vad_model()
    load_recognizer(settings.asr, settings.language)
    names = {path: path.relative_to(source_dir) for path in recordings}
    workspace = open_workspace(source_dir, target, [p for p in recordings if _utf8(names[p])], settings.as_dict())
    failures = [Failure(_legible(names[p]), _NOT_UTF8) for p in recordings if not _utf8(names[p])]
    unreadable = {job.key: why for job in workspace.jobs if (why := _unreadable(job.path)) is not None}
    failures += [Failure(key, why) for key, why in unreadable.items()]
    for failure in failures:
        logger.warning("skipped %s: %s", failure.key, failure.message)
    jobs = [job for job in workspace.jobs if job.key not in unreadable]
    threads = torch.get_num_threads() if options.workers == 1 else max(1, (os.cpu_count() or 1) // options.workers)
    work = Work(settings, options.batch_size, threads=threads)
    for job, outcome in _outcomes(jobs, work, options.workers, progress):
        if isinstance(outcome, Failure):
            failures.append(outcome)
            logger.warning("skipped %s: %s", outcome.key, outcome.message)
        else:
            workspace.publish(job, outcome)
    workspace.close()
    records = [workspace.done[key] for key in sorted(workspace.done)]
    vocab = None
    if base is not None:
        vocab = check_vocab(_current_texts(workspace), base, options.tokenizer)
        write_vocab(target / VOCAB_OUT, Vocab(vocab.tokens, source=str(target / VOCAB_OUT)))
    report = build_report(source_dir, target, settings.as_dict(), records, failures, vocab)
    write_reports(target, report, REPORT_JSON, REPORT_HTML)
    return TranscribeResult(report, failures, vocab)


def _unreadable(path: Path) -> str | None:
    """Why a recording to do cannot be read at all, in one line; None when it can be opened (its content aside)."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return "not a regular file (a pipe or a device): nothing to read a recording from"
        with path.open("rb"):  # readable? (a pipe is not opened: that would wait for a writer)
            pass
    except OSError as err:  # a link to nothing or a link loop, no read permission
        return f"cannot be read: {err.strerror}"
    return None


def _utf8(path: str | os.PathLike[str]) -> bool:
    """Whether a path is valid UTF-8 (Python keeps the bytes of a name that is not as surrogate escapes)."""
    try:
        os.fspath(path).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _legible(path: str | os.PathLike[str]) -> str:
    r"""A path as UTF-8 text, the bytes that are not UTF-8 written `\xNN`."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _current_texts(workspace: TranscribeWorkspace) -> Iterator[tuple[str, str]]:
    """`(clip .txt relative to OUT, its text now)` of every kept clip whose files are still there."""
    for key in sorted(workspace.done):
        record: SourceRecord = workspace.done[key]
        for clip in record.kept:
            rel = f"{record.clip_dir}/{clip.name}.txt"
            path = workspace.out / rel
            if path.is_file() and path.with_suffix(".wav").is_file():
                yield rel, " ".join(path.read_text(encoding="utf-8").split())


def _outcomes(
    jobs: list[Job], work: Work, workers: int, progress: bool
) -> Iterator[tuple[Job, SourceRecord | Failure]]:
    """Each job with its outcome, as they finish, behind a progress bar in hours of audio."""
    hours = {job.key: _seconds(job.path) / 3600 for job in jobs}
    bar = tqdm(
        total=round(sum(hours.values()), 4),
        desc="f5lite-transcribe",
        disable=None if progress else True,
        bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.2f}/{total:.2f} h of audio [{elapsed}<{remaining}]",
    )
    with bar:
        if workers == 1 or len(jobs) < 2:
            for job in jobs:
                outcome = process_source(job, work)
                bar.update(hours[job.key])
                yield job, outcome
            return
        # spawn, not fork: this process runs torch threads, which a forked child would inherit broken.
        others = set(active_children())
        pool = ProcessPoolExecutor(min(workers, len(jobs)), mp_context=get_context("spawn"))
        try:
            pending: dict[Future[SourceRecord | Failure], Job] = {
                pool.submit(process_source, job, work): job for job in jobs
            }
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    job = pending.pop(future)
                    outcome = future.result()
                    bar.update(hours[job.key])
                    yield job, outcome
        except BrokenProcessPool as err:
            raise OSError(
                f"a worker process died ({err}), perhaps out of memory; run again (finished files are kept) with "
                "fewer --workers"
            ) from err
        except BaseException:
            # Interrupted (Ctrl-C, or the caller stopped early): stop the workers now rather than after their
            # current recordings, which may be hours long; what they leave in staging the next run clears.
            pool.shutdown(wait=False, cancel_futures=True)
            for child in set(active_children()) - others:  # the pool's workers, not the caller's other children
                child.terminate()
            raise
        pool.shutdown()


def _seconds(path: Path) -> float:
    try:
        return float(sf.info(str(path)).duration)
    except sf.SoundFileError:
        return 0.0  # unreadable: its worker reports why
