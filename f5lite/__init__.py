"""f5lite: a framework for training flow-matching text-to-speech models in the F5-TTS / E2-TTS family.

The top level holds the small public API; the subpackages hold the rest, in layers from the bottom up (each imports
only from the layers below it; `tests/project/test_layering.py` checks it):

1. the foundation modules (`atomic`, `credentials`, `paths`, `versioned`, `version`);
2. `f5lite.text` (vocab, tokenizers, ids), `f5lite.audio` (audio I/O, log-mels, vocoders) and `f5lite.sampling`
   (`SamplerOptions`, the backbone contract, time grids, guidance, ODE loops, `sample`);
3. `f5lite.models` (backbones, official checkpoint files, activation checkpointing and compile, the CFM objective)
   and `f5lite.metrics` (speech metrics);
4. `f5lite.config` (the training schema, Hydra composition, recipes, the `sample.*` keys of every tool);
5. `f5lite.data` (what training reads) and `f5lite.storage` (run directories, checkpoints, exports, LoRA adapters,
   and what is at a path);
6. `f5lite.prepare` (`f5lite-prepare`) and `f5lite.transcribe` (`f5lite-transcribe`: raw recordings to a dataset);
7. `f5lite.infer` (`Synthesizer`, f5lite's one way to speak, and `f5lite-infer`);
8. `f5lite.eval` (`f5lite-eval`);
9. `f5lite.train` (the trainer, `f5lite-export`);
10. the apps, side by side (neither imports the other; both speak through `f5lite.infer`): `f5lite.serve`
    (`f5lite-serve`, the OpenAI-compatible speech server) and `f5lite.studio` (`f5lite-studio`, the web app from raw
    recordings to a served voice).
"""

from f5lite.audio import load_audio, load_vocoder, log_mel, save_audio
from f5lite.config import TrainConfig, compose_config
from f5lite.infer import Synthesizer
from f5lite.models import (
    apply_ac,
    apply_compile,
    apply_dropout,
    apply_inference_compile,
    build_backbone,
    load_f5tts_state_dict,
)
from f5lite.models.cfm import flow_loss
from f5lite.sampling import SamplerOptions, sample
from f5lite.storage.pretrained import load_pretrained, save_pretrained
from f5lite.text import EncodedText, TextEncoder, Vocab, load_vocab, write_vocab
from f5lite.version import __version__

__all__ = [
    "EncodedText",
    "SamplerOptions",
    "Synthesizer",
    "TextEncoder",
    "TrainConfig",
    "Vocab",
    "__version__",
    "apply_ac",
    "apply_compile",
    "apply_dropout",
    "apply_inference_compile",
    "build_backbone",
    "compose_config",
    "flow_loss",
    "load_audio",
    "load_f5tts_state_dict",
    "load_pretrained",
    "load_vocab",
    "load_vocoder",
    "log_mel",
    "sample",
    "save_audio",
    "save_pretrained",
    "write_vocab",
]
