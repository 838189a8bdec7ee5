"""What the evaluation metrics score: one item of speech, and the settings that choose the metric backends."""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

METRIC_NAMES = ("wer", "sim", "mos", "mel")
LANGUAGES = ("en", "zh")
METRIC_KEYS: dict[str, tuple[str, ...]] = {
    "wer": ("wer", "cer"),
    "sim": ("sim",),
    "mos": ("mos", "mos_sig", "mos_bak", "mos_p808"),
    "mel": ("mel_l1", "mcd", "f0_rmse"),
}
"""The numeric result keys each metric can give that rank a model (`wer` gives `wer` for English and `cer` for
Chinese); `mel` also gives `f0_pairs`, a count that ranks nothing."""


@dataclass(frozen=True)
class EvalItem:
    """One thing to score.

    Attributes:
        id: Identifier of the item (a test-set row id).
        gen_text: The text the audio should say.
        audio: [samples] float32 CPU mono: the generated (or scored) speech only.
        sample_rate: Sample rate of `audio` in Hz.
        ref_audio: [samples] the voice prompt, for speaker similarity; None when there is none.
        ref_sample_rate: Sample rate of `ref_audio` in Hz (0 when there is none).
        gt_audio: [samples] ground truth of `gen_text` in the same voice, for the mel metrics; None when unknown.
        gt_sample_rate: Sample rate of `gt_audio` in Hz (0 when there is none).
    """

    id: str
    gen_text: str
    audio: Tensor
    sample_rate: int
    ref_audio: Tensor | None = None
    ref_sample_rate: int = 0
    gt_audio: Tensor | None = None
    gt_sample_rate: int = 0


@dataclass(frozen=True)
class MetricSettings:
    """Which backend each metric uses.

    Attributes:
        asr: Speech recogniser for `wer`: "pocketsphinx" (offline, English), "whisper:<dir or hub id>",
            "faster-whisper:<dir or size>" or "paraformer:<dir>".
        speaker: Speaker encoder for `sim`: "resemblyzer" (offline) or "wavlm:<dir or hub id>".
        mos: Quality predictor for `mos`: "dnsmos" (offline).
        language: "en" scores WER (words), "zh" scores CER (characters).
        device: Torch device the hub-style backends run on, e.g. "cpu" or "cuda".
    """

    asr: str = "pocketsphinx"
    speaker: str = "resemblyzer"
    mos: str = "dnsmos"
    language: str = "en"
    device: str = "cpu"
