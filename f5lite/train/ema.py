"""Exponential moving average of model weights, with F5-TTS's warm-up, optionally kept on the CPU.

F5-TTS averages with ema_pytorch's defaults, reproduced here: every `update_every` updates, copy the weights while
fewer than `update_after` updates have passed, then average with a decay that warms up as `1 - (1 + k) ** (-2/3)`
(k counts updates past `update_after`) and is capped at `decay`. The released checkpoints are these EMA weights.
"""

from __future__ import annotations

import torch
from torch import nn

# ema_pytorch's defaults (inv_gamma 1, power 2/3), which every F5-TTS run used.
_POWER = 2.0 / 3.0


class EMA:
    """Shadow copy of a module's floating-point state in float32.

    Build it from the uncompiled, unwrapped module: names are then the plain state-dict keys, which stay valid
    however the training copy is wrapped later.
    """

    def __init__(
        self,
        model: nn.Module,
        decay: float,
        update_every: int,
        update_after: int,
        device: torch.device | str,
        names: list[str] | None = None,
    ) -> None:
        """Copy the weights.

        Args:
            model: the module to follow (its `state_dict()` keys name the EMA tensors).
            decay: largest decay.
            update_every: average every N updates.
            update_after: copy instead of averaging for the first N updates.
            device: where the shadow weights live (`"cpu"` keeps them off the accelerator).
            names: follow only these state-dict entries (LoRA: the trainable ones); None follows all.
        """
        self.decay = decay
        self.update_every = update_every
        self.update_after = update_after
        self.device = torch.device(device)
        self.step = 0
        wanted = None if names is None else set(names)
        self.shadow = {k: self._own(v) for k, v in model.state_dict().items() if wanted is None or k in wanted}

    def _own(self, value: torch.Tensor) -> torch.Tensor:
        value = value.detach().to(self.device, copy=True)
        return value.float() if value.is_floating_point() else value

    def current_decay(self) -> float:
        """The decay used at the current step (0 means copy)."""
        k = self.step - self.update_after - 1
        if k <= 0:
            return 0.0
        return min(self.decay, max(0.0, 1.0 - (1.0 + k) ** -_POWER))

    @torch.no_grad()
    def update(self, model: nn.Module, applied: torch.Tensor | None = None) -> None:
        """Count one optimizer update and average when it is due.

        Args:
            model: the module being trained (same keys as at construction; wrappers already removed).
            applied: 0-d bool tensor, False when the optimizer skipped this update (non-finite gradients): the
                average then stays as it is. Read on the device, without a host sync.
        """
        # ema_pytorch's order: the due check and the copy phase use the count before this update.
        step = self.step
        self.step += 1
        if step % self.update_every:
            return
        if step <= self.update_after:
            self.copy_from(model)
            return
        decay = self.current_decay()
        params = model.state_dict()
        floats = [k for k, v in self.shadow.items() if v.is_floating_point()]
        shadow = [self.shadow[k] for k in floats]
        online = [params[k].detach().to(self.device, torch.float32) for k in floats]
        if applied is None:
            torch._foreach_lerp_(shadow, online, 1.0 - decay)
        else:
            weight = applied.to(self.device, torch.float32) * (1.0 - decay)
            delta = torch._foreach_sub(online, shadow)
            torch._foreach_mul_(delta, weight)
            torch._foreach_add_(shadow, delta)
        for key, value in self.shadow.items():
            if not value.is_floating_point():
                value.copy_(params[key])

    @torch.no_grad()
    def copy_from(self, model: nn.Module) -> None:
        """Set the shadow weights to the model's."""
        params = model.state_dict()
        for key, value in self.shadow.items():
            value.copy_(params[key].detach())

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The averaged weights, keyed like the model's state dict (float32)."""
        return dict(self.shadow)

    def load_state_dict(self, state: dict[str, torch.Tensor], step: int) -> None:
        """Restore weights and step from a checkpoint.

        Raises:
            KeyError: the checkpoint's keys differ from the model's.
        """
        if state.keys() != self.shadow.keys():
            missing, extra = sorted(self.shadow.keys() - state.keys()), sorted(state.keys() - self.shadow.keys())
            raise KeyError(f"EMA weights do not match the model: missing {missing[:5]}, unexpected {extra[:5]}")
        for key, value in state.items():
            self.shadow[key].copy_(value)
        self.step = step
