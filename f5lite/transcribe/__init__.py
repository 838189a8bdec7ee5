"""From raw recordings to a training set (`f5lite-transcribe`, under construction: issue [transcribe]).

- `vad`: speech probabilities of a recording of any length, read in blocks, from Silero VAD (its wheel carries the
  model, so it runs offline; the `transcribe` extra).
- `slicing`: where to cut a recording into utterance clips, from those probabilities: in pauses, never inside speech.
- `filters`: which transcribed clips are kept, and the reason for each one left out.

This package sits beside `f5lite.prepare` (it writes what `f5lite-prepare` reads) and calls only lower layers.
"""
