"""Decisions that every rank must share: made once (on rank 0, or by any rank) and given to all, so none hangs.

A rank that decides alone (which checkpoint to resume, whether to stop, whether the run directory may be used)
leaves the others waiting in a collective forever, or training on other weights. Each helper here is a no-op
without a process group, so the single-process path costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import torch
import torch.distributed as dist
from accelerate.utils import DistributedType

T = TypeVar("T")

SUPPORTED_TYPES = (DistributedType.NO, DistributedType.MULTI_CPU, DistributedType.MULTI_GPU)
"""accelerate modes the trainer supports: one process, or DDP over CPU (gloo) or GPU (NCCL) processes."""


def check_distributed_type(kind: DistributedType) -> None:
    """Refuse an accelerate mode the trainer does not support, in one line.

    FSDP, DeepSpeed and the others shard the model or the optimizer, while the EMA, checkpoints, resume and export
    here assume every rank holds the whole model.

    Raises:
        ValueError: naming the mode and what to use instead.
    """
    if kind not in SUPPORTED_TYPES:
        raise ValueError(
            f"accelerate's distributed type {kind.value} is not supported by the f5lite trainer (its EMA, "
            "checkpoints and resume need the whole model on every rank): launch with DDP instead "
            "(accelerate launch --multi_gpu, or torchrun)"
        )


def distributed() -> bool:
    """Whether a process group of more than one rank is running."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def agree(main: bool, decide: Callable[[], T]) -> T:
    """Run `decide` on rank 0 and return its result on every rank, or raise its `ValueError` on every rank.

    Args:
        main: whether this process is rank 0.
        decide: the decision; its result must be picklable (small: it is broadcast as an object).
    """
    if not distributed():
        return decide()
    payload: list[Any] = [None]
    if main:
        try:
            payload = [("ok", decide())]
        except ValueError as err:
            payload = [("error", str(err))]
    dist.broadcast_object_list(payload, src=0)
    kind, value = payload[0]
    if kind == "error":
        raise ValueError(value)
    return value


def any_rank(value: int, device: torch.device) -> int:
    """The largest of each rank's `value` (one tiny all-reduce; it waits for every rank to get here)."""
    if not distributed():
        return value
    flag = torch.tensor([value], dtype=torch.int64, device=device)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return int(flag.item())


def broadcast_tensors(tensors: dict[str, torch.Tensor] | None, device: torch.device) -> dict[str, torch.Tensor]:
    """Rank 0's tensors on every rank (on `device`), sent tensor by tensor.

    Args:
        tensors: rank 0's tensors; ignored on the other ranks.
        device: where the received tensors go (a CUDA device for NCCL).

    Returns:
        The tensors, keyed as on rank 0.
    """
    if not distributed():
        assert tensors is not None
        return tensors
    spec: list[Any] = [None]
    if tensors is not None:
        spec = [[(name, tuple(t.shape), t.dtype) for name, t in tensors.items()]]
    dist.broadcast_object_list(spec, src=0)
    received = {}
    for name, shape, dtype in spec[0]:
        # gloo cannot send bool tensors: they travel as bytes.
        wire = torch.uint8 if dtype == torch.bool else dtype
        if tensors is not None:
            buffer = tensors[name].to(device=device, dtype=wire).contiguous()
        else:
            buffer = torch.empty(shape, dtype=wire, device=device)
        dist.broadcast(buffer, src=0)
        received[name] = buffer.to(dtype)
    return received
