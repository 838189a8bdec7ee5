"""Typed schema of `f5lite-infer`: every default lives here, `configs/infer.yaml` only composes.

The sampler section is the training config's `SampleConfig`, so `sample.steps=7 sample.cfg_zero_star=true` means
the same in both. Each field is validated in `__post_init__` with a one-line `ValueError` naming the key.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from f5lite.config.checks import check_at_least, check_choice
from f5lite.config.sample import SampleConfig
from f5lite.infer.auto import DTYPE_AUTO, check_compile_setting
from f5lite.models.dtypes import WEIGHT_DTYPES

DURATION_MODES = ("auto", "rule")
"""Named values of `duration`; any other value is a duration predictor directory."""
DEVICE_PATTERN = re.compile(r"auto|cpu|cuda(:\d+)?")
"""Accepted device names: `auto` picks `cuda` when available, else `cpu`."""
EMPTY_REF_TEXT = (
    "ref_text is empty: give the transcript of the reference audio (automatic transcription needs an ASR model, "
    "which f5lite does not ship)"
)


def check_duration_setting(value: str) -> None:
    """`duration` is `auto`, `rule`, or an existing directory.

    Raises:
        ValueError: none of them (one line naming the key).
    """
    if value not in DURATION_MODES and not Path(value).is_dir():
        raise ValueError(
            f"duration={value!r} is not valid: give auto, rule, or a duration predictor directory (that one does not "
            "exist)"
        )


@dataclass
class ModelSource:
    """The model a tool speaks with, and where it runs.

    `model=`, `device=`, `dtype=`, ... are spelled the same in every tool that loads a model (`f5lite-infer`,
    `f5lite-serve`).
    """

    model: str | None = None
    """An f5lite export directory, or an official F5-TTS `.safetensors` / `.pt` (then also `recipe` and `vocab`)."""
    recipe: str | None = None
    """For a checkpoint file: the recipe with its architecture, e.g. `dit_base` (F5-TTS v1 Base), `unett_base`."""
    vocab: str | None = None
    """For a checkpoint file: the `vocab.txt` released with it."""
    device: str = "auto"
    """`auto` (cuda when available), `cpu`, `cuda` or `cuda:N`."""
    dtype: str = DTYPE_AUTO
    """Dtype of the model weights: `auto` (bf16 where the CPU or GPU computes bf16 natively: AVX-512 BF16, AMX, ARM
    BF16, a bf16 GPU; else fp32), `fp32`, `bf16` or `fp16`. The ODE state and the vocoder stay float32."""
    compile: str = "auto"
    """Compile the backbone's blocks for inference (weights frozen into the graph): `true`, `false`, or `auto`:
    compile when the text plans at least `f5lite.infer.auto.COMPILE_MIN_CALLS` backbone calls (steps x chunks) and
    a C++ compiler is there. The first chunk of each new length waits for compilation, later ones run faster."""
    threads: int | None = None
    """Torch's intra-op threads on a CPU; unset: the physical cores, unless `OMP_NUM_THREADS` is set."""
    duration: str = "auto"
    """What sizes the speech: `auto` (the model's duration predictor when its export or run has one, else F5-TTS's
    byte-ratio rule), `rule` (always the rule), or a predictor directory (the export of an `objective=duration`
    run, e.g. `runs/duration_small/export`)."""

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("model is not set: give model=PATH")
        if not DEVICE_PATTERN.fullmatch(self.device):
            raise ValueError(f"device={self.device!r} is not valid; use auto, cpu, cuda or cuda:N")
        check_choice("dtype", self.dtype, (DTYPE_AUTO, *WEIGHT_DTYPES))
        self.compile = check_compile_setting(self.compile)
        check_at_least("threads", self.threads, 1, allow_none=True)
        check_duration_setting(self.duration)

    def load_options(self) -> dict[str, Any]:
        """The keywords of `Synthesizer.from_pretrained` these settings give, besides the model and the vocoder."""
        keys = ("recipe", "vocab", "device", "dtype", "compile", "duration", "threads")
        return {key: getattr(self, key) for key in keys}


@dataclass
class InferConfig(ModelSource):
    """One `f5lite-infer` run: which model, which voice, what to say, where to write it."""

    ref_audio: str | None = None
    """Reference clip whose voice is used (any format libsndfile reads; 5 to 12 s works best)."""
    ref_text: str = ""
    """Transcript of the reference clip (required: f5lite ships no speech recognizer)."""
    text: str | None = None
    """Text to speak. Give this or `text_file`."""
    text_file: str | None = None
    """UTF-8 file holding the text to speak."""
    output: str = "output.wav"
    """Where to write the audio (the extension picks the format)."""
    cross_fade: float = 0.15
    """Seconds of linear cross-fade between chunks of a long text; 0 concatenates."""
    seconds: float | None = None
    """Seconds of speech to generate (the reference excluded), instead of an estimate; `sample.speed` then has no
    effect on the length. A long text's chunks share it in proportion to their estimated lengths."""
    sample: SampleConfig = field(default_factory=SampleConfig)
    """Sampler settings, as in training (`sample.seed`, `sample.vocoder`, `sample.vocoder_source` among them)."""

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("model is not set: give model=PATH (f5lite-infer --help shows an example)")
        if not self.ref_audio:
            raise ValueError("ref_audio is not set: give ref_audio=PATH (f5lite-infer --help shows an example)")
        if not self.ref_text.strip():
            raise ValueError(EMPTY_REF_TEXT)
        if (self.text is None) == (self.text_file is None):
            raise ValueError("give exactly one of text=STR and text_file=PATH")
        if self.text is not None and not self.text.strip():
            raise ValueError("text is empty: there is nothing to say")
        check_at_least("cross_fade", self.cross_fade, 0.0)
        super().__post_init__()
        if self.seconds is not None and not (self.seconds > 0 and math.isfinite(self.seconds)):
            raise ValueError(f"seconds={self.seconds!r} is not valid; give the seconds of speech to generate, > 0")
