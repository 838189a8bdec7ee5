"""How long to speak: a trained duration predictor when the model has one, else F5-TTS's byte-ratio rule.

`DurationEstimator` gives the total frames (reference plus generated) of one chunk. With a predictor it is
`f5lite.sampling.predicted_duration` on the predictor's log-frames of the reference transcript and of the chunk;
without one, `f5lite.sampling.estimate_duration`. `speed` scales the generated part either way.

`resolve_duration` turns the `duration` setting of `f5lite-infer` / `f5lite-eval` / `Synthesizer.from_pretrained`
into a predictor: `auto` takes the model's own (an export's `duration.safetensors`, a run's checkpoints), `rule`
none, any other value is a directory holding a predictor (the export of an `objective=duration` run).
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from f5lite.sampling import estimate_duration, predicted_duration
from f5lite.storage.duration_files import LoadedDuration, load_duration


class DurationEstimator:
    """Total frames for a chunk of text, by a predictor or by the byte-ratio rule.

    Args:
        loaded: a predictor with its encoder; None uses the byte-ratio rule.
    """

    def __init__(self, loaded: LoadedDuration | None = None) -> None:
        self.loaded = loaded

    @property
    def name(self) -> str:
        """`predictor` or `rule`: what sizes the speech."""
        return "rule" if self.loaded is None else "predictor"

    def to(self, device: torch.device) -> DurationEstimator:
        """Move the predictor (if any) to `device`; returns self."""
        if self.loaded is not None:
            self.loaded.predictor.to(device)
        return self

    def log_frames(self, texts: list[str]) -> list[float]:
        """The predictor's log mel frames of each text.

        Raises:
            ValueError: there is no predictor, or a text has no token.
        """
        if self.loaded is None:
            raise ValueError("no duration predictor is loaded")
        if any(not text for text in texts):
            raise ValueError("the duration predictor cannot estimate an empty text")
        predictor = self.loaded.predictor
        device = next(predictor.parameters()).device
        with torch.inference_mode():
            ids = self.loaded.encoder.encode(texts).ids.to(device)
            return [float(v) for v in predictor(ids).cpu()]

    def total_frames(self, ref_frames: int, ref_text: str, gen_text: str, speed: float = 1.0) -> int:
        """Frames of the reference plus the generated speech for `gen_text`.

        Args:
            ref_frames: mel frames of the reference audio.
            ref_text: its transcript, as fed to the model.
            gen_text: the text to generate.
            speed: speaking speed factor; 2.0 gives half as many generated frames.

        Raises:
            ValueError: see `estimate_duration` and `predicted_duration`.
        """
        if self.loaded is None:
            return estimate_duration(ref_frames, ref_text, gen_text, speed)
        # Stripped: the predictor learned from transcripts, not from the sentence-ended reference the model is fed.
        ref_log, gen_log = self.log_frames([ref_text.strip(), gen_text.strip()])
        return predicted_duration(ref_frames, ref_log, gen_log, speed)


def resolve_duration(setting: str | os.PathLike[str], own: LoadedDuration | None) -> DurationEstimator:
    """The estimator a `duration` setting asks for.

    Args:
        setting: `auto` (the model's own predictor, else the rule), `rule`, or a predictor directory (it reads text
            with its own tokenizer and `vocab.txt`, so it works with any model).
        own: the predictor that came with the model, if any.

    Returns:
        The estimator.

    Raises:
        ValueError: a predictor directory that is missing or broken (one line).
    """
    if setting == "auto":
        return DurationEstimator(own)
    if setting == "rule":
        return DurationEstimator(None)
    return DurationEstimator(load_duration(Path(setting)))
