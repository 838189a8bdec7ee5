"""Speech recognisers for the `wer` metric, chosen by a backend spec (`MetricSettings.asr`).

- "pocketsphinx": CMU PocketSphinx with the US English model inside its wheel; offline, CPU. Its accuracy on
  synthetic or accented speech is poor, so use it for trends and comparisons between models, not absolute quality.
- "pocketsphinx:<dir>": the same acoustic model with the language model and dictionary of a recogniser vocabulary
  directory (`lm.arpa`, `words.dict`: see `f5lite.metrics.langmodel`), built from a corpus's training sentences;
  on such a corpus's held-out sentences it hears most words of clean speech.
- "whisper:<dir or hub id>": Whisper through transformers (`openai/whisper-large-v3` is F5-TTS's English ASR).
- "faster-whisper:<dir or size>": Whisper through CTranslate2 (`large-v3` as in F5-TTS); `pip install faster-whisper`.
- "paraformer:<dir or name>": Paraformer-zh through FunASR (F5-TTS's Chinese ASR); `pip install funasr`.

Every recogniser takes `[samples]` audio at any rate (resampled to 16 kHz) and returns the raw transcript
(`transcribe`), or, for a batch of clips, each transcript with a confidence in [0, 1] where the backend gives one
(`hear`): PocketSphinx's mean word posterior, Whisper's length-normalised sequence probability, faster-whisper's
mean token probability; Paraformer through FunASR gives none. Whisper through transformers decodes a batch in one
`generate` call; the others decode clip by clip.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import Tensor

from f5lite.metrics.backend import ASR_RATE, EVAL_EXTRA, model_source, parse_spec, require, resample
from f5lite.metrics.langmodel import vocabulary_files
from f5lite.metrics.textnorm import check_language

ASR_BACKENDS = ("pocketsphinx", "whisper", "faster-whisper", "paraformer")
_NEEDS_MODEL = ("whisper", "faster-whisper", "paraformer")
_MAY_TAKE = ("pocketsphinx",)  # a recogniser vocabulary directory
_WHISPER_MAX_SECONDS = 30
_BEAM_SIZE = 5  # F5-TTS's faster-whisper setting


@dataclass(frozen=True)
class Heard:
    """What a recogniser heard in one clip.

    Attributes:
        text: the raw transcript.
        confidence: in [0, 1], or None where the backend gives none.
    """

    text: str
    confidence: float | None = None


class Recognizer(Protocol):
    """A speech recogniser."""

    def transcribe(self, audio: Tensor, sample_rate: int) -> str:
        """The text spoken in `audio` `[samples]` (any rate)."""
        ...

    def hear(self, clips: Sequence[Tensor], sample_rate: int) -> list[Heard]:
        """What is spoken in each clip `[samples]` (all at `sample_rate`), with a confidence where there is one."""
        ...


class _ClipByClip:
    """`transcribe` and a `hear` that decodes one clip at a time, for backends without batched decoding."""

    def hear_one(self, audio: Tensor, sample_rate: int) -> Heard:
        raise NotImplementedError

    def transcribe(self, audio: Tensor, sample_rate: int) -> str:
        """The text spoken in `audio` `[samples]` (any rate)."""
        return self.hear_one(audio, sample_rate).text

    def hear(self, clips: Sequence[Tensor], sample_rate: int) -> list[Heard]:
        """What is spoken in each clip `[samples]` (all at `sample_rate`), with the backend's confidence."""
        return [self.hear_one(clip, sample_rate) for clip in clips]


class PocketsphinxRecognizer(_ClipByClip):
    """PocketSphinx with the US English acoustic model shipped in its wheel.

    Its language model and dictionary are the shipped ones, or those of a recogniser vocabulary directory
    (`vocabulary`: `lm.arpa`, `words.dict`).

    Raises:
        ValueError: `vocabulary` is not a directory holding both files.
        ImportError: pocketsphinx is not installed.
    """

    def __init__(self, vocabulary: str | None = None) -> None:
        pocketsphinx = require("pocketsphinx", EVAL_EXTRA, "asr backend 'pocketsphinx'")
        files: dict[str, str] = {}
        if vocabulary:
            lm, dictionary = vocabulary_files(vocabulary, "asr backend 'pocketsphinx'")
            files = {"lm": str(lm), "dict": str(dictionary)}
        try:
            self._decoder = pocketsphinx.Decoder(samprate=ASR_RATE, loglevel="FATAL", **files)
        except RuntimeError as error:  # a malformed lm.arpa or words.dict
            raise ValueError(f"asr backend 'pocketsphinx' cannot load {vocabulary}: {error}") from error

    def hear_one(self, audio: Tensor, sample_rate: int) -> Heard:
        """Lowercase words of `audio` `[samples]` (any rate); confidence: the mean posterior of its words."""
        wave = resample(audio, sample_rate, ASR_RATE)
        pcm = (wave.clamp(-1.0, 1.0) * 32767).round().to(torch.int16).numpy().tobytes()
        # The feature front end adapts from clip to clip (cepstral mean, noise estimate): reset, a clip's transcript
        # is its own, whatever was decoded before it, as from a new decoder (and costs nothing measurable).
        self._decoder.reinit_feat()
        self._decoder.start_utt()
        self._decoder.process_raw(pcm, full_utt=True)
        self._decoder.end_utt()
        hypothesis = self._decoder.hyp()
        if hypothesis is None:
            return Heard("", None)
        # Word posteriors of the best path; silences and fillers (<s>, <sil>, [noise], ...) are not words.
        posteriors = [seg.prob for seg in self._decoder.seg() if not seg.word.startswith(("<", "[", "+"))]
        confidence = sum(posteriors) / len(posteriors) if posteriors else None
        return Heard(hypothesis.hypstr, confidence)


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

    def transcribe(self, audio: Tensor, sample_rate: int) -> str:
        """The text spoken in `audio` `[samples]` (any rate, at most 30 s).

        Raises:
            ValueError: the clip is longer than 30 s.
        """
        return self.hear([audio], sample_rate)[0].text

    @torch.no_grad()
    def hear(self, clips: Sequence[Tensor], sample_rate: int) -> list[Heard]:
        """Each clip `[samples]` (at most 30 s) decoded in one batch; confidence: the sequence's probability.

        Raises:
            ValueError: a clip is longer than 30 s.
        """
        if not clips:
            return []
        waves = [resample(clip, sample_rate, ASR_RATE) for clip in clips]
        for wave in waves:
            if wave.numel() > _WHISPER_MAX_SECONDS * ASR_RATE:
                seconds = wave.numel() / ASR_RATE
                raise ValueError(f"whisper scores clips up to {_WHISPER_MAX_SECONDS} s, got {seconds:.1f} s")
        inputs = [wave.numpy() for wave in waves]
        features = self._processor(inputs, sampling_rate=ASR_RATE, return_tensors="pt").input_features
        features = features.to(self._model.device, self._model.dtype)
        out = self._model.generate(features, return_dict_in_generate=True, output_scores=True, **self._options)
        texts = self._processor.batch_decode(out.sequences, skip_special_tokens=True)
        # Beam search gives each sequence's length-normalised log probability: its exp is a per-token probability.
        scores = getattr(out, "sequences_scores", None)
        confidences: list[float | None] = (
            [math.exp(float(score)) for score in scores] if scores is not None else [None] * len(texts)
        )
        return [Heard(str(text).strip(), conf) for text, conf in zip(texts, confidences, strict=True)]


class FasterWhisperRecognizer(_ClipByClip):
    """Whisper through faster-whisper (CTranslate2): a converted model directory or a size such as "large-v3"."""

    def __init__(self, source: str, language: str, device: str) -> None:
        faster_whisper = require("faster_whisper", "pip install faster-whisper", "asr backend 'faster-whisper'")
        kind, _, index = device.partition(":")
        compute_type = "float16" if kind == "cuda" else "default"
        self._model = faster_whisper.WhisperModel(
            source, device=kind, device_index=int(index or 0), compute_type=compute_type
        )
        self._language = language

    def hear_one(self, audio: Tensor, sample_rate: int) -> Heard:
        """The text of `audio` `[samples]` (any rate); confidence: exp of the segments' mean token log-prob."""
        wave = resample(audio, sample_rate, ASR_RATE).numpy()
        segments = list(self._model.transcribe(wave, language=self._language, beam_size=_BEAM_SIZE)[0])
        text = " ".join(segment.text.strip() for segment in segments)
        if not segments:
            return Heard(text, None)
        # Weighted by each segment's length, so a short trailing segment does not count as much as a long one.
        weights = [max(segment.end - segment.start, 1e-3) for segment in segments]
        mean = sum(w * segment.avg_logprob for w, segment in zip(weights, segments, strict=True)) / sum(weights)
        return Heard(text, math.exp(mean))


class ParaformerRecognizer(_ClipByClip):
    """Paraformer through FunASR: a model directory, or a FunASR model name such as "paraformer-zh"."""

    def __init__(self, source: str, device: str) -> None:
        funasr = require("funasr", "pip install funasr", "asr backend 'paraformer'")
        self._model = funasr.AutoModel(model=source, device=device, disable_update=True, disable_pbar=True)

    def hear_one(self, audio: Tensor, sample_rate: int) -> Heard:
        """The text of `audio` `[samples]` (any rate); FunASR gives no confidence."""
        wave = resample(audio, sample_rate, ASR_RATE).numpy()
        results = self._model.generate(input=wave)
        return Heard(str(results[0]["text"]) if results else "", None)


@functools.cache
def load_recognizer(spec: str, language: str = "en", device: str = "cpu") -> Recognizer:
    """The recogniser a backend spec names, loaded once per process.

    Args:
        spec: "pocketsphinx[:<vocabulary dir>]", "whisper:<dir or hub id>", "faster-whisper:<dir or size>" or "paraformer:<dir or name>".
        language: "en" or "zh" (pocketsphinx has only English).
        device: torch device for the model backends, e.g. "cpu" or "cuda".

    Raises:
        ValueError: unknown backend or language, a missing model directory, or pocketsphinx asked for Chinese.
        ImportError: the backend's package is not installed.
    """
    check_language(language)
    name, argument = parse_spec(spec, "asr", ASR_BACKENDS, _NEEDS_MODEL, _MAY_TAKE)
    if name == "pocketsphinx":
        if language != "en":
            raise ValueError("asr backend 'pocketsphinx' has only an English model; for zh use 'paraformer:<dir>'")
        return PocketsphinxRecognizer(argument or None)
    source = model_source(argument, f"asr backend {name!r}")
    if name == "whisper":
        return WhisperRecognizer(source, language, device)
    if name == "faster-whisper":
        return FasterWhisperRecognizer(source, language, device)
    return ParaformerRecognizer(source, device)
