"""Vocoders: turn f5lite log-mels `[batch, frames, N_MELS]` back into 24 kHz waveforms.

`VocosVocoder` wraps the neural vocoder every released F5-TTS model was trained for (`charactr/vocos-mel-24khz`).
`GriffinLimVocoder` needs no weights and no network: it is for demos, tests and offline smoke runs, and sounds
metallic. `load_vocoder` picks one by name.
"""

from __future__ import annotations

import abc
import os
import re
from pathlib import Path

import torch
import torch.nn.functional as F
import torchaudio
import yaml
from huggingface_hub import hf_hub_download
from torch import Tensor, nn
from vocos import Vocos
from vocos.feature_extractors import MelSpectrogramFeatures
from vocos.heads import IMDCTCosHead, IMDCTSymExpHead, ISTFTHead
from vocos.models import VocosBackbone, VocosResNetBackbone

from f5lite.audio.constants import F_MAX, F_MIN, HOP_LENGTH, N_FFT, N_MELS, SAMPLE_RATE, WIN_LENGTH
from f5lite.audio.mel import (
    FILTERBANK_OPTIONS,
    MelKind,
    check_mel_kind,
    frame_center_offset,
    samples_for_frames,
)

VOCODER_NAMES = ("vocos", "griffin_lim")
REMOVED_VOCODER_NAMES = {"griffinlim": "griffin_lim"}
"""Vocoder names of earlier versions (F5-TTS's CLI says `griffinlim`), by the name to write: refused, naming it."""
DEFAULT_VOCOS_REPO = "charactr/vocos-mel-24khz"
VOCOS_CONFIG_FILE = "config.yaml"
VOCOS_WEIGHTS_FILE = "pytorch_model.bin"


VOCOS_PARTS: dict[str, dict[str, type[nn.Module]]] = {
    "feature_extractor": {"vocos.feature_extractors.MelSpectrogramFeatures": MelSpectrogramFeatures},
    "backbone": {
        "vocos.models.VocosBackbone": VocosBackbone,
        "vocos.models.VocosResNetBackbone": VocosResNetBackbone,
    },
    "head": {
        "vocos.heads.ISTFTHead": ISTFTHead,
        "vocos.heads.IMDCTSymExpHead": IMDCTSymExpHead,
        "vocos.heads.IMDCTCosHead": IMDCTCosHead,
    },
}
"""The classes a Vocos `config.yaml` may name, per section. Vocos itself imports and calls whatever `class_path`
names (`os.system` included), so a downloaded or shared config could run code; f5lite builds only these."""

# "owner/name" only: a bare word or anything path-like ("./x", "/x", "~/x", "a/b/c") is taken as a directory.
_HUB_REPO_ID = re.compile(r"[\w-]+/[\w.-]+")
# torchaudio's default: "fast Griffin-Lim" momentum, which converges in far fewer iterations than plain GL.
_GRIFFIN_LIM_MOMENTUM = 0.99


class Vocoder(nn.Module, abc.ABC):
    """A mel-to-waveform model for f5lite's mel layout.

    `decode(mel)` takes `[batch, frames, N_MELS]` natural-log mels of kind `mel_kind` and returns
    `[batch, samples_for_frames(frames, mel_kind)]` samples at `sample_rate`: `(frames - 1) * hop_length` for
    "vocos" mels, `frames * hop_length` for "bigvgan" mels, which is what the real vocoders produce.
    """

    sample_rate: int = SAMPLE_RATE
    hop_length: int = HOP_LENGTH
    mel_kind: MelKind

    @torch.no_grad()
    def decode(self, mel: Tensor) -> Tensor:
        """Turn log-mels into waveforms.

        Args:
            mel: `[batch, frames, N_MELS]` log-mel of kind `self.mel_kind`, any float dtype and device.

        Returns:
            Tensor `[batch, samples_for_frames(frames, self.mel_kind)]` on the vocoder's device, float32 (or the
            dtype of the vocoder's weights).

        Raises:
            ValueError: `mel` is not `[batch, frames, N_MELS]`, or has too few frames to make any audio
                (a "vocos" mel needs 2).
        """
        if mel.dim() != 3 or mel.shape[-1] != N_MELS:
            raise ValueError(f"mel must be [batch, frames, {N_MELS}], got shape {tuple(mel.shape)}")
        if mel.shape[1] < 1 or samples_for_frames(mel.shape[1], self.mel_kind) < 1:
            raise ValueError(f"a {self.mel_kind!r} mel of {mel.shape[1]} frames is too short to make any audio")
        return self._decode(mel)

    def forward(self, mel: Tensor) -> Tensor:
        """Same as `decode`."""
        return self.decode(mel)

    @abc.abstractmethod
    def _decode(self, mel: Tensor) -> Tensor:
        """Decode a checked `[batch, frames, N_MELS]` log-mel into `[batch, samples_for_frames(frames)]`."""


class VocosVocoder(Vocoder):
    """The Vocos neural vocoder (`charactr/vocos-mel-24khz` for F5-TTS models), for "vocos" mels.

    Args:
        model: a `vocos.Vocos` whose feature extractor is f5lite's "vocos" mel (checked).

    Raises:
        ValueError: the model expects some other input than f5lite's "vocos" mel.
    """

    mel_kind: MelKind = "vocos"

    def __init__(self, model: Vocos) -> None:
        super().__init__()
        _check_vocos_input(model)
        self.vocos = model
        self.eval()

    @classmethod
    def from_config(cls, config_yaml: str | os.PathLike[str]) -> VocosVocoder:
        """Build a Vocos with random weights from its `config.yaml` (the hub repo's format).

        Raises:
            FileNotFoundError: `config_yaml` does not exist.
        """
        path = Path(config_yaml)
        if not path.is_file():
            raise FileNotFoundError(f"Vocos config file not found: '{path}'")
        return cls(_build_vocos(path))

    @classmethod
    def from_pretrained(
        cls,
        source: str | os.PathLike[str] = DEFAULT_VOCOS_REPO,
        *,
        revision: str | None = None,
        cache_dir: str | Path | None = None,
    ) -> VocosVocoder:
        """Load a trained Vocos from a local directory or a Hugging Face Hub repo.

        A path object, an existing path, or a string that is not of the form "owner/name" is a local directory,
        which must hold `config.yaml` and `pytorch_model.bin` (a copy of the hub repo). Otherwise `source` is a
        hub repo id and both files are fetched with `huggingface_hub.hf_hub_download` (cached; honours
        `HF_HUB_OFFLINE`, `HF_HOME`, ...). Weights are loaded with `weights_only=True`, strictly.

        Args:
            source: a directory, or a hub repo id such as the default "charactr/vocos-mel-24khz".
            revision: hub branch, tag or commit; ignored for a directory.
            cache_dir: hub cache directory; ignored for a directory.

        Raises:
            FileNotFoundError: the directory, or one of its two files, does not exist.
            OSError: the hub download failed (no network, unknown repo, ...).
            ValueError: the model expects some other input than f5lite's "vocos" mel.
        """
        config_path, weights_path = _vocos_files(source, revision, cache_dir)
        vocoder = cls.from_config(config_path)
        state_dict = torch.load(weights_path, map_location="cpu", weights_only=True)
        vocoder.vocos.load_state_dict(state_dict)
        return vocoder

    def _decode(self, mel: Tensor) -> Tensor:
        weight = next(self.vocos.parameters())
        features = mel.transpose(1, 2).to(device=weight.device, dtype=weight.dtype)
        # Vocos.decode runs under inference_mode; a clone made outside it is an ordinary tensor that callers may
        # modify in place (cross-fades, loudness) without a RuntimeError.
        return self.vocos.decode(features).clone()


class GriffinLimVocoder(Vocoder):
    """Weight-free vocoder: pseudo-inverse of the mel filterbank, then Griffin-Lim phase reconstruction.

    The log-mel is exponentiated, mapped back to a linear magnitude spectrogram with torchaudio's
    `InverseMelScale` (the filterbank of `mel_kind`), and phase is estimated with torchaudio's fast Griffin-Lim
    (`n_iter` iterations, momentum 0.99, deterministic zero-phase start so the global RNG is not touched).
    Computes in float32 on the vocoder's device. `decode` needs at least 4 "vocos" frames or 3 "bigvgan" frames
    (about 30 ms) and raises ValueError for fewer.

    Args:
        mel_kind: which mel convention the input follows, "vocos" or "bigvgan".
        n_iter: Griffin-Lim iterations; more is slower and slightly cleaner.

    Raises:
        ValueError: unknown `mel_kind`, or `n_iter` < 1.
    """

    window: Tensor

    def __init__(self, mel_kind: str = "vocos", n_iter: int = 32) -> None:
        super().__init__()
        if n_iter < 1:
            raise ValueError(f"n_iter must be at least 1, got {n_iter}")
        self.mel_kind = check_mel_kind(mel_kind)
        self.n_iter = n_iter
        options = FILTERBANK_OPTIONS[self.mel_kind]
        self.inverse_mel = torchaudio.transforms.InverseMelScale(
            n_stft=N_FFT // 2 + 1,
            n_mels=N_MELS,
            sample_rate=SAMPLE_RATE,
            f_min=F_MIN,
            f_max=F_MAX,
            norm=options.norm,
            mel_scale=options.mel_scale,
        )
        self.register_buffer("window", torch.hann_window(WIN_LENGTH), persistent=False)

    def _decode(self, mel: Tensor) -> Tensor:
        magnitude_mel = mel.to(device=self.window.device, dtype=torch.float32).exp()
        # InverseMelScale reshapes with view(), which needs a contiguous [batch, N_MELS, frames] tensor.
        magnitude = self.inverse_mel(magnitude_mel.transpose(1, 2).contiguous())
        num_samples = samples_for_frames(mel.shape[1], self.mel_kind)
        # Griffin-Lim's STFT centres frame i on sample i * hop; a "bigvgan" frame sits half a hop later, so the
        # estimate is delayed by that much (the first samples stay silent) to keep frames where the mel had them.
        offset = frame_center_offset(self.mel_kind)
        if num_samples - offset <= N_FFT // 2:
            raise ValueError(
                f"Griffin-Lim needs more than {N_FFT // 2 + offset} output samples (its STFT reflect-pads "
                f"{N_FFT // 2}); a {self.mel_kind!r} mel of {mel.shape[1]} frames gives {num_samples}"
            )
        wave = torchaudio.functional.griffinlim(
            magnitude,
            self.window,
            N_FFT,
            HOP_LENGTH,
            WIN_LENGTH,
            power=1.0,
            n_iter=self.n_iter,
            momentum=_GRIFFIN_LIM_MOMENTUM,
            length=num_samples - offset,
            rand_init=False,
        )
        return F.pad(wave, (offset, 0))


def refuse_removed_vocoder_name(key: str, name: object) -> None:
    """Refuse a vocoder name spelled as an earlier version did (`griffinlim`).

    Args:
        key: the setting's name, as the user gave it (`sample.vocoder`, `vocoder`, `floor_vocoder`).
        name: its value.

    Raises:
        ValueError: one line naming the setting and the name to write.
    """
    if isinstance(name, str) and name in REMOVED_VOCODER_NAMES:
        raise ValueError(f"{key}={name} is no longer accepted; write {key}={REMOVED_VOCODER_NAMES[name]}")


def load_vocoder(
    name: str, source: str | os.PathLike[str] | None = None, device: str | torch.device = "cpu"
) -> Vocoder:
    """Build a vocoder for "vocos" mels by name, in eval mode on `device`.

    Args:
        name: "vocos" (neural, needs weights) or "griffin_lim" (no weights, low quality).
        source: for "vocos", a local directory or hub repo id (see `VocosVocoder.from_pretrained`; default
            "charactr/vocos-mel-24khz"). Must be None for "griffin_lim".
        device: where the vocoder runs.

    Raises:
        ValueError: unknown `name`, or a `source` given for "griffin_lim".
        FileNotFoundError, OSError: see `VocosVocoder.from_pretrained`.
    """
    refuse_removed_vocoder_name("vocoder", name)
    vocoder: Vocoder
    if name == "vocos":
        vocoder = VocosVocoder.from_pretrained(DEFAULT_VOCOS_REPO if source is None else source)
    elif name == "griffin_lim":
        if source is not None:
            raise ValueError(f"the griffin_lim vocoder has no weights to load; got source {source!r}")
        vocoder = GriffinLimVocoder()
    else:
        raise ValueError(f"unknown vocoder {name!r}; expected one of {', '.join(map(repr, VOCODER_NAMES))}")
    return vocoder.to(device).eval()


def _build_vocos(path: Path) -> Vocos:
    """A Vocos from its `config.yaml`, building only the classes of `VOCOS_PARTS` (nothing is imported by name).

    Raises:
        ValueError: the file is not a Vocos config, or names a class f5lite does not build (one line naming the key).
    """
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise ValueError(f"Vocos config {path} cannot be read: {err}".replace("\n", " ")) from None
    if not isinstance(config, dict):
        raise ValueError(f"Vocos config {path} is not a mapping")
    parts = {}
    for section, allowed in VOCOS_PARTS.items():
        entry = config.get(section)
        if not isinstance(entry, dict) or not isinstance(entry.get("class_path"), str):
            raise ValueError(f"Vocos config {path}: {section}.class_path is missing")
        name = entry["class_path"]
        if name not in allowed:
            raise ValueError(
                f"Vocos config {path}: {section}.class_path={name!r} is not a Vocos class f5lite builds "
                f"(allowed: {', '.join(allowed)})"
            )
        kwargs = entry.get("init_args", {})
        if not isinstance(kwargs, dict):
            raise ValueError(f"Vocos config {path}: {section}.init_args is not a mapping")
        try:
            parts[section] = allowed[name](**kwargs)
        except TypeError as err:
            raise ValueError(f"Vocos config {path}: {section}.init_args do not fit {name}: {err}") from None
    return Vocos(**parts)


def _vocos_files(
    source: str | os.PathLike[str], revision: str | None, cache_dir: str | Path | None
) -> tuple[Path, Path]:
    """Paths of a Vocos `config.yaml` and `pytorch_model.bin`: in a local directory, or downloaded from the hub."""
    if isinstance(source, str) and _HUB_REPO_ID.fullmatch(source) and not Path(source).exists():
        config_path = _download(source, VOCOS_CONFIG_FILE, revision, cache_dir)
        return config_path, _download(source, VOCOS_WEIGHTS_FILE, revision, cache_dir)
    directory = Path(source).expanduser()
    if not directory.is_dir():
        raise FileNotFoundError(f"Vocos directory not found: '{directory}'")
    missing = [name for name in (VOCOS_CONFIG_FILE, VOCOS_WEIGHTS_FILE) if not (directory / name).is_file()]
    if missing:
        raise FileNotFoundError(f"Vocos directory '{directory}' has no {' and no '.join(missing)}")
    return directory / VOCOS_CONFIG_FILE, directory / VOCOS_WEIGHTS_FILE


def _download(repo_id: str, filename: str, revision: str | None, cache_dir: str | Path | None) -> Path:
    """Fetch one file of a hub repo (or take it from the local hub cache)."""
    try:
        return Path(hf_hub_download(repo_id=repo_id, filename=filename, revision=revision, cache_dir=cache_dir))
    except OSError as err:
        # "owner/name" may also have been meant as a relative directory that does not exist: say both.
        raise OSError(
            f"could not get {filename} of '{repo_id}' from the Hugging Face Hub, and there is no local directory "
            f"of that name: {err}"
        ) from err


def _check_vocos_input(model: Vocos) -> None:
    """Raise ValueError unless `model` was trained on f5lite's "vocos" mel (Vocos does not check its input)."""
    features = model.feature_extractor
    if not isinstance(features, MelSpectrogramFeatures):
        raise ValueError(f"Vocos model takes {type(features).__name__} input, not a mel spectrogram")
    mel = features.mel_spec
    found = (mel.sample_rate, mel.n_fft, mel.hop_length, mel.n_mels, features.padding)
    expected = (SAMPLE_RATE, N_FFT, HOP_LENGTH, N_MELS, "center")
    if found != expected:
        raise ValueError(
            "Vocos model was trained on a different mel: (sample_rate, n_fft, hop_length, n_mels, padding) is "
            f"{found}, f5lite uses {expected}"
        )
