"""Speaker encoders for the `sim` metric, chosen by a backend spec (`MetricSettings.speaker`).

- "resemblyzer": Resemblyzer's GE2E encoder (256-d), whose weights ship in its wheel; offline, CPU or GPU.
- "wavlm:<dir or hub id>": a transformers `WavLMForXVector` (e.g. `microsoft/wavlm-base-plus-sv`).

F5-TTS reports SIM with WavLM-large + ECAPA-TDNN (a UniSpeech checkpoint, not in transformers' format), so neither
backend reproduces its numbers; compare models with the same backend. Similarity is the cosine of two embeddings.
"""

from __future__ import annotations

import functools
from typing import Protocol

import torch
import torch.nn.functional as F
from torch import Tensor

from f5lite.metrics.backend import ASR_RATE, EVAL_EXTRA, model_source, parse_spec, require, resample

SPEAKER_BACKENDS = ("resemblyzer", "wavlm")
_NEEDS_MODEL = ("wavlm",)
RESEMBLYZER_INSTALL = "pip install webrtcvad-wheels && pip install --no-deps resemblyzer==0.1.4"
"""Resemblyzer declares `webrtcvad`, whose only release is a source package that imports `pkg_resources` (gone
from recent setuptools); `webrtcvad-wheels` (in the eval extra) provides the same module as binary wheels."""


class SpeakerEncoder(Protocol):
    """A speaker embedding model."""

    def embed(self, audio: Tensor, sample_rate: int) -> Tensor:
        """The speaker embedding `[dim]` float32 of `audio` `[samples]` (any rate)."""
        ...


def cosine_similarity(a: Tensor, b: Tensor) -> float:
    """Cosine of two embeddings `[dim]`: 1 for the same direction, 0 for orthogonal ones."""
    return float(F.cosine_similarity(a.double(), b.double(), dim=0))


class ResemblyzerEncoder:
    """Resemblyzer's `VoiceEncoder`, with its own preprocessing (loudness to -30 dBFS, long silences trimmed)."""

    def __init__(self, device: str) -> None:
        resemblyzer = require("resemblyzer", RESEMBLYZER_INSTALL, "speaker backend 'resemblyzer'")
        self._preprocess = resemblyzer.preprocess_wav
        self._encoder = resemblyzer.VoiceEncoder(device=device, verbose=False)

    def embed(self, audio: Tensor, sample_rate: int) -> Tensor:
        """The L2-normalised 256-d embedding of `audio` `[samples]` (any rate)."""
        wave = resample(audio, sample_rate, ASR_RATE).numpy()
        trimmed = self._preprocess(wave)
        # The voice detector finds nothing in silence or noise (an untrained model's output): embed it untrimmed.
        embedding = self._encoder.embed_utterance(trimmed if trimmed.size else wave)
        return torch.from_numpy(embedding).float()


class WavLMEncoder:
    """A transformers `WavLMForXVector` and its feature extractor, from a local directory or a hub id."""

    def __init__(self, source: str, device: str) -> None:
        transformers = require("transformers", EVAL_EXTRA, "speaker backend 'wavlm'")
        self._extractor = transformers.AutoFeatureExtractor.from_pretrained(source)
        self._model = transformers.WavLMForXVector.from_pretrained(source).to(device).eval()

    @torch.no_grad()
    def embed(self, audio: Tensor, sample_rate: int) -> Tensor:
        """The x-vector `[xvector_output_dim]` of `audio` `[samples]` (any rate)."""
        wave = resample(audio, sample_rate, ASR_RATE).numpy()
        inputs = self._extractor(wave, sampling_rate=ASR_RATE, return_tensors="pt").to(self._model.device)
        return self._model(**inputs).embeddings[0].float().cpu()


@functools.cache
def load_speaker_encoder(spec: str, device: str = "cpu") -> SpeakerEncoder:
    """The speaker encoder a backend spec names, loaded once per process.

    Args:
        spec: "resemblyzer" or "wavlm:<dir or hub id>".
        device: torch device, e.g. "cpu" or "cuda".

    Raises:
        ValueError: unknown backend or a missing model directory.
        ImportError: the backend's package is not installed.
    """
    name, argument = parse_spec(spec, "speaker", SPEAKER_BACKENDS, _NEEDS_MODEL)
    if name == "resemblyzer":
        return ResemblyzerEncoder(device)
    return WavLMEncoder(model_source(argument, "speaker backend 'wavlm'"), device)
