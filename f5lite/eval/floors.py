"""The vocoded floor: each row's ground truth through the vocoder the model's speech goes through.

A model makes log-mels and a vocoder makes them audio, so even a perfect model is heard through the vocoder. The
ground truth scored as it is (`gt`) is the floor of the data; the ground truth turned into its log-mel and decoded
by the same vocoder (`gt_vocoded`) is the floor of the whole path: with Griffin-Lim, what the model could score at
best. `floor_vocoder` picks the vocoder: `auto` is the model's own (none when scoring `audio_dir`), `none` skips
the floor, `griffin_lim` / `vocos` name one.
"""

from __future__ import annotations

import torch
from torch import Tensor

from f5lite.audio import SAMPLE_RATE, Vocoder, load_vocoder, log_mel
from f5lite.audio.vocoder import GriffinLimVocoder, VocosVocoder, refuse_removed_vocoder_name

FLOOR_VOCODERS = ("auto", "none", "griffin_lim", "vocos")
"""The values of `floor_vocoder`."""
VOCODED_DIR = "gt_vocoded"
"""The folder of an output directory that holds each row's vocoded ground truth, `<id>.wav`."""


def floor_vocoder_name(setting: str) -> str:
    """`setting`, checked to be one of `FLOOR_VOCODERS`.

    Raises:
        ValueError: it is not, or it is a removed spelling (`griffinlim`), in one line naming the key.
    """
    refuse_removed_vocoder_name("floor_vocoder", setting)
    if setting not in FLOOR_VOCODERS:
        raise ValueError(f"floor_vocoder={setting!r} is not valid; choose one of: {', '.join(FLOOR_VOCODERS)}")
    return setting


def planned_floor_vocoder(setting: str, model_vocoder: str | None) -> str | None:
    """The vocoder the vocoded floor will use, by name.

    Args:
        setting: `floor_vocoder`.
        model_vocoder: the model's `sample.vocoder` when a model speaks, None when scoring existing audio.

    Returns:
        `griffin_lim` or `vocos`; None for no vocoded floor (`none`, or `auto` without a model).

    Raises:
        ValueError: an unknown setting.
    """
    name = floor_vocoder_name(setting)
    if name == "auto":
        name = model_vocoder if model_vocoder is not None else "none"
    return None if name == "none" else name


def resolve_floor_vocoder(
    name: str | None, model_vocoder: Vocoder | None, vocos_source: str | None, device: torch.device
) -> Vocoder | None:
    """The vocoder of the vocoded floor, loaded.

    The model's own vocoder is reused when it is the one named, so the floor goes through exactly its path (its mel
    kind included).

    Args:
        name: `planned_floor_vocoder`'s answer.
        model_vocoder: the model's loaded vocoder, or None when scoring existing audio.
        vocos_source: the Vocos weights to load for `vocos` when the model's vocoder is not reused (None: default).
        device: where a newly built vocoder runs.

    Returns:
        The vocoder, or None when `name` is None.

    Raises:
        OSError: the Vocos weights cannot be found.
    """
    if name is None:
        return None
    if name == "griffin_lim":
        if isinstance(model_vocoder, GriffinLimVocoder):
            return model_vocoder
        mel_kind = model_vocoder.mel_kind if model_vocoder is not None else "vocos"
        return GriffinLimVocoder(mel_kind=mel_kind).to(device).eval()
    if isinstance(model_vocoder, VocosVocoder):
        return model_vocoder
    return load_vocoder("vocos", vocos_source, device)


def vocode(wave: Tensor, vocoder: Vocoder) -> Tensor:
    """`wave` through the model's path: its log-mel (the vocoder's mel kind), decoded by `vocoder`.

    Args:
        wave: `[samples]` 24 kHz float audio.
        vocoder: the vocoder.

    Returns:
        `[samples']` float32 on the CPU at 24 kHz; as long as the vocoder makes it for that many frames (at most a
        hop shorter or longer than `wave`).

    Raises:
        ValueError: `wave` is not a non-empty 1-D waveform, or is too short for the vocoder (about 30 ms).
    """
    if wave.dim() != 1 or wave.numel() == 0:
        raise ValueError(f"the ground truth to vocode must be a non-empty 1-D waveform, got {tuple(wave.shape)}")
    if vocoder.sample_rate != SAMPLE_RATE:
        raise ValueError(f"the vocoder makes {vocoder.sample_rate} Hz audio; f5lite-eval scores {SAMPLE_RATE} Hz")
    tensors = [*vocoder.parameters(), *vocoder.buffers()]
    device = tensors[0].device if tensors else torch.device("cpu")
    mel = log_mel(wave.float().to(device)[None], vocoder.mel_kind)
    return vocoder.decode(mel)[0].float().cpu()
