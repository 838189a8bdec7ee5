"""F5-TTS's own code run beside ours in the same process, when it is installed (`make test-golden` installs it).

A fixture of random draws is a fixture of one instruction set: torch's CPU normal sampler rounds differently with
and without vector units, so "the same seed gives F5-TTS's draws" is checked bit for bit against F5-TTS's code run
here, on this machine's kernels. `Recorder` stands in for F5-TTS's backbone inside its `CFM` and keeps the inputs
F5-TTS's sampler and loss hand it.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import torch


def f5tts_cfm() -> ModuleType:
    """F5-TTS's `f5_tts.model.cfm` module; skips the calling test when F5-TTS is not installed."""
    return pytest.importorskip("f5_tts.model.cfm", reason="F5-TTS is not installed (make test-golden installs it)")


class Recorder(torch.nn.Module):
    """A backbone for F5-TTS's `CFM` that predicts zeros and keeps each call's `x`, `cond` and `time`."""

    dim = 8  # read by F5-TTS's CFM constructor

    def __init__(self) -> None:
        super().__init__()
        self.anchor = torch.nn.Parameter(torch.zeros(()))  # F5-TTS's CFM takes its device from a parameter
        self.calls: list[dict[str, torch.Tensor]] = []

    def forward(self, x: torch.Tensor, cond: torch.Tensor, text: torch.Tensor, time: torch.Tensor, **_: Any):
        self.calls.append({"x": x.clone(), "cond": cond.clone(), "time": time.clone()})
        return torch.zeros_like(x)

    def clear_cache(self) -> None:
        """F5-TTS's sampler calls this after its solve; there is nothing to clear."""
