"""`f5lite-prepare INPUT OUT_DIR` and `python -m f5lite.prepare`: the command line of `f5lite.prepare.pipeline`.

INPUT is an F5-TTS `metadata.csv`, an LJSpeech folder, or a folder of audio files with `.txt`/`.lab` transcripts;
OUT_DIR receives `cuts.jsonl.gz` (a Lhotse CutSet), `vocab.txt`, `report.json` and, with `--mels`, the `mels/`
cache; `--val-count N` (or `--val-fraction F`, `--val-by-speaker`) holds out a validation split in `OUT_DIR/val/`
(its cuts and a `testset.txt` for `f5lite-eval` and `eval.prompts`); `--shar DIR` also writes the training cuts as
Lhotse Shar shards (audio and mels inside) into DIR. A short summary (kept, skipped by reason, new vocab tokens,
the validation split) goes to stdout.

Exit status: 0 when anything usable is left, 1 when nothing is, 2 for a bad command line or an unreadable INPUT.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from f5lite.audio import MEL_KINDS
from f5lite.data.manifest import REPORT_NAME, VAL_DIR_NAME
from f5lite.prepare.checks import Limits
from f5lite.prepare.pipeline import PrepareOptions, prepare
from f5lite.prepare.shar_writer import DEFAULT_SHARD_SIZE
from f5lite.prepare.val_split import ValSplit
from f5lite.text.tokenizers import tokenizer_argument

EXIT_OK = 0
"""Exit status: at least one utterance was kept."""
EXIT_NOTHING_KEPT = 1
"""Exit status: every utterance was skipped (`report.json` says why)."""
EXIT_USAGE = 2
"""Exit status: a bad command line, or an INPUT that cannot be read at all."""


def _parser() -> argparse.ArgumentParser:
    defaults = Limits()
    parser = argparse.ArgumentParser(
        prog="f5lite-prepare",
        description="Check every utterance of a dataset and write a training directory: cuts.jsonl.gz (a Lhotse "
        "CutSet), vocab.txt, report.json (every skipped file with its reason) and, with --mels, a cache of log-mels.",
    )
    add = parser.add_argument
    add("input", type=Path, help="F5-TTS metadata.csv, LJSpeech folder, or folder of audio with .txt/.lab files")
    add("out_dir", type=Path, help="the training directory to write")
    add("--vocab", type=Path, help="pretrained vocab.txt to extend: its ids are kept, new tokens are appended")
    add("--fixed-vocab", action="store_true", help="with --vocab: skip texts with tokens it lacks, add none")
    add(
        "--tokenizer",
        type=tokenizer_argument,
        default="char",
        help="tokens of the vocab: char, pinyin, byte, or ipa (espeak-ng phonemes; ipa:de for German and so on) "
        "(default: char)",
    )
    add("--min-seconds", type=float, default=defaults.min_seconds, help="shortest audio kept (default: %(default)s)")
    add("--max-seconds", type=float, default=defaults.max_seconds, help="longest audio kept (default: %(default)s)")
    add(
        "--min-chars-per-second",
        type=float,
        default=defaults.min_chars_per_second,
        help="slowest plausible speaking rate (default: %(default)s)",
    )
    add(
        "--max-chars-per-second",
        type=float,
        default=defaults.max_chars_per_second,
        help="fastest plausible speaking rate (default: %(default)s)",
    )
    add("--mels", action="store_true", help="also cache each kept utterance's 24 kHz log-mel")
    add("--mel-type", choices=MEL_KINDS, default="vocos", help="mel convention (default: vocos)")
    add("--val-count", type=int, default=0, metavar="N", help="hold out N utterances as a validation split (val/)")
    add("--val-fraction", type=float, default=0.0, metavar="F", help="hold out this share instead, e.g. 0.01")
    add("--val-by-speaker", action="store_true", help="hold out whole speakers (voices never trained on)")
    add("--shar", type=Path, metavar="DIR", help="also write the training cuts as Lhotse Shar shards into DIR")
    add("--shard-size", type=int, metavar="N", help=f"cuts per Shar shard (default: {DEFAULT_SHARD_SIZE})")
    add("--workers", type=int, default=min(8, os.cpu_count() or 1), help="parallel processes (default: %(default)s)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `f5lite-prepare` with a command line.

    Args:
        argv: The arguments (default: `sys.argv[1:]`).

    Returns:
        The exit status: 0 when anything was kept, 1 when nothing was, 2 for a bad command line or input.
    """
    args = _parser().parse_args(argv)
    if args.shard_size is not None and args.shar is None:
        sys.stderr.write("f5lite-prepare: error: --shard-size needs --shar DIR\n")
        return EXIT_USAGE
    logging.basicConfig(level=logging.INFO, format="f5lite-prepare: %(message)s")
    try:
        options = PrepareOptions(
            tokenizer=args.tokenizer,
            vocab=args.vocab,
            fixed_vocab=args.fixed_vocab,
            limits=Limits(args.min_seconds, args.max_seconds, args.min_chars_per_second, args.max_chars_per_second),
            mels=args.mels,
            mel_type=args.mel_type,
            workers=args.workers,
            shar=args.shar,
            shard_size=DEFAULT_SHARD_SIZE if args.shard_size is None else args.shard_size,
            val=ValSplit(args.val_count, args.val_fraction, args.val_by_speaker),
        )
        result = prepare(args.input, args.out_dir, options, progress=True)
    except (ValueError, ImportError, OSError) as err:
        sys.stderr.write(f"f5lite-prepare: error: {err}\n")
        return EXIT_USAGE
    sys.stdout.write(_summary(result.report, args.out_dir, args.shar, result.shar_shards))
    return EXIT_OK if result.cuts else EXIT_NOTHING_KEPT


def _summary(report: dict[str, Any], out_dir: Path, shar: Path | None, shards: int) -> str:
    total = report["kept"] + report["skipped_count"]
    lines = [f"kept {report['kept']} of {total} utterances ({_hours_minutes(report['kept_seconds'])})"]
    if report["skipped_count"]:
        reasons = ", ".join(f"{reason} {n}" for reason, n in report["skipped_by_reason"].items())
        lines.append(f"skipped {report['skipped_count']}: {reasons}")
    vocab = report["vocab"]
    if vocab is not None and vocab["added"]:
        lines.append(f"vocab: {len(vocab['added'])} new token(s) appended to {vocab['base']}")
    val = report.get("val")
    if val is not None and report["kept"]:
        held = "speaker-disjoint, " if val["by_speaker"] else ""
        lines.append(
            f"validation: {val['utterances']} utterance(s) held out ({held}{val['speakers']} speaker(s)) in "
            f"{out_dir / VAL_DIR_NAME}"
        )
    if not report["kept"]:
        lines.append("nothing usable is left: no cuts were written")
    elif shar is not None:
        lines.append(f"shar: {shards} shard(s) in {shar}")
    lines.append(f"report: {out_dir / REPORT_NAME}")
    return "".join(f"{line}\n" for line in lines)


def _hours_minutes(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d} of audio"
