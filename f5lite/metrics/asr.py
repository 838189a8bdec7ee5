"""Speech recognisers for the `wer` metric, chosen by a backend spec (`MetricSettings.asr`).

- "pocketsphinx": CMU PocketSphinx with the US English model inside its wheel; offline, CPU. Its accuracy on
  synthetic or accented speech is poor, so use it for trends and comparisons between models, not absolute quality.
- "whisper:<dir or hub id>": Whisper through transformers (`openai/whisper-large-v3` is F5-TTS's English ASR).
- "faster-whisper:<dir or size>": Whisper through CTranslate2 (`large-v3` as in F5-TTS); `pip install faster-whisper`.
- "paraformer:<dir or name>": Paraformer-zh through FunASR (F5-TTS's Chinese ASR); `pip install funasr`.

Every recogniser takes `[samples]` audio at any rate (resampled to 16 kHz) and returns the raw transcript.
"""

from __future__ import annotations

import functools
from typing import Any, Protocol

import torch
from torch import Tensor

from f5lite.metrics.backend import ASR_RATE, EVAL_EXTRA, model_source, parse_spec, require, resample
from f5lite.metrics.textnorm import check_language

ASR_BACKENDS = ("pocketsphinx", "whisper", "faster-whisper", "paraformer")
_NEEDS_MODEL = ("whisper", "faster-whisper", "paraformer")
_WHISPER_MAX_SECONDS = 30
_BEAM_SIZE = 5  # F5-TTS's faster-whisper setting


class Recognizer(Protocol):
    """A speech recogniser."""

    def transcribe(self, audio: Tensor, sample_rate: int) -> str:
        """The text spoken in `audio` `[samples]` (any rate)."""
        ...


class PocketsphinxRecognizer:
    """PocketSphinx with the US English acoustic model, language model and dictionary shipped in its wheel."""

    def __init__(self) -> None:
        pocketsphinx = require("pocketsphinx", EVAL_EXTRA, "asr backend 'pocketsphinx'")
        self._decoder = pocketsphinx.Decoder(samprate=ASR_RATE, loglevel="FATAL")

    def transcribe(self, audio: Tensor, sample_rate: int) -> str:
        """The text spoken in `audio` `[samples]` (any rate), lowercase words."""
        wave = resample(audio, sample_rate, ASR_RATE)
        pcm = (wave.clamp(-1.0, 1.0) * 32767).round().to(torch.int16).numpy().tobytes()
        self._decoder.start_utt()
        self._decoder.process_raw(pcm, full_utt=True)
        self._decoder.end_utt()
        hypothesis = self._decoder.hyp()
        return hypothesis.hypstr if hypothesis is not None else ""


class WhisperRecognizer:
    """Whisper through transformers, from a local directory (`save_pretrained` layout) or a hub id.

    Clips up to 30 s (Whisper's window); beam search of 5 as in F5-TTS. Multilingual checkpoints are told the
    language; English-only ones (`*.en`) are not.
    """

    def __init__(self, source: str, language: str, device: str) -> None:
        transformers = require("transformers", EVAL_EXTRA, "asr backend 'whisper'")
        self._processor = transformers.WhisperProcessor.from_pretrained(source)
        self._model = transformers.WhisperForConditionalGeneration.from_pretrained(source).to(device).eval()
        self._options: dict[str, Any] = {"num_beams": _BEAM_SIZE}
        if getattr(self._model.generation_config, "is_multilingual", False):
            self._options.update(language=language, task="transcribe")

    @torch.no_grad()
    def transcribe(self, audio: Tensor, sample_rate: int) -> str:
        """The text spoken in `audio` `[samples]` (any rate, at most 30 s).

        Raises:
            ValueError: the clip is longer than 30 s.
        """
        wave = resample(audio, sample_rate, ASR_RATE)
        if wave.numel() > _WHISPER_MAX_SECONDS * ASR_RATE:
            seconds = wave.numel() / ASR_RATE
            raise ValueError(f"whisper scores clips up to {_WHISPER_MAX_SECONDS} s, got {seconds:.1f} s")
        features = self._processor(wave.numpy(), sampling_rate=ASR_RATE, return_tensors="pt").input_features
        features = features.to(self._model.device, self._model.dtype)
        ids = self._model.generate(features, **self._options)
        return str(self._processor.batch_decode(ids, skip_special_tokens=True)[0]).strip()


class FasterWhisperRecognizer:
    """Whisper through faster-whisper (CTranslate2): a converted model directory or a size such as "large-v3"."""

    def __init__(self, source: str, language: str, device: str) -> None:
        faster_whisper = require("faster_whisper", "pip install faster-whisper", "asr backend 'faster-whisper'")
        kind, _, index = device.partition(":")
        compute_type = "float16" if kind == "cuda" else "default"
        self._model = faster_whisper.WhisperModel(
            source, device=kind, device_index=int(index or 0), compute_type=compute_type
        )
        self._language = language

    def transcribe(self, audio: Tensor, sample_rate: int) -> str:
        """The text spoken in `audio` `[samples]` (any rate)."""
        wave = resample(audio, sample_rate, ASR_RATE).numpy()
        segments, _ = self._model.transcribe(wave, language=self._language, beam_size=_BEAM_SIZE)
        return " ".join(segment.text.strip() for segment in segments)


class ParaformerRecognizer:
    """Paraformer through FunASR: a model directory, or a FunASR model name such as "paraformer-zh"."""

    def __init__(self, source: str, device: str) -> None:
        funasr = require("funasr", "pip install funasr", "asr backend 'paraformer'")
        self._model = funasr.AutoModel(model=source, device=device, disable_update=True, disable_pbar=True)

    def transcribe(self, audio: Tensor, sample_rate: int) -> str:
        """The text spoken in `audio` `[samples]` (any rate)."""
        wave = resample(audio, sample_rate, ASR_RATE).numpy()
        results = self._model.generate(input=wave)
        return str(results[0]["text"]) if results else ""


@functools.cache
def load_recognizer(spec: str, language: str = "en", device: str = "cpu") -> Recognizer:
    """The recogniser a backend spec names, loaded once per process.

    Args:
        spec: "pocketsphinx", "whisper:<dir or hub id>", "faster-whisper:<dir or size>" or "paraformer:<dir or name>".
        language: "en" or "zh" (pocketsphinx has only English).
        device: torch device for the model backends, e.g. "cpu" or "cuda".

    Raises:
        ValueError: unknown backend or language, a missing model directory, or pocketsphinx asked for Chinese.
        ImportError: the backend's package is not installed.
    """
    check_language(language)
    name, argument = parse_spec(spec, "asr", ASR_BACKENDS, _NEEDS_MODEL)
    if name == "pocketsphinx":
        if language != "en":
            raise ValueError("asr backend 'pocketsphinx' has only an English model; for zh use 'paraformer:<dir>'")
        return PocketsphinxRecognizer()
    source = model_source(argument, f"asr backend {name!r}")
    if name == "whisper":
        return WhisperRecognizer(source, language, device)
    if name == "faster-whisper":
        return FasterWhisperRecognizer(source, language, device)
    return ParaformerRecognizer(source, device)
