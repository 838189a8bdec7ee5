"""`f5lite-transcribe IN OUT` and `python -m f5lite.transcribe`: the command line of `f5lite.transcribe.run`.

Every recording under IN becomes utterance clips with transcripts in `OUT/clips` (a folder `f5lite-prepare` reads),
with `OUT/report.json` and `OUT/report.html`; `--vocab-of MODEL_DIR_OR_VOCAB` also checks the transcripts' tokens
against a pretrained vocabulary and writes `OUT/vocab.txt`, extended. Running it again on the same OUT continues an
interrupted run. A short summary, and the command that prepares the clips for training, go to stdout.

Exit status: 0 when clips were kept, 1 when none were, 2 for a bad command line, IN, OUT or setting (an OUT another
run is writing, too), 130 when interrupted by Ctrl-C.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from f5lite.text.tokenizers import tokenizer_argument, uses_vocab
from f5lite.transcribe.filters import FilterSettings
from f5lite.transcribe.run import TranscribeOptions, TranscribeResult, transcribe
from f5lite.transcribe.slicing import SliceSettings
from f5lite.transcribe.source import TranscribeSettings
from f5lite.transcribe.workspace import CLIPS_DIR, REPORT_HTML, VOCAB_OUT

EXIT_OK = 0
"""Exit status: clips were kept."""
EXIT_NOTHING_KEPT = 1
"""Exit status: no clip was kept (`report.html` says why)."""
EXIT_USAGE = 2
"""Exit status: a bad command line, IN, OUT or setting, or another run holds OUT; nothing was written."""
EXIT_INTERRUPTED = 130
"""Exit status: stopped by Ctrl-C (the finished recordings are kept)."""


def _vocab_tokenizer(value: str) -> str:
    """A `--tokenizer` with a vocabulary to check (not byte, whose ids are bytes)."""
    if not uses_vocab(tokenizer_argument(value)):
        raise argparse.ArgumentTypeError(f"--tokenizer={value!r} has no vocabulary to check; give char, pinyin or ipa")
    return value


def _parser() -> argparse.ArgumentParser:
    cut, keep = SliceSettings(), FilterSettings()
    parser = argparse.ArgumentParser(
        prog="f5lite-transcribe",
        description="Cut the recordings under IN into utterance clips in their pauses (Silero VAD), transcribe them, "
        "keep the good ones, and write them with their transcripts to OUT/clips for f5lite-prepare; report.html "
        "says what was kept and why anything was left out. Run again on the same OUT to continue.",
    )
    add = parser.add_argument
    add("input", type=Path, help="folder of recordings (wav, flac, ogg, mp3, ...; any rate, channels and length)")
    add("out", type=Path, help="output folder (new, empty, or an earlier run's to continue it)")
    add(
        "--asr",
        default="pocketsphinx",
        help="recogniser: pocketsphinx (offline, English; the default), "
        "whisper:DIR, faster-whisper:DIR or paraformer:DIR (Chinese)",
    )
    add("--language", choices=("en", "zh"), default="en", help="language of the recordings (default: en)")
    add("--min-seconds", type=float, default=cut.min_seconds, help="shortest clip (default: %(default)s)")
    add("--max-seconds", type=float, default=cut.max_seconds, help="longest clip (default: %(default)s)")
    add("--margin", type=float, default=cut.margin, help="seconds of pause kept around speech (default: %(default)s)")
    add("--threshold", type=float, default=cut.threshold, help="VAD speech probability (default: %(default)s)")
    add("--min-pause", type=float, default=cut.min_pause, help="shortest pause to cut in (default: %(default)s)")
    add(
        "--min-speech-share",
        type=float,
        default=keep.min_speech_share,
        help="least share of a clip that is speech (default: %(default)s)",
    )
    add(
        "--min-confidence",
        type=float,
        default=keep.min_confidence,
        help="least recogniser confidence, where it gives one (default: %(default)s)",
    )
    add(
        "--rate-factor",
        type=float,
        default=keep.rate_factor,
        help="how far a clip's speaking rate may be from its file's median (default: %(default)sx)",
    )
    add(
        "--vocab-of",
        type=Path,
        metavar="MODEL_DIR_OR_VOCAB",
        help="list the transcripts' tokens this model's vocab.txt lacks and write OUT/vocab.txt extended",
    )
    add(
        "--tokenizer",
        type=_vocab_tokenizer,
        default="char",
        help="tokens of the vocabulary check: char, pinyin or ipa[:<espeak-ng language>] (default: char)",
    )
    add(
        "--workers",
        type=int,
        default=min(4, os.cpu_count() or 1),
        help="recordings transcribed at once, one process each (default: %(default)s)",
    )
    add("--batch-size", type=int, default=8, help="clips per recogniser call (default: %(default)s)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `f5lite-transcribe` with a command line.

    Args:
        argv: the arguments (default: `sys.argv[1:]`).

    Returns:
        The exit status (see the module docstring).
    """
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="f5lite-transcribe: %(message)s")
    try:
        settings = TranscribeSettings(
            slicing=SliceSettings(
                min_seconds=args.min_seconds,
                max_seconds=args.max_seconds,
                margin=args.margin,
                threshold=args.threshold,
                min_pause=args.min_pause,
            ),
            filters=FilterSettings(args.min_speech_share, args.min_confidence, args.rate_factor),
            asr=args.asr,
            language=args.language,
        )
        options = TranscribeOptions(settings, args.workers, args.batch_size, args.vocab_of, args.tokenizer)
        result = transcribe(args.input, args.out, options, progress=True)
    except (ValueError, ImportError, OSError) as err:
        sys.stderr.write(f"f5lite-transcribe: error: {err}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("f5lite-transcribe: interrupted; the same command continues where this run stopped\n")
        return EXIT_INTERRUPTED
    sys.stdout.write(_summary(result, args.out))
    return EXIT_OK if result.report["totals"]["clips_kept"] else EXIT_NOTHING_KEPT


def _summary(result: TranscribeResult, out: Path) -> str:
    totals = result.report["totals"]
    lines = [
        f"{totals['sources']} recording(s), {totals['hours']:.2f} h: {totals['clips_kept']} clip(s) kept "
        f"({totals['kept_hours']:.2f} h), {totals['left_out']} stretch(es) of speech left out"
    ]
    lines += [f"failed: {failure.key}: {failure.message}" for failure in result.failures]
    lines += [f"no speech: {e['source']}" for e in result.report["sources"] if e["status"] == "no speech"]
    vocab_flag = ""
    if result.vocab is not None:
        missing = result.vocab.missing
        shown = " ".join(repr(m.token) for m in missing[:20]) + (" ..." if len(missing) > 20 else "")
        lines.append(
            f"vocab: {len(missing)} token(s) missing from {result.vocab.base}"
            + (f": {shown}; extended vocab in {out / VOCAB_OUT}" if missing else "")
        )
        vocab_flag = f" --vocab {out / VOCAB_OUT}"
    lines.append(f"report: {out / REPORT_HTML}")
    if totals["clips_kept"]:
        lines.append(f"next: f5lite-prepare {out / CLIPS_DIR} DATA_DIR{vocab_flag}")
    return "".join(f"{line}\n" for line in lines)
