"""One optimizer update, skipped on the device when its loss or gradient is not finite.

`optimizer_update` is the update `Trainer.optimizer_step` applies every step (and `scripts/bench_train.py` times):
clipping, the learning rate set as a device tensor, and the fused optimizer told through `found_inf` to skip the
whole update without a host sync. `bad_update` says which skipped updates count towards `optim.max_bad_updates`.
"""

from __future__ import annotations

import torch
from accelerate import Accelerator
from accelerate.optimizer import AcceleratedOptimizer


def bad_update(loss_finite: torch.Tensor, applied: torch.Tensor, grad_scaler: bool) -> torch.Tensor:
    """Whether an update counts as bad (towards `optim.max_bad_updates`), on the device.

    Without a gradient scaler (fp32, bf16) every skipped update is bad. With one (fp16), a non-finite gradient
    under a finite loss is the scaler's normal overflow: it skips the step and lowers its scale, and early in a run
    that happens several times in a row; only a non-finite loss is bad then.

    Args:
        loss_finite: 0-d bool, the update's loss is finite.
        applied: 0-d bool, the optimizer applied the update (finite loss and gradients).
        grad_scaler: whether a gradient scaler (fp16) is in use.
    """
    return ~loss_finite if grad_scaler else ~applied


def optimizer_update(
    acc: Accelerator,
    model: torch.nn.Module,
    optimizer: AcceleratedOptimizer,
    loss: torch.Tensor,
    max_grad_norm: float,
    lr: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Clip the gradients and apply one update at `lr`, skipped on the device when the loss or gradient is not finite.

    Args:
        acc: the run's accelerator (the clipping; the gradient scaler under fp16).
        model: the prepared module whose parameters' gradients are clipped.
        optimizer: the prepared fused optimizer.
        loss: the update's mean loss, 0-d, on the training device.
        max_grad_norm: the clipping norm (`inf`: none).
        lr: the learning rate, a 0-d tensor.

    Returns:
        Two 0-d bool device tensors: the loss was finite; the update was applied (finite loss and gradients).
    """
    grad_norm = acc.clip_grad_norm_(model.parameters(), max_grad_norm)
    loss_finite = torch.isfinite(loss)
    finite = loss_finite & torch.isfinite(torch.as_tensor(grad_norm, device=loss.device))
    for group in optimizer.param_groups:
        group["lr"] = lr.to(loss.device)
    if acc.scaler is None:
        # The fused optimizer skips the whole update on the device when found_inf is set (no host sync).
        optimizer.optimizer.found_inf = (~finite).float()
        optimizer.optimizer.grad_scale = None
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss_finite, finite
