"""`Synthesizer`: text plus a reference clip in, speech out, with F5-TTS's inference pipeline.

For each chunk of the text: the reference transcript and the chunk are encoded together, the duration is the
reference's frames plus the chunk's length at the reference speaking rate (by the model's duration predictor when it
has one, else by bytes: `f5lite.infer.duration`; or a length the caller gives), `f5lite.sample` continues the
reference mel, the generated frames (after the reference) are vocoded, and the chunks are joined with a cross-fade. A quiet
reference is raised to RMS 0.1 first and the output lowered by the same factor. The sampler settings come in one
`SamplerOptions`, passed whole to `sample`; only `speed` is read here (chunk size and durations).

`from_pretrained` picks the inference path (`f5lite.infer.auto`: bf16 only with native bf16, compile where it pays,
threads) unless told, logs it in one line and keeps it as `Synthesizer.path`.
"""

from __future__ import annotations

import logging
import math
import os
from typing import Any

import torch
from torch import Tensor, nn
from tqdm import tqdm

from f5lite.audio import HOP_LENGTH, SAMPLE_RATE, Vocoder, load_audio, load_vocoder, log_mel, normalize_rms, restore_rms
from f5lite.audio.vocoder import DEFAULT_VOCOS_REPO, VOCODER_SPELLINGS, GriffinLimVocoder
from f5lite.infer.auto import DTYPE_AUTO, InferPath, apply_threads, choose_path
from f5lite.infer.chunking import MAX_SECONDS, chunk_text, max_chunk_bytes, prepare_ref_text
from f5lite.infer.crossfade import crossfade
from f5lite.infer.duration import DurationEstimator, resolve_duration
from f5lite.infer.loading import load_model, resolve_device
from f5lite.models import apply_inference_compile
from f5lite.models.dtypes import WEIGHT_DTYPES
from f5lite.sampling import SamplerOptions, fixed_duration, sample
from f5lite.sampling.options import merge_legacy_keywords, with_model_defaults
from f5lite.text import TextEncoder

FRAME_RATE = SAMPLE_RATE / HOP_LENGTH
"""Mel frames per second."""
DEFAULT_CROSS_FADE = 0.15
"""Seconds of cross-fade between chunks (F5-TTS's default)."""

logger = logging.getLogger(__name__)


class Synthesizer:
    """A loaded model, its text encoder and a vocoder, ready to speak.

    Args:
        backbone: the velocity network, in eval mode.
        encoder: the text encoder the backbone was trained with.
        vocoder: turns the model's mels into audio; its `mel_kind` must be the model's mel type.
        mel_type: the model's mel convention, `vocos` or `bigvgan`.
        duration: sizes each chunk's speech; None uses F5-TTS's byte-ratio rule.
        path: the inference path the backbone was loaded for (`from_pretrained` decides it); None describes the
            backbone as given (its device and dtype, eager, threads left alone).

    Attributes:
        path: the inference path in use (`path.describe()` is the line `f5lite-infer` prints); with `compile=auto`
            it changes to compiled at the first `synthesize` call that plans enough backbone calls.

    Raises:
        ValueError: the vocoder expects another mel type than the model's.
    """

    def __init__(
        self,
        backbone: nn.Module,
        encoder: TextEncoder,
        vocoder: Vocoder,
        mel_type: str = "vocos",
        duration: DurationEstimator | None = None,
        path: InferPath | None = None,
    ) -> None:
        if vocoder.mel_kind != mel_type:
            raise ValueError(f"the model makes {mel_type!r} mels but the vocoder expects {vocoder.mel_kind!r} mels")
        self.backbone = backbone
        self.encoder = encoder
        self.vocoder = vocoder
        self.mel_type = mel_type
        self.duration = duration or DurationEstimator()
        self.path = path if path is not None else _given_path(backbone)

    @classmethod
    def from_pretrained(
        cls,
        path_or_dir: str | os.PathLike[str],
        vocoder: str | Vocoder = "vocos",
        *,
        vocoder_source: str | os.PathLike[str] | None = None,
        recipe: str | None = None,
        vocab: str | os.PathLike[str] | None = None,
        device: str | torch.device = "auto",
        dtype: str = DTYPE_AUTO,
        compile: bool | str = "auto",
        duration: str | os.PathLike[str] = "auto",
        threads: int | None = None,
    ) -> Synthesizer:
        """Load a model and a vocoder.

        Args:
            path_or_dir: an f5lite export directory, or an official F5-TTS `.safetensors` / `.pt` (then give
                `recipe` and `vocab`).
            vocoder: `vocos`, `griffin_lim` (also spelled `griffinlim`; no weights, metallic) or a `Vocoder`.
            vocoder_source: Vocos weights: a local directory (`config.yaml` + `pytorch_model.bin`) or a hub id;
                default `charactr/vocos-mel-24khz`. Only for `vocos`.
            recipe: architecture of a checkpoint file, e.g. `dit_base` (F5-TTS v1 Base), `unett_base` (E2-TTS).
            vocab: `vocab.txt` of a checkpoint file.
            device: `auto`, `cpu`, `cuda` or `cuda:N`.
            dtype: weights' dtype: `auto` (bf16 where the CPU or GPU computes bf16 natively, else fp32), `fp32`,
                `bf16` or `fp16` (the ODE state and the vocoder stay float32).
            compile: compile the backbone's blocks for inference (`apply_inference_compile`): the first call of
                each new length compiles for a while, later calls run faster. `auto` compiles at the first
                `synthesize` call planning at least `f5lite.infer.auto.COMPILE_MIN_CALLS` backbone calls (steps x
                chunks), where a C++ compiler is there for inductor; True / False always / never.
            duration: what sizes the speech: `auto` (the model's duration predictor when it has one, else the
                byte-ratio rule), `rule` (always the rule), or a predictor directory (a `duration.train=alone`
                run's export).
            threads: torch's intra-op threads on a CPU (set process-wide); None: the physical cores, unless
                `OMP_NUM_THREADS` is set.

        Returns:
            The synthesizer.

        Raises:
            ValueError: see `f5lite.infer.load_model`; an unknown vocoder, or a `vocoder_source` for Griffin-Lim; a
                predictor directory that is missing or broken; a bad `dtype`, `compile` or `threads`.
            OSError: the Vocos weights cannot be found or downloaded.
        """
        target = resolve_device(device)
        path = choose_path(target, dtype, compile, threads)
        apply_threads(path)
        loaded = load_model(path_or_dir, recipe=recipe, vocab=vocab, device=target, dtype=path.dtype)
        estimator = resolve_duration(duration, loaded.duration).to(target)
        if path.compile:
            apply_inference_compile(loaded.backbone)
        if not isinstance(vocoder, Vocoder):
            vocoder = _build_vocoder(vocoder, vocoder_source, loaded.mel_type, target)
        logger.info(path.describe())
        return cls(loaded.backbone, loaded.encoder, vocoder, loaded.mel_type, estimator, path)

    def synthesize(
        self,
        text: str,
        ref_audio: str | os.PathLike[str] | Tensor,
        ref_text: str,
        options: SamplerOptions | None = None,
        *,
        seed: int | None = None,
        cross_fade: float = DEFAULT_CROSS_FADE,
        progress: bool = False,
        seconds: float | None = None,
        **legacy: Any,
    ) -> tuple[Tensor, int]:
        """Speak `text` in the voice of the reference clip.

        Args:
            text: what to say; long text is cut into chunks at sentence ends.
            ref_audio: an audio file, or a 24 kHz mono waveform `[samples]`.
            ref_text: the transcript of the reference clip.
            options: the sampler settings, passed whole to `f5lite.sample` for every chunk; `options.speed` sets
                the chunk size and each chunk's duration. None means `SamplerOptions()`.
            seed: noise seed (the same for every chunk); None draws from the global RNG.
            cross_fade: seconds of cross-fade between chunks; 0 concatenates.
            progress: show a progress bar over the chunks (on stderr).
            seconds: seconds of speech to generate (the reference excluded), whatever the predictor or rule says;
                a long text's chunks share it in proportion to their estimated lengths. `options.speed` does not
                change it. None: estimated (see `self.duration`).
            **legacy: deprecated: the settings as keywords (`steps`, `method`, `schedule`, `sway_sampling_coef`,
                `cfg_strength`, `cfg_zero_init_steps`, `cfg_zero_star`, `speed`), applied over `options` with a
                `DeprecationWarning`.

        Returns:
            The waveform `[samples]` (float32, CPU) and its sample rate.

        Raises:
            ValueError: empty text or reference transcript, an unreadable or too long reference, a bad setting.
            TypeError: a keyword that is no sampler setting, or `options` that is not a `SamplerOptions`.
        """
        options = with_model_defaults(self.backbone, merge_legacy_keywords(options, legacy, "synthesize"))
        if not text.strip():
            raise ValueError("text is empty: there is nothing to say")
        ref_text = prepare_ref_text(ref_text)
        if cross_fade < 0:
            raise ValueError(f"cross_fade={cross_fade!r} is not valid; it must be >= 0")
        if seconds is not None and not (seconds > 0 and math.isfinite(seconds)):
            raise ValueError(f"seconds={seconds!r} is not valid; give the seconds of speech to generate, > 0")
        # A file over the window is refused on its header, before it is decoded.
        wave = (
            load_audio(ref_audio, max_seconds=MAX_SECONDS)
            if not isinstance(ref_audio, Tensor)
            else _check_wave(ref_audio)
        )
        wave, ref_rms = normalize_rms(wave)
        device = next(self.backbone.parameters()).device
        ref_mel = log_mel(wave.to(device)[None], kind=self.mel_type)
        chunks = chunk_text(text, max_chunk_bytes(ref_text, wave.shape[0] / SAMPLE_RATE, options.speed))
        ref_frames = ref_mel.shape[1]
        totals = [self.duration.total_frames(ref_frames, ref_text, chunk, options.speed) for chunk in chunks]
        if seconds is not None:
            totals = _share(ref_frames, totals, seconds)
        self._compile_if_it_pays(len(chunks) * options.backbone_calls)
        waves = []
        for chunk, total in tqdm(
            list(zip(chunks, totals, strict=True)), desc="f5lite", unit="chunk", disable=not progress
        ):
            ids = self.encoder.encode([ref_text + chunk]).ids.to(device)
            mel = sample(self.backbone, ref_mel, ids, total, options, seed=seed)
            waves.append(self.vocoder.decode(mel[:, ref_mel.shape[1] :])[0].float().cpu())
        joined = crossfade(waves, int(cross_fade * SAMPLE_RATE))
        return restore_rms(joined, ref_rms), SAMPLE_RATE

    def _compile_if_it_pays(self, calls: int) -> None:
        """`compile=auto`: compile the backbone once a call plans at least `path.compile_min_calls` backbone calls."""
        threshold = self.path.compile_min_calls
        if threshold is not None and calls >= threshold:
            apply_inference_compile(self.backbone)
            self.path = self.path.compiled()
            logger.info("%s (%d backbone calls planned)", self.path.describe(), calls)


def _given_path(backbone: nn.Module) -> InferPath:
    """The path of a backbone loaded by the caller: its device and dtype, eager, threads left alone."""
    param = next(backbone.parameters())
    dtype = next((name for name, value in WEIGHT_DTYPES.items() if value == param.dtype), str(param.dtype))
    return InferPath(str(param.device), dtype, False, None, None, ("given a loaded backbone",), "")


def _share(ref_frames: int, totals: list[int], seconds: float) -> list[int]:
    """Give each chunk its share of `seconds` of speech, in proportion to its estimated generated frames."""
    estimated = [total - ref_frames for total in totals]
    whole = sum(estimated)
    return [fixed_duration(ref_frames, seconds * part / whole, FRAME_RATE) for part in estimated]


def _build_vocoder(name: str, source: str | os.PathLike[str] | None, mel_type: str, device: torch.device) -> Vocoder:
    name = VOCODER_SPELLINGS.get(name, name)
    if name == "griffin_lim":
        if source is not None:
            raise ValueError("vocoder_path is for vocos; griffinlim has no weights")
        return GriffinLimVocoder(mel_kind=mel_type).to(device).eval()
    if mel_type != "vocos":
        raise ValueError(f"this model makes {mel_type!r} mels, which Vocos cannot decode: use vocoder=griffinlim")
    return load_vocoder(name, DEFAULT_VOCOS_REPO if source is None else source, device)


def _check_wave(wave: Tensor) -> Tensor:
    if wave.dim() != 1 or not wave.is_floating_point() or wave.numel() == 0:
        raise ValueError(
            f"ref_audio must be a float waveform [samples] at 24 kHz, got {wave.dtype} {tuple(wave.shape)}"
        )
    return wave.float().cpu()
