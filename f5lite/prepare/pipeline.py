"""The `f5lite-prepare` pipeline: check every utterance of a dataset and write a training directory.

`prepare(INPUT, OUT_DIR)` reads INPUT in one of the layouts of `f5lite.prepare.layouts` (an F5-TTS
`metadata.csv`, an LJSpeech folder, or a folder of audio files with `.txt`/`.lab` transcripts) and writes to OUT_DIR:

- `manifest.jsonl`: the kept utterances (see `f5lite.data.manifest`);
- `vocab.txt`: built from the data, or a pretrained vocab with the data's new tokens appended;
- `report.json`: the counts, and every skipped item with its reason code and a one-line detail;
- `mels/` when asked: each kept utterance's 24 kHz log-mel (see `f5lite.data.mel_cache`), so training need not
  decode audio.

A bad file never stops the run: it is reported and left out. Re-running gives the same files (no timestamps, fixed
order), every output is replaced atomically, and the source audio is only ever read. The command line around this
is `f5lite.prepare.cli`.
"""

from __future__ import annotations

import functools
import os
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from f5lite.atomic import write_json_atomic, write_text_atomic
from f5lite.audio import log_mel
from f5lite.audio.mel import check_mel_kind
from f5lite.data.manifest import (
    DURATION_DECIMALS,
    MANIFEST_NAME,
    MEL_DIR_NAME,
    REPORT_NAME,
    VOCAB_NAME,
    ManifestRow,
    portable_path,
    write_manifest,
)
from f5lite.data.mel_cache import mel_cache_path, write_mel
from f5lite.prepare.checks import Limits, check_audio, check_speaking_rate, check_text
from f5lite.prepare.layouts import SourceRow, read_source
from f5lite.prepare.ownership import FIXED_OUTPUTS, check_targets, owned_by_earlier_run, remove_leftovers
from f5lite.prepare.skips import SKIP_REASONS, Skip
from f5lite.prepare.vocab_builder import VocabResult, build_vocab
from f5lite.text import TOKENIZER_NAMES, Tokenizer, get_tokenizer, load_vocab
from f5lite.text.tokenizers import VOCAB_TOKENIZERS


@dataclass(frozen=True)
class PrepareOptions:
    """How `prepare` checks and what it writes.

    Attributes:
        tokenizer: "char", "pinyin" or "byte"; the vocab is made of this tokenizer's tokens ("byte" needs none).
        vocab: A pretrained `vocab.txt` to keep (its ids never move), or None to build the vocab from the data.
        fixed_vocab: With `vocab`, skip texts holding tokens the vocab lacks instead of appending those tokens.
        limits: Accepted duration and speaking-rate ranges.
        mels: Write the log-mel cache.
        mel_type: Mel convention of the cache and of the `frames` counts: "vocos" or "bigvgan".
        workers: Processes that check files in parallel; 1 checks them in this process.
    """

    tokenizer: str = "char"
    vocab: Path | None = None
    fixed_vocab: bool = False
    limits: Limits = field(default_factory=Limits)
    mels: bool = False
    mel_type: str = "vocos"
    workers: int = 1

    def __post_init__(self) -> None:
        if self.tokenizer not in TOKENIZER_NAMES:
            raise ValueError(f"tokenizer {self.tokenizer!r} is not valid; choose one of: {', '.join(TOKENIZER_NAMES)}")
        if self.vocab is not None and self.tokenizer not in VOCAB_TOKENIZERS:
            raise ValueError(f"the {self.tokenizer!r} tokenizer takes no vocab (its ids are UTF-8 bytes)")
        if self.fixed_vocab and self.vocab is None:
            raise ValueError("a fixed vocab needs a vocab to keep: give one with --vocab")
        check_mel_kind(self.mel_type)
        if self.workers < 1:
            raise ValueError(f"workers={self.workers} is not valid; it must be >= 1")


@dataclass(frozen=True)
class PrepareResult:
    """What `prepare` wrote.

    Attributes:
        rows: The manifest rows (empty when nothing was kept and no manifest was written).
        skipped: Every item left out, in input order.
        report: The content of `report.json`.
    """

    rows: list[ManifestRow]
    skipped: list[Skip]
    report: dict[str, Any]


@dataclass(frozen=True)
class _Settings:
    """What each worker needs besides the row; sent once per worker, not with every row."""

    tokenizer: str
    limits: Limits
    mel_type: str
    mel_dir: Path | None


@dataclass(frozen=True)
class _Kept:
    row: ManifestRow
    tokens: tuple[str, ...]


def prepare(
    input_path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    options: PrepareOptions | None = None,
    *,
    progress: bool = False,
) -> PrepareResult:
    """Check every utterance of a dataset and write `manifest.jsonl`, `vocab.txt`, `report.json` (and mels).

    Args:
        input_path: A metadata CSV, an LJSpeech folder or a folder of audio files with transcripts.
        out_dir: The training directory to write (created when missing; may be the input's own folder).
        options: Checks and outputs; the defaults when None.
        progress: Show a progress bar on a terminal.

    Returns:
        The kept rows, the skipped items and the report. When nothing was kept only `report.json` is written
        and a `manifest.jsonl` left by an earlier run is removed, so no stale manifest is trained on.

    Raises:
        ValueError: The input cannot be read at all, the vocab file is invalid, or OUT_DIR is a file.
        ImportError: The pinyin tokenizer without the `zh` extra.
        OSError: An output cannot be written.
    """
    options = options or PrepareOptions()
    out = Path(os.path.abspath(out_dir))
    if out.exists() and not out.is_dir():
        raise ValueError(f"output {out} exists and is not a directory")
    base_vocab = load_vocab(options.vocab) if options.vocab is not None else None
    get_tokenizer(options.tokenizer)  # a missing zh extra is reported before any work starts
    mel_dir = out / MEL_DIR_NAME
    source = read_source(input_path, ignore={out / MANIFEST_NAME, out / VOCAB_NAME, out / REPORT_NAME, mel_dir})
    owned = owned_by_earlier_run(out)
    targets = [out / name for name in FIXED_OUTPUTS]
    if options.mels:
        targets += [mel_cache_path(mel_dir, row.audio_path, options.mel_type) for row in source.rows]
    check_targets(out, targets, owned)  # before any work: nothing of anyone else's is ever replaced
    out.mkdir(parents=True, exist_ok=True)

    settings = _Settings(options.tokenizer, options.limits, options.mel_type, mel_dir if options.mels else None)
    skipped = list(source.skipped)
    jobs = []
    for row in source.rows:
        problem = check_text(row.audio_path, row.text)
        if problem is None:
            jobs.append(row)
        else:
            skipped.append(problem)
    kept: list[_Kept] = []
    for outcome in _run(jobs, settings, options.workers, progress):
        if isinstance(outcome, Skip):
            skipped.append(outcome)
        else:
            kept.append(outcome)

    vocab = None
    if options.tokenizer in VOCAB_TOKENIZERS:
        vocab = build_vocab((k.tokens for k in kept), base_vocab, fixed=options.fixed_vocab)
        if options.fixed_vocab:
            kept = _skip_unknown_tokens(kept, vocab, skipped)
    rows = [k.row for k in kept]
    written = {out / REPORT_NAME}
    if rows:
        if vocab is not None:
            # The tokens come from a loaded vocab or from text split at white space, so none holds a line break;
            # write_vocab would only warn again, under the temporary file's name, about the base's duplicate rows.
            write_text_atomic(out / VOCAB_NAME, "".join(f"{token}\n" for token in vocab.tokens))
            written.add(out / VOCAB_NAME)
        write_manifest(out / MANIFEST_NAME, rows)
        written.add(out / MANIFEST_NAME)
    outputs = sorted(p.name for p in written)
    report = _report(Path(os.path.abspath(input_path)), out, source.layout, rows, skipped, options, vocab, outputs)
    # A run that keeps nothing removes the manifest it left before, so no stale manifest is trained on.
    remove_leftovers(owned, written | {r.mel_path for r in rows if r.mel_path is not None}, mel_dir)
    write_json_atomic(out / REPORT_NAME, report)
    return PrepareResult(rows, skipped, report)


def _run(jobs: list[SourceRow], settings: _Settings, workers: int, progress: bool) -> Iterator[_Kept | Skip]:
    bar = tqdm(total=len(jobs), desc="f5lite-prepare", unit="file", disable=None if progress else True)
    with bar:
        if workers == 1 or len(jobs) < 2:
            for row in jobs:
                yield _examine(row, settings)
                bar.update()
            return
        # spawn, not fork: the caller may already run torch threads, which a forked child would inherit broken.
        context = get_context("spawn")
        with ProcessPoolExecutor(workers, mp_context=context, initializer=_init_worker, initargs=(settings,)) as pool:
            chunk = max(1, min(64, len(jobs) // (workers * 8)))
            try:
                for outcome in pool.map(_examine_in_worker, jobs, chunksize=chunk):
                    yield outcome
                    bar.update()
            except BrokenProcessPool as err:
                # A worker killed from outside (out of memory) or crashed inside a decoder: say how to find the file.
                raise OSError(
                    f"a worker process died ({err}); run again with --workers 1 to see on which file"
                ) from err


_worker_settings: _Settings | None = None


def _init_worker(settings: _Settings) -> None:
    global _worker_settings
    _worker_settings = settings
    torch.set_num_threads(1)  # the workers are the parallelism; intra-op threads would oversubscribe the cores


def _examine_in_worker(row: SourceRow) -> _Kept | Skip:
    assert _worker_settings is not None, "worker used without _init_worker"
    return _examine(row, _worker_settings)


def _examine(row: SourceRow, settings: _Settings) -> _Kept | Skip:
    """Run the audio checks on one row; the whole item is skipped, never the run, whatever goes wrong."""
    try:
        audio = check_audio(row.audio_path, settings.limits, settings.mel_type)
        if isinstance(audio, Skip):
            return audio
        problem = check_speaking_rate(row.audio_path, row.text, audio.duration, settings.limits)
        if problem is not None:
            return problem
        tokens = _tokenizer(settings.tokenizer)(row.text) if settings.tokenizer in VOCAB_TOKENIZERS else []
        mel_path = None
        if settings.mel_dir is not None:
            mel_path = mel_cache_path(settings.mel_dir, row.audio_path, settings.mel_type)
            write_mel(mel_path, log_mel(audio.waveform[None], settings.mel_type)[0])
    except Exception as err:  # a decoder bug or an out-of-memory on one odd file must not end a long run
        return Skip(row.audio_path, "unreadable", f"{type(err).__name__}: {err}")
    manifest_row = ManifestRow(
        audio_path=row.audio_path,
        text=row.text,
        duration=round(audio.duration, DURATION_DECIMALS),
        frames=audio.frames,
        sample_rate=audio.sample_rate,
        speaker=row.speaker,
        mel_path=mel_path,
        mel_type=settings.mel_type if mel_path is not None else None,
    )
    return _Kept(manifest_row, tuple(tokens))


@functools.cache
def _tokenizer(name: str) -> Tokenizer:
    return get_tokenizer(name)


def _skip_unknown_tokens(kept: list[_Kept], vocab: VocabResult, skipped: list[Skip]) -> list[_Kept]:
    known = set(vocab.tokens)
    usable = []
    for item in kept:
        unknown = sorted({t for t in item.tokens if t not in known})
        if unknown:
            listed = ", ".join(repr(t) for t in unknown)
            skipped.append(Skip(item.row.audio_path, "unknown_chars", f"not in the given vocab: {listed}"))
        else:
            usable.append(item)
    return usable


def _report(
    input_path: Path,
    out: Path,
    layout: str,
    rows: list[ManifestRow],
    skipped: list[Skip],
    options: PrepareOptions,
    vocab: VocabResult | None,
    outputs: list[str],
) -> dict[str, Any]:
    by_reason = Counter(s.reason for s in skipped)
    vocab_report = None
    if vocab is not None:
        vocab_report = {
            "tokenizer": options.tokenizer,
            "size": len(vocab.tokens),
            "base": None if options.vocab is None else portable_path(Path(os.path.abspath(options.vocab)), out),
            "fixed": options.fixed_vocab,
            "added": list(vocab.added),
            "missing": dict(sorted(vocab.missing.items())),
        }
    return {
        "input": portable_path(input_path, out),
        "layout": layout,
        "kept": len(rows),
        "kept_seconds": round(sum(r.duration for r in rows), 3),
        "speakers": dict(sorted(Counter(r.speaker for r in rows if r.speaker is not None).items())),
        "skipped_count": len(skipped),
        "skipped_by_reason": {reason: by_reason[reason] for reason in SKIP_REASONS if by_reason[reason]},
        "skipped": [{"path": portable_path(s.path, out), "reason": s.reason, "detail": s.detail} for s in skipped],
        "vocab": vocab_report,
        "settings": {
            "min_seconds": options.limits.min_seconds,
            "max_seconds": options.limits.max_seconds,
            "min_chars_per_second": options.limits.min_chars_per_second,
            "max_chars_per_second": options.limits.max_chars_per_second,
            "mel_type": options.mel_type,
            "mels": options.mels,
        },
        "outputs": outputs,
    }
