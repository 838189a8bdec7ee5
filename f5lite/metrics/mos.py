"""Learned quality (MOS) predictors for the `mos` metric, chosen by a backend spec (`MetricSettings.mos`).

- "dnsmos": Microsoft's DNSMOS (P.835 and P.808 ONNX models shipped in the `speechmos` wheel); offline, CPU.
  `mos` is the P.835 overall score (OVRL); `mos_sig` (speech), `mos_bak` (background) and `mos_p808` come with it.
  DNSMOS was trained for noise suppression, so it rates noise and distortion more than naturalness.
- "utmos:<dir or hub id>": UTMOS22 strong (the `utmos22_strong` F5-TTS reports), through `utmos-pytorch`, a
  fairseq-free port; the directory holds `utmos_state_dict.pt` (as on the hub at `Blinorot/UTMOS-PyTorch`).

All scores are on the 1-5 MOS scale; higher is better.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Protocol

import torch
from torch import Tensor

from f5lite.metrics.backend import ASR_RATE, EVAL_EXTRA, model_source, parse_spec, require, resample

MOS_BACKENDS = ("dnsmos", "utmos")
_NEEDS_MODEL = ("utmos",)
UTMOS_WEIGHTS_FILE = "utmos_state_dict.pt"
# UTMOS22's scoring: the main-track domain (0) and its "mean listener" id (288), frame scores averaged, mapped from
# [-1, 1] to the MOS scale.
_UTMOS_DOMAIN = 0
_UTMOS_JUDGE = 288


class QualityPredictor(Protocol):
    """A learned MOS predictor."""

    def predict(self, audio: Tensor, sample_rate: int) -> dict[str, float]:
        """`mos` and any sub-scores (keys starting `mos_`) of `audio` `[samples]` (any rate)."""
        ...


class DnsmosPredictor:
    """DNSMOS P.835 + P.808 from the ONNX files in the `speechmos` wheel (clips shorter than 9 s are repeated)."""

    def __init__(self) -> None:
        dnsmos = require("speechmos.dnsmos", EVAL_EXTRA, "mos backend 'dnsmos'")
        models = Path(str(dnsmos.__file__)).parent / "dnsmos_models"
        self._model = dnsmos.DNSMOS(str(models / "sig_bak_ovr.onnx"), str(models / "model_v8.onnx"))

    def predict(self, audio: Tensor, sample_rate: int) -> dict[str, float]:
        """`mos` (OVRL), `mos_sig`, `mos_bak`, `mos_p808` of `audio` `[samples]` (any rate)."""
        # DNSMOS refuses samples outside [-1, 1]; resampling can overshoot a full-scale clip slightly.
        wave = resample(audio, sample_rate, ASR_RATE).clamp(-1.0, 1.0).numpy()
        scores = self._model(wave, ASR_RATE, False)
        return {
            "mos": float(scores["ovrl_mos"]),
            "mos_sig": float(scores["sig_mos"]),
            "mos_bak": float(scores["bak_mos"]),
            "mos_p808": float(scores["p808_mos"]),
        }


class UtmosPredictor:
    """UTMOS22 strong through `utmos-pytorch`, loaded strictly from `utmos_state_dict.pt`."""

    def __init__(self, source: str, device: str) -> None:
        utmos = require("utmos_pytorch.utmos_torch", EVAL_EXTRA, "mos backend 'utmos'")
        weights = Path(source) / UTMOS_WEIGHTS_FILE
        if Path(source).is_dir():
            if not weights.is_file():
                raise ValueError(f"mos backend 'utmos': '{source}' has no {UTMOS_WEIGHTS_FILE}")
        else:
            hub = require("huggingface_hub", EVAL_EXTRA, "mos backend 'utmos'")
            weights = Path(hub.hf_hub_download(repo_id=source, filename=UTMOS_WEIGHTS_FILE))
        self._model = utmos.UTMOSModel()
        state = torch.load(weights, map_location="cpu", weights_only=True)
        # utmos-pytorch loads non-strictly; a wrong file would leave random weights and plausible-looking scores.
        try:
            self._model.load_state_dict(state)
        except RuntimeError as error:
            first = str(error).strip().splitlines()[0]
            raise ValueError(f"mos backend 'utmos': {weights} is not a UTMOS state dict ({first})") from error
        utmos.remove_weight_norm_for_jit(self._model)
        self._model.to(device).eval()
        self._device = torch.device(device)

    @torch.no_grad()
    def predict(self, audio: Tensor, sample_rate: int) -> dict[str, float]:
        """`mos` of `audio` `[samples]` (any rate)."""
        wave = resample(audio, sample_rate, ASR_RATE).to(self._device)[None, None]
        ones = torch.ones(1, dtype=torch.int, device=self._device)
        frames = self._model(wav=wave, domains=ones * _UTMOS_DOMAIN, judge_id=ones * _UTMOS_JUDGE)
        return {"mos": float(frames.mean() * 2 + 3)}


@functools.cache
def load_quality_predictor(spec: str, device: str = "cpu") -> QualityPredictor:
    """The MOS predictor a backend spec names, loaded once per process.

    Args:
        spec: "dnsmos" or "utmos:<dir or hub id>".
        device: torch device for UTMOS, e.g. "cpu" or "cuda" (DNSMOS runs on the CPU).

    Raises:
        ValueError: unknown backend, a missing model directory or weights file, or a file that is not UTMOS's.
        ImportError: the backend's package is not installed.
    """
    name, argument = parse_spec(spec, "mos", MOS_BACKENDS, _NEEDS_MODEL)
    if name == "dnsmos":
        return DnsmosPredictor()
    return UtmosPredictor(model_source(argument, "mos backend 'utmos'"), device)
