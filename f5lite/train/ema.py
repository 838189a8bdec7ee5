"""Exponential moving average of model weights, with F5-TTS's warm-up, optionally kept on the CPU.

F5-TTS averages with ema_pytorch's defaults, reproduced here: every `update_every` updates, copy the weights while
fewer than `update_after` updates have passed, then average with a decay that warms up as `1 - (1 + k) ** (-2/3)`
(k counts updates past `update_after`) and is capped at `decay`. The released checkpoints are these EMA weights.

Unlike ema_pytorch, an optimizer update that the trainer skipped (non-finite gradients) leaves the EMA exactly as it
was: its weights and its step, so the decay schedule counts applied updates only. The step lives on the training
device and the averaging weight is computed there, so following a skip flag costs no host synchronization.
"""

from __future__ import annotations

import torch
from torch import nn

# ema_pytorch's defaults (inv_gamma 1, power 2/3), which every F5-TTS run used.
_POWER = 2.0 / 3.0


def ema_decay(step: torch.Tensor | int, decay: float, update_after: int) -> torch.Tensor:
    """The decay of an average taken when `step` updates have been applied (this one included); 0 means copy.

    Args:
        step: applied updates, counting the current one (0-d tensor or int).
        decay: the largest decay.
        update_after: updates copied before averaging starts.

    Returns:
        A 0-d float64 tensor on `step`'s device.
    """
    k = torch.as_tensor(step, dtype=torch.float64) - update_after - 1
    warm = 1.0 - (1.0 + k.clamp(min=0.0)) ** -_POWER
    return torch.where(k > 0, warm.clamp(0.0, decay), torch.zeros_like(warm))


class HostStaging:
    """Reusable host buffers that device tensors are copied into, asynchronously, then waited for once.

    Buffers are allocated on the first `fetch` (page-locked when CUDA is available, so that the copies from the
    device do not block) and reused by every later one while the shapes and dtypes stay the same.
    """

    def __init__(self) -> None:
        self.buffers: list[torch.Tensor] = []

    def fetch(self, tensors: list[torch.Tensor], dtype: torch.dtype) -> list[torch.Tensor]:
        """Host copies of `tensors` in `dtype`, valid until the next `fetch`.

        Args:
            tensors: device (or host) tensors of any shapes.
            dtype: the dtype of the copies.

        Returns:
            One host buffer per tensor, holding its values.
        """
        if [(b.shape, b.dtype) for b in self.buffers] != [(t.shape, dtype) for t in tensors]:
            pin = torch.cuda.is_available()
            self.buffers = [torch.empty(t.shape, dtype=dtype, pin_memory=pin) for t in tensors]
        for buffer, tensor in zip(self.buffers, tensors, strict=True):
            buffer.copy_(tensor.detach(), non_blocking=True)
        # One wait for every copy, instead of one blocking transfer per tensor.
        for device in {t.device for t in tensors if t.device.type == "cuda"}:
            torch.cuda.current_stream(device).synchronize()
        return self.buffers


class EMA:
    """Shadow copy of a module's floating-point state in float32.

    Build it from the uncompiled, unwrapped module: names are then the plain state-dict keys, which stay valid
    however the training copy is wrapped later.

    Attributes:
        step: applied optimizer updates seen (0-d int64 tensor on the model's device); drives the decay.
        calls: `update` calls (every optimizer update, skipped or not); drives `update_every`.
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
        self.calls = 0
        clock = next((p.device for p in model.parameters()), self.device)
        self.step = torch.zeros((), dtype=torch.int64, device=clock)
        wanted = None if names is None else set(names)
        self.shadow = {k: self._own(v) for k, v in model.state_dict().items() if wanted is None or k in wanted}
        # The model on an accelerator, the average on the host: stage the weights through reusable host buffers.
        self.staging = HostStaging() if clock.type != "cpu" and self.device.type == "cpu" else None

    def _own(self, value: torch.Tensor) -> torch.Tensor:
        value = value.detach().to(self.device, copy=True)
        return value.float() if value.is_floating_point() else value

    def current_decay(self) -> float:
        """The decay the next due average would use if the next update is applied (0 means copy)."""
        return float(ema_decay(self.step + 1, self.decay, self.update_after))

    @torch.no_grad()
    def update(self, model: nn.Module, applied: torch.Tensor | None = None) -> None:
        """Count one optimizer update and average when it is due.

        Args:
            model: the module being trained (same keys as at construction; wrappers already removed).
            applied: 0-d bool tensor on the model's device, False when the optimizer skipped this update
                (non-finite gradients): the weights and the step then stay as they are. Read on the device, without
                a host sync.
        """
        due = self.calls % self.update_every == 0
        self.calls += 1
        flag = torch.ones((), dtype=torch.int64, device=self.step.device) if applied is None else applied.long()
        # ema_pytorch's order: the copy phase is judged on the count before this update, the decay after it.
        before = self.step.clone()
        self.step += flag
        if not due:
            return
        copy = before <= self.update_after
        weight = torch.where(copy, 1.0, 1.0 - ema_decay(self.step, self.decay, self.update_after)) * flag
        params = model.state_dict()
        floats = [k for k, v in self.shadow.items() if v.is_floating_point()]
        if self.staging is not None:
            # The weight rides with the weights: all copies issued asynchronously, then one wait.
            weight, *online = self.staging.fetch([weight, *(params[k] for k in floats)], torch.float32)
        else:
            weight = weight.to(self.device, torch.float32)
            online = [params[k].detach().to(self.device, torch.float32) for k in floats]
        # lerp with weight 1 is an exact copy and with weight 0 leaves the shadow untouched (a skipped update).
        torch._foreach_lerp_([self.shadow[k] for k in floats], online, [weight] * len(floats))
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

    def load_state_dict(self, state: dict[str, torch.Tensor], step: int, calls: int) -> None:
        """Restore weights and counters from a checkpoint.

        Args:
            state: the averaged weights.
            step: applied updates the average had seen.
            calls: `update` calls made (the trainer's update count).

        Raises:
            KeyError: the checkpoint's keys differ from the model's.
        """
        if state.keys() != self.shadow.keys():
            missing, extra = sorted(self.shadow.keys() - state.keys()), sorted(state.keys() - self.shadow.keys())
            raise KeyError(f"EMA weights do not match the model: missing {missing[:5]}, unexpected {extra[:5]}")
        for key, value in state.items():
            self.shadow[key].copy_(value)
        self.step.fill_(step)
        self.calls = calls
