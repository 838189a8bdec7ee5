"""`Synthesizer`: text plus a reference clip in, speech out, with F5-TTS's inference pipeline: f5lite's one way to speak.

Four steps, each a method, which every tool uses: `reference` (the clip made loud enough, its mel and its prepared
transcript: `f5lite.infer.reference`), `plan` (the text cut into pieces, each sized in frames: `f5lite.infer.plan`),
`generate` (one `f5lite.sample` call for a batch of pieces, each continuing its reference's mel; the generated frames
vocoded and brought back to the reference's loudness) and `stream` (pieces made one by one and handed out as they
come, joined with F5-TTS's cross-fade: `f5lite.infer.crossfade.StreamJoin`). `synthesize` is the four in a row
(`f5lite-infer`, `f5lite-eval`, the trainer's prompts); `f5lite-serve`'s engine batches `generate` over requests,
the studio's Speak streams. The sampler settings come in one `SamplerOptions`, passed whole to `sample`; only
`speed` is read here (piece size and lengths).

`from_pretrained` picks the inference path (`f5lite.infer.auto`: bf16 only with native bf16, compile where it pays,
threads) unless told, logs it in one line and keeps it as `Synthesizer.path`.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterator, Sequence

import torch
from torch import Tensor, nn
from tqdm import tqdm

from f5lite.audio import SAMPLE_RATE, Vocoder, load_audio, load_vocoder, restore_rms, samples_for_frames
from f5lite.audio.vocoder import DEFAULT_VOCOS_REPO, GriffinLimVocoder, refuse_removed_vocoder_name
from f5lite.infer.auto import DTYPE_AUTO, InferPath, apply_threads, choose_path
from f5lite.infer.chunking import MAX_SECONDS, max_chunk_bytes, split_text
from f5lite.infer.config import EMPTY_REF_TEXT
from f5lite.infer.crossfade import StreamJoin
from f5lite.infer.duration import DurationEstimator, resolve_duration
from f5lite.infer.loading import load_model, resolve_device
from f5lite.infer.plan import (
    DEFAULT_CROSS_FADE,
    FRAME_RATE,
    WINDOW_FRAMES,
    Piece,
    Plan,
    cross_fade_samples,
    fit_to_window,
)
from f5lite.infer.reference import Reference, make_reference
from f5lite.models import apply_inference_compile
from f5lite.models.dtypes import WEIGHT_DTYPES
from f5lite.sampling import SamplerOptions, fixed_duration, sample
from f5lite.sampling.options import backbone_calls
from f5lite.text import TextEncoder

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
            it changes to compiled at the first `stream` (or `synthesize`) call that plans enough backbone calls.

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
            vocoder: `vocos`, `griffin_lim` (no weights, metallic) or a `Vocoder`.
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
                byte-ratio rule), `rule` (always the rule), or a predictor directory (an `objective=duration`
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

    @property
    def device(self) -> torch.device:
        """Where the model is."""
        return next(self.backbone.parameters()).device

    def reference(self, audio: str | os.PathLike[str] | Tensor, text: str) -> Reference:
        """A reference voice from a clip and its transcript (see `f5lite.infer.reference`).

        Args:
            audio: an audio file (refused on its header when longer than `MAX_SECONDS`), or a 24 kHz mono
                waveform `[samples]`.
            text: its transcript.

        Raises:
            ValueError: an unreadable or too long clip, an empty transcript or one too long for the clip (in
                characters, spaces included, or in this model's tokens).
        """
        if not text.strip():
            raise ValueError(EMPTY_REF_TEXT)
        wave = load_audio(audio, max_seconds=MAX_SECONDS) if not isinstance(audio, Tensor) else _check_wave(audio)
        return make_reference(wave, text, self.mel_type, self.device, self.encoder.length)

    def plan(
        self,
        reference: Reference,
        text: str,
        speed: float = 1.0,
        *,
        first_bytes: int | None = None,
        seconds: float | None = None,
        max_frames: int | None = None,
    ) -> Plan:
        """Cut a text into pieces and size each one (see `f5lite.infer.plan`).

        Args:
            reference: the voice.
            text: what to say.
            speed: speaking speed factor (sets the piece size and each piece's length).
            first_bytes: cut the first piece to this many UTF-8 bytes (a stream's first audio comes sooner).
            seconds: seconds of speech in all (the reference excluded), shared by the pieces in proportion to their
                estimated lengths; None: estimated (see `self.duration`).
            max_frames: the most frames of a piece, the reference's included (a server's window); None: the model's
                window (`WINDOW_FRAMES`), which a length given in `seconds` may exceed.

        Returns:
            The plan: no piece below the model's lower bound, none over `max_frames`.

        Raises:
            ValueError: blank text, or a reference that leaves no room to speak (see `max_chunk_bytes` and
                `fit_to_window`).
        """
        window = WINDOW_FRAMES if max_frames is None else max_frames
        texts = split_text(text, max_chunk_bytes(reference.text, reference.seconds, speed), first_bytes)
        if not texts:
            raise ValueError("text is empty: there is nothing to say")
        fitted = fit_to_window(texts, reference, window, self.encoder.length)
        ref = reference.mel.shape[0]
        totals = [self.duration.total_frames(ref, reference.text, piece.text, speed) for piece in fitted]
        if seconds is not None:
            totals = _share(ref, totals, seconds)
        # The lower bound first, then the window: fitting left every lower bound within it. A length the caller
        # fixed in `seconds` may exceed the model's window, not a window the caller set.
        frames = [max(total, piece.lower) for total, piece in zip(totals, fitted, strict=True)]
        if seconds is None or max_frames is not None:
            frames = [min(total, window) for total in frames]
        return Plan(
            tuple(
                Piece(reference, piece.text, total, samples_for_frames(total - ref, self.mel_type))
                for piece, total in zip(fitted, frames, strict=True)
            )
        )

    def generate(
        self, pieces: Sequence[Piece], options: SamplerOptions, *, seed: int | None = None, noise: Tensor | None = None
    ) -> list[Tensor]:
        """Make several pieces in one sampler call (each with its own reference, text and length).

        Args:
            pieces: what to make (a batch).
            options: the sampler settings (`options.speed` is not used: it is in the pieces' frames).
            seed: noise seed, the same for every piece (F5-TTS's rule); None draws from the global RNG.
            noise: the sampler's start `[b, N, d]` instead (`f5lite.sample`'s `noise`; the duration RL draws its own).

        Returns:
            Each piece's waveform `[piece.samples]` (float32, CPU), at its reference's loudness.

        Raises:
            ValueError: no pieces.
        """
        cond, ids, durations, lens = self.inputs(pieces)
        mel = sample(self.backbone, cond, ids, durations, options, lens=lens, noise=noise, seed=seed)
        return self.decode(mel, pieces)

    def inputs(self, pieces: Sequence[Piece]) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """The sampler's inputs for a batch of pieces (what `generate` samples from).

        Args:
            pieces: what to make (a batch).

        Returns:
            `cond` `[b, n_ref, d]` (each reference's mel, zero-padded), `ids` `[b, nt]` (reference text + the
            piece's text), `durations` `[b]` (frames, the reference's included) and `lens` `[b]` (reference frames),
            on the model's device.

        Raises:
            ValueError: no pieces.
        """
        if not pieces:
            raise ValueError("no pieces to generate")
        device = self.device
        lens = torch.tensor([piece.reference.mel.shape[0] for piece in pieces], device=device)
        mel_dim = pieces[0].reference.mel.shape[1]
        cond = torch.zeros(len(pieces), int(lens.max()), mel_dim, device=device)
        for i, piece in enumerate(pieces):
            cond[i, : piece.reference.mel.shape[0]] = piece.reference.mel.to(device)
        ids = self.encoder.encode([piece.reference.text + piece.text for piece in pieces]).ids.to(device)
        durations = torch.tensor([piece.frames for piece in pieces], device=device)
        return cond, ids, durations, lens

    def decode(self, mel: Tensor, pieces: Sequence[Piece]) -> list[Tensor]:
        """Each piece's generated frames as a waveform, at its reference's loudness.

        Args:
            mel: `[b, N, d]` the sampler's output for `pieces` (reference frames first).
            pieces: what was made.

        Returns:
            Each piece's waveform `[piece.samples]` (float32, CPU).
        """
        waves = []
        for i, piece in enumerate(pieces):
            start = piece.reference.mel.shape[0]
            wave = self.vocoder.decode(mel[i : i + 1, start : piece.frames])[0].float().cpu()
            waves.append(restore_rms(wave, piece.reference.rms))
        return waves

    def stream(
        self,
        pieces: Sequence[Piece],
        options: SamplerOptions,
        *,
        seed: int | None = None,
        cross_fade: float = DEFAULT_CROSS_FADE,
        progress: bool = False,
    ) -> Iterator[Tensor]:
        """Make pieces one after the other, joined with a cross-fade, each handed out as soon as it is made.

        Args:
            pieces: what to say, in order (one plan's, or several plans' for several voices).
            options: the sampler settings.
            seed: noise seed of every piece; None draws.
            cross_fade: seconds of cross-fade between pieces; 0 concatenates.
            progress: show a progress bar over the pieces (on stderr).

        Yields:
            24 kHz waveform pieces `[samples]` (float32, CPU) to be played one after the other: together they are the
            pieces cross-faded (`Plan.samples` of them).
        """
        if cross_fade < 0:
            raise ValueError(f"cross_fade={cross_fade!r} is not valid; it must be >= 0")
        self._compile_if_it_pays(len(pieces) * backbone_calls(self.backbone, options))
        join = StreamJoin(cross_fade_samples(cross_fade))
        for i, piece in enumerate(tqdm(pieces, desc="f5lite", unit="chunk", disable=not progress)):
            yield join.piece(self.generate([piece], options, seed=seed)[0], last=i + 1 == len(pieces))

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
    ) -> tuple[Tensor, int]:
        """Speak `text` in the voice of the reference clip: `reference`, `plan`, then `stream` joined.

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

        Returns:
            The waveform `[samples]` (float32, CPU) and its sample rate.

        Raises:
            ValueError: empty text or reference transcript, an unreadable or too long reference, a bad setting.
            TypeError: `options` that is not a `SamplerOptions`.
        """
        if options is None:
            options = SamplerOptions()
        elif not isinstance(options, SamplerOptions):
            raise TypeError(f"synthesize() options must be a SamplerOptions or None, got {type(options).__name__}")
        if not text.strip():
            raise ValueError("text is empty: there is nothing to say")
        if cross_fade < 0:
            raise ValueError(f"cross_fade={cross_fade!r} is not valid; it must be >= 0")
        if seconds is not None and not (seconds > 0 and math.isfinite(seconds)):
            raise ValueError(f"seconds={seconds!r} is not valid; give the seconds of speech to generate, > 0")
        planned = self.plan(self.reference(ref_audio, ref_text), text, options.speed, seconds=seconds)
        waves = self.stream(planned.pieces, options, seed=seed, cross_fade=cross_fade, progress=progress)
        return torch.cat(list(waves)), SAMPLE_RATE

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
    refuse_removed_vocoder_name("vocoder", name)
    if name == "griffin_lim":
        if source is not None:
            raise ValueError("vocoder_source is for vocos; griffin_lim has no weights")
        return GriffinLimVocoder(mel_kind=mel_type).to(device).eval()
    if mel_type != "vocos":
        raise ValueError(f"this model makes {mel_type!r} mels, which Vocos cannot decode: use vocoder=griffin_lim")
    return load_vocoder(name, DEFAULT_VOCOS_REPO if source is None else source, device)


def _check_wave(wave: Tensor) -> Tensor:
    if wave.dim() != 1 or not wave.is_floating_point() or wave.numel() == 0:
        raise ValueError(
            f"ref_audio must be a float waveform [samples] at 24 kHz, got {wave.dtype} {tuple(wave.shape)}"
        )
    return wave.float().cpu()
