"""The `f5lite-prepare` pipeline: check every utterance of a dataset and write a training directory.

`prepare(INPUT, OUT_DIR)` reads INPUT in one of the layouts of `f5lite.prepare.layouts` (an F5-TTS
`metadata.csv`, an LJSpeech folder, or a folder of audio files with `.txt`/`.lab` transcripts) and writes to OUT_DIR:

- `cuts.jsonl.gz`: the kept utterances as a Lhotse CutSet, one cut each in input order (see `f5lite.data.cuts`):
  the audio file with its exact sample count, the transcript and speaker, the transcript's `token_ids` in the
  `vocab.txt` written beside it, the 24 kHz mel `frames`, and with a mel cache `mel_path` and `mel_type`;
- `vocab.txt`: built from the data, or a pretrained vocab with the data's new tokens appended;
- `report.json`: the counts, and every skipped item with its reason code and a one-line detail;
- `mels/` when asked: each kept utterance's 24 kHz log-mel (see `f5lite.data.mel_cache`), so training need not
  decode audio;
- `val/` with a validation split (`val`): the held-out cuts and a test set (see `f5lite.prepare.val_split`);
  `cuts.jsonl.gz` then holds the others;
- with `shar`, Lhotse Shar shards of the kept cuts in another directory (see `f5lite.prepare.shar_writer`).

A bad file never stops the run: it is reported and left out. Re-running gives the same files (no timestamps, fixed
order), every output is replaced atomically, and the source audio is only ever read. The command line around this
is `f5lite.prepare.cli`.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lhotse import MonoCut

from f5lite.atomic import write_json_atomic, write_text_atomic
from f5lite.audio import log_mel
from f5lite.audio.mel import check_mel_kind
from f5lite.data.cuts import CUTS_NAME, cut_id_for, make_cut, portable_source, write_cuts
from f5lite.data.manifest import MEL_DIR_NAME, REPORT_NAME, VAL_DIR_NAME, VAL_TESTSET_NAME, VOCAB_NAME
from f5lite.data.mel_cache import mel_cache_path, write_mel
from f5lite.data.testset import write_testset
from f5lite.prepare.checks import Limits, check_audio, check_speaking_rate, check_text
from f5lite.prepare.layouts import SourceRow, read_source
from f5lite.prepare.ownership import (
    FIXED_OUTPUTS,
    LEGACY_OUTPUTS,
    check_targets,
    owned_by_earlier_run,
    remove_leftovers,
)
from f5lite.prepare.shar_writer import DEFAULT_SHARD_SIZE, SharItem, check_shar_target, write_shar
from f5lite.prepare.skips import SKIP_REASONS, Skip
from f5lite.prepare.val_split import ValSplit, relocate, split_validation, testset_rows
from f5lite.prepare.workers import map_in_workers
from f5lite.text import TextEncoder, Tokenizer, Vocab, check_tokenizer_name, get_tokenizer, load_vocab, uses_vocab
from f5lite.text.vocab_builder import VocabResult, build_vocab


@dataclass(frozen=True)
class PrepareOptions:
    """How `prepare` checks and what it writes.

    Attributes:
        tokenizer: "char", "pinyin", "byte" or "ipa[:<language>]"; the vocab is made of this tokenizer's tokens
            ("byte" needs none).
        vocab: A pretrained `vocab.txt` to keep (its ids never move), or None to build the vocab from the data.
        fixed_vocab: With `vocab`, skip texts holding tokens the vocab lacks instead of appending those tokens.
        limits: Accepted duration and speaking-rate ranges.
        mels: Write the log-mel cache.
        mel_type: Mel convention of the cache and of the `frames` counts: "vocos" or "bigvgan".
        workers: Processes that check files in parallel; 1 checks them in this process.
        shar: A directory to write Lhotse Shar shards of the training cuts into (see `f5lite.prepare.shar_writer`), or
            None.
        shard_size: Cuts per Shar shard.
        val: The validation split to hold out (none by default).
    """

    tokenizer: str = "char"
    vocab: Path | None = None
    fixed_vocab: bool = False
    limits: Limits = field(default_factory=Limits)
    mels: bool = False
    mel_type: str = "vocos"
    workers: int = 1
    shar: Path | None = None
    shard_size: int = DEFAULT_SHARD_SIZE
    val: ValSplit = field(default_factory=ValSplit)

    def __post_init__(self) -> None:
        check_tokenizer_name(self.tokenizer)
        if self.vocab is not None and not uses_vocab(self.tokenizer):
            raise ValueError(f"the {self.tokenizer!r} tokenizer takes no vocab (its ids are UTF-8 bytes)")
        if self.fixed_vocab and self.vocab is None:
            raise ValueError("a fixed vocab needs a vocab to keep: give one with --vocab")
        check_mel_kind(self.mel_type)
        if self.workers < 1:
            raise ValueError(f"workers={self.workers} is not valid; it must be >= 1")
        if self.shard_size < 1:
            raise ValueError(f"shard_size={self.shard_size} is not valid; it must be >= 1")


@dataclass(frozen=True)
class PrepareResult:
    """What `prepare` wrote.

    Attributes:
        cuts: The training utterances as written to `cuts.jsonl.gz` (empty when nothing was kept and none was
            written).
        skipped: Every item left out, in input order.
        report: The content of `report.json`.
        shar_shards: How many Shar shards were written (0 without `shar`).
    """

    cuts: list[MonoCut]
    skipped: list[Skip]
    report: dict[str, Any]
    shar_shards: int = 0
    val: list[MonoCut] = field(default_factory=list)
    """The held-out utterances as written to `val/cuts.jsonl.gz` (with paths relative to `val/`)."""


@dataclass(frozen=True)
class _Settings:
    """What each worker needs besides the row; sent once per worker, not with every row."""

    tokenizer: str
    limits: Limits
    mel_type: str
    mel_dir: Path | None


@dataclass(frozen=True)
class _Kept:
    """A row that passed every audio check, with what its cut records."""

    row: SourceRow
    tokens: tuple[str, ...]
    sample_rate: int
    num_samples: int
    channels: int
    frames: int
    mel_path: Path | None


def prepare(
    input_path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    options: PrepareOptions | None = None,
    *,
    progress: bool = False,
) -> PrepareResult:
    """Check every utterance of a dataset and write `cuts.jsonl.gz`, `vocab.txt`, `report.json` (and mels, Shar).

    Args:
        input_path: A metadata CSV, an LJSpeech folder or a folder of audio files with transcripts.
        out_dir: The training directory to write (created when missing; may be the input's own folder).
        options: Checks and outputs; the defaults when None.
        progress: Show a progress bar on a terminal.

    Returns:
        The kept cuts, the skipped items and the report. When nothing was kept only `report.json` is written
        and the cuts (or manifest) an earlier run left are removed, so no stale cuts are trained on; a Shar
        directory of an earlier run is then emptied.

    Raises:
        ValueError: The input cannot be read at all, the vocab file is invalid, OUT_DIR is a file, or a file of
            someone else's is where an output would go.
        ImportError: The pinyin tokenizer without the `zh` extra, the ipa one without the `ipa` extra or espeak-ng.
        OSError: An output cannot be written.
    """
    options = options or PrepareOptions()
    out = Path(os.path.abspath(out_dir))
    source_path = Path(os.path.abspath(input_path))
    if out.exists() and not out.is_dir():
        raise ValueError(f"output {out} exists and is not a directory")
    base_vocab = load_vocab(options.vocab) if options.vocab is not None else None
    get_tokenizer(options.tokenizer)  # a missing extra or espeak-ng language is reported before any work starts
    shar_dir = None if options.shar is None else Path(os.path.abspath(options.shar))
    mel_dir = out / MEL_DIR_NAME
    ignore = {out / name for name in (*FIXED_OUTPUTS, *LEGACY_OUTPUTS)} | {mel_dir}
    source = read_source(input_path, ignore=ignore | ({shar_dir} if shar_dir is not None else set()))
    owned = owned_by_earlier_run(out)
    # The legacy manifest is a target too: this run removes it, so one that is not ours stops the run here.
    targets = [out / name for name in (*FIXED_OUTPUTS, *LEGACY_OUTPUTS)]
    if options.mels:
        targets += [mel_cache_path(mel_dir, row.audio_path, options.mel_type) for row in source.rows]
    check_targets(out, targets, owned)  # before any work: nothing of anyone else's is ever replaced
    if shar_dir is not None:
        check_shar_target(shar_dir, out, source_path)
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
    for outcome in map_in_workers(_examine, jobs, settings, workers=options.workers, progress=progress):
        if isinstance(outcome, Skip):
            skipped.append(outcome)
        else:
            kept.append(outcome)

    vocab = None
    if uses_vocab(options.tokenizer):
        vocab = build_vocab((k.tokens for k in kept), base_vocab, fixed=options.fixed_vocab)
        if options.fixed_vocab:
            kept = _skip_unknown_tokens(kept, vocab, skipped)
    cuts = _cuts(kept, out, _encoder(options.tokenizer, vocab, base_vocab, out), options.mel_type)
    every_cut = cuts
    val: list[MonoCut] = []
    if cuts and options.val.active:
        cuts, val = split_validation(cuts, options.val)
    written = {out / REPORT_NAME}
    if val:
        val_dir = out / VAL_DIR_NAME
        val_dir.mkdir(exist_ok=True)
        val = [relocate(cut, out, val_dir) for cut in val]
        write_cuts(val_dir / CUTS_NAME, val)
        written.add(val_dir / CUTS_NAME)
        rows = testset_rows([c for c in every_cut if c.id in {v.id for v in val}], cuts, out)
        if rows:
            write_testset(val_dir / VAL_TESTSET_NAME, rows)
            written.add(val_dir / VAL_TESTSET_NAME)
    if cuts:
        if vocab is not None:
            # The tokens come from a loaded vocab or from text split at white space, so none holds a line break;
            # write_vocab would only warn again, under the temporary file's name, about the base's duplicate rows.
            write_text_atomic(out / VOCAB_NAME, "".join(f"{token}\n" for token in vocab.tokens))
            written.add(out / VOCAB_NAME)
        write_cuts(out / CUTS_NAME, cuts)
        written.add(out / CUTS_NAME)
    outputs = sorted(p.relative_to(out).as_posix() for p in written)
    report = _report(source_path, out, source.layout, cuts, val, skipped, options, vocab, outputs)
    # A run that keeps nothing removes the cuts it left before, so no stale cuts are trained on.
    remove_leftovers(owned, written | {k.mel_path for k in kept if k.mel_path is not None}, mel_dir)
    write_json_atomic(out / REPORT_NAME, report)
    shards = 0
    if shar_dir is not None and (cuts or shar_dir.exists()):
        training = {cut.id for cut in cuts}
        items = [
            SharItem(c, k.row.audio_path, k.mel_path) for c, k in zip(every_cut, kept, strict=True) if c.id in training
        ]
        vocab_path = out / VOCAB_NAME if vocab is not None else None
        shards = write_shar(
            shar_dir,
            items,
            shard_size=options.shard_size,
            vocab_path=vocab_path,
            workers=options.workers,
            progress=progress,
        )
    return PrepareResult(cuts, skipped, report, shards, val)


def _examine(row: SourceRow, settings: _Settings) -> _Kept | Skip:
    """Run the audio checks on one row; the whole item is skipped, never the run, whatever goes wrong."""
    try:
        audio = check_audio(row.audio_path, settings.limits, settings.mel_type)
        if isinstance(audio, Skip):
            return audio
        problem = check_speaking_rate(row.audio_path, row.text, audio.duration, settings.limits)
        if problem is not None:
            return problem
        tokens = _tokenizer(settings.tokenizer)(row.text) if uses_vocab(settings.tokenizer) else []
        mel_path = None
        if settings.mel_dir is not None:
            mel_path = mel_cache_path(settings.mel_dir, row.audio_path, settings.mel_type)
            write_mel(mel_path, log_mel(audio.waveform[None], settings.mel_type)[0])
    except Exception as err:  # a decoder bug or an out-of-memory on one odd file must not end a long run
        return Skip(row.audio_path, "unreadable", f"{type(err).__name__}: {err}")
    return _Kept(
        row=row,
        tokens=tuple(tokens),
        sample_rate=audio.sample_rate,
        num_samples=audio.num_samples,
        channels=audio.channels,
        frames=audio.frames,
        mel_path=mel_path,
    )


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
            if item.mel_path is not None:
                # No cut names this mel, so the next run would not know it as ours and would refuse to replace it.
                item.mel_path.unlink(missing_ok=True)
                with contextlib.suppress(OSError):  # the sub-folder stays when other mels are in it
                    item.mel_path.parent.rmdir()
        else:
            usable.append(item)
    return usable


def _encoder(tokenizer: str, vocab: VocabResult | None, base: Vocab | None, out: Path) -> TextEncoder:
    """The encoder training will use with the `vocab.txt` this run writes, so the recorded ids are its ids."""
    if vocab is None:
        return TextEncoder(tokenizer)
    if base is not None and base.tokens == vocab.tokens:
        return TextEncoder(tokenizer, base)
    with _quiet(logging.getLogger(Vocab.__module__)):  # the base's duplicate rows were warned about on loading
        written = Vocab(vocab.tokens, source=str(out / VOCAB_NAME))
    return TextEncoder(tokenizer, written)


@contextlib.contextmanager
def _quiet(logger: logging.Logger) -> Iterator[None]:
    def drop(_: logging.LogRecord) -> bool:
        return False

    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)


def _cuts(kept: list[_Kept], out: Path, encoder: TextEncoder, mel_type: str) -> list[MonoCut]:
    taken: set[str] = set()
    cuts = []
    for item in kept:
        # The tokens counted into the vocab are encoded as they are (pinyin is not converted a second time); the
        # byte tokenizer keeps none, and encodes the text itself.
        encoded = encoder.encode([list(item.tokens) if encoder.vocab is not None else item.row.text])
        token_ids = encoded.ids[0, : int(encoded.lengths[0])].tolist()
        cuts.append(
            make_cut(
                _unique_id(item.row.audio_path, out, taken),
                portable_source(item.row.audio_path, out),
                sample_rate=item.sample_rate,
                num_samples=item.num_samples,
                channels=item.channels,
                text=item.row.text,
                speaker=item.row.speaker,
                token_ids=token_ids,
                frames=item.frames,
                mel_path=None if item.mel_path is None else portable_source(item.mel_path, out),
                mel_type=mel_type if item.mel_path is not None else None,
            )
        )
    return cuts


def _unique_id(audio_path: Path, out: Path, taken: set[str]) -> str:
    """The cut id of `cut_id_for`, unless another file already has it (`a.wav` and `a.flac`): then the full path."""
    for candidate in (cut_id_for(audio_path, out), portable_source(audio_path, out)):
        if candidate not in taken:
            taken.add(candidate)
            return candidate
    # Both taken (`a.wav.flac` has the id `a.wav`, the path of another file): a hash of the path, unique.
    candidate = "x" + hashlib.sha1(str(audio_path).encode()).hexdigest()[:16]
    taken.add(candidate)
    return candidate


def _report(
    input_path: Path,
    out: Path,
    layout: str,
    cuts: list[MonoCut],
    val: list[MonoCut],
    skipped: list[Skip],
    options: PrepareOptions,
    vocab: VocabResult | None,
    outputs: list[str],
) -> dict[str, Any]:
    by_reason = Counter(s.reason for s in skipped)
    speakers = Counter(s.speaker for cut in (*cuts, *val) for s in cut.supervisions if s.speaker is not None)
    vocab_report = None
    if vocab is not None:
        vocab_report = {
            "tokenizer": options.tokenizer,
            "size": len(vocab.tokens),
            "base": None if options.vocab is None else portable_source(Path(os.path.abspath(options.vocab)), out),
            "fixed": options.fixed_vocab,
            "added": list(vocab.added),
            "missing": dict(sorted(vocab.missing.items())),
        }
    val_speakers = {s.speaker for cut in val for s in cut.supervisions if s.speaker is not None}
    val_report = None
    if options.val.active:
        val_report = {
            "utterances": len(val),
            "seconds": round(sum(cut.duration for cut in val), 3),
            "speakers": len(val_speakers),
            "by_speaker": options.val.by_speaker,
        }
    return {
        "input": portable_source(input_path, out),
        "layout": layout,
        "kept": len(cuts) + len(val),
        "kept_seconds": round(sum(cut.duration for cut in (*cuts, *val)), 3),
        "train": len(cuts),
        "val": val_report,
        "speakers": dict(sorted(speakers.items())),
        "skipped_count": len(skipped),
        "skipped_by_reason": {reason: by_reason[reason] for reason in SKIP_REASONS if by_reason[reason]},
        "skipped": [{"path": portable_source(s.path, out), "reason": s.reason, "detail": s.detail} for s in skipped],
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
