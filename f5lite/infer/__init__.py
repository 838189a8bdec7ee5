"""Inference: f5lite's one way to speak, used by every tool (`f5lite-infer`, `f5lite-eval`, the trainer, the apps).

- `synthesizer`: `Synthesizer`, the model with its text encoder, vocoder and duration estimator; its four steps
  `reference`, `plan`, `generate` (a batch of pieces in one sampler call) and `stream`, and `synthesize`, the four
  in a row;
- `reference`: a reference clip made ready (loudness, mel, prepared transcript); `names`: the name rule of voices;
- `chunking`: text cut into pieces (sentence ends, clauses, words, characters; a short first piece for streams),
  the reference transcript's checks; `plan`: a text's pieces and their lengths in frames; `crossfade`: pieces
  joined, all at once or as they are made; `duration`: what sizes the speech;
- `loading`, `auto`: a model from an export or an F5-TTS checkpoint, and the path that suits the machine;
- `config`, `cli`: `f5lite-infer` and its schema.
"""

from f5lite.infer.chunking import chunk_text, max_chunk_bytes, prepare_ref_text
from f5lite.infer.crossfade import crossfade
from f5lite.infer.loading import LoadedModel, load_model, resolve_device
from f5lite.infer.synthesizer import Synthesizer

__all__ = [
    "LoadedModel",
    "Synthesizer",
    "chunk_text",
    "crossfade",
    "load_model",
    "max_chunk_bytes",
    "prepare_ref_text",
    "resolve_device",
]
