"""`f5lite-prepare`: check every utterance of a dataset and write the training directory that `f5lite.data` reads.

- `pipeline.py`: `prepare()` with its `PrepareOptions` and `PrepareResult`, the parallel per-file workers and
  `report.json`;
- `cli.py`: the `f5lite-prepare` / `python -m f5lite.prepare` command line, its summary and exit codes;
- `layouts.py`: the input layouts read (F5-TTS `metadata.csv`, LJSpeech, a folder of audio with transcripts);
- `checks.py`: the per-utterance checks and their `Limits`; `skips.py`: the reason codes of skipped items;
- `ownership.py`: which files in OUT_DIR an earlier run wrote, the only ones a run replaces or removes;
- `shar_writer.py`: `--shar`, the kept cuts as Lhotse Shar shards with their audio and mels;
- `workers.py`: the per-file work spread over processes.

The formats written here and read by training (the cuts of `cuts.jsonl.gz`, the mel cache) live in `f5lite.data`;
this package imports them, and `f5lite.data` never imports this package. The vocab built from the data, or a
pretrained vocab extended without moving any id, is `f5lite.text.vocab_builder` (`f5lite-transcribe` uses it too).
"""

from f5lite.prepare.checks import Limits
from f5lite.prepare.cli import EXIT_NOTHING_KEPT, EXIT_OK, EXIT_USAGE
from f5lite.prepare.layouts import LAYOUTS, read_source
from f5lite.prepare.pipeline import PrepareOptions, PrepareResult, prepare
from f5lite.prepare.skips import SKIP_REASONS, Skip

__all__ = [
    "EXIT_NOTHING_KEPT",
    "EXIT_OK",
    "EXIT_USAGE",
    "LAYOUTS",
    "SKIP_REASONS",
    "Limits",
    "PrepareOptions",
    "PrepareResult",
    "Skip",
    "prepare",
    "read_source",
]
