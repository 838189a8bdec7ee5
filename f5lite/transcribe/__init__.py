"""From raw recordings to a training set: `f5lite-transcribe IN OUT` (and `python -m f5lite.transcribe`).

- `vad`: speech probabilities of a recording of any length, read in blocks, from Silero VAD (its wheel carries the
  model, so it runs offline; the `transcribe` extra).
- `slicing`: where to cut a recording into utterance clips, from those probabilities: in pauses, never inside speech.
- `recognise`: the clips' transcripts, from the recognisers of `f5lite.metrics.asr` in batches, as training text.
- `filters`: which transcribed clips are kept, and the reason for each one left out.
- `source`: one recording from start to finish (the work of one worker process), and its record.
- `workspace`: OUT's layout and its clip folders' names, who owns it (one run at a time: its lock), and how a
  source's clips appear there whole or not at all (resume).
- `vocab`: `--vocab-of`, the transcripts' tokens a pretrained vocabulary lacks, and the vocabulary extended.
- `report`: `report.json` and `report.html`.
- `run`: `transcribe()`, the sources spread over worker processes; `cli`: the command line.

This package sits beside `f5lite.prepare` (it writes what `f5lite-prepare` reads) and calls only lower layers.
"""
