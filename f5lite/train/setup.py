"""Everything done to the model before the first update, in the one documented order.

1. build the backbone from the config and the vocab size (weights seeded by `seed`, the same on every rank), wrapped
   as a student for a distillation (`f5lite.models.distill`);
2. `init.weights`: pretrained weights, the text table grown for new tokens (`f5lite.train.finetune`); a distilled
   student's embeddings too (a distillation's second stage);
3. `finetune.lora`: adapters injected, everything else frozen (`f5lite.storage.lora`);
4. move to the device;
5. the EMA copy, from the plain module (so its keys are the plain state-dict keys);
6. `perf.dropout`: the dropout kernel (`apply_dropout`; `auto` is the cheap-mask kernel on a CPU without compile);
7. `perf.ac`: activation checkpointing (`apply_ac`), then 8. `perf.fp8`: FP8 training of the blocks' Linears
   (`apply_fp8`: same parameters, so the EMA and checkpoints are unchanged; where FP8 cannot run, the launch is
   refused before step 1), then `perf.compile`: per-block compile (`apply_compile`; `perf.compile_scope=model` also
   compiles the backbone's other per-step modules), after the FP8 conversion as torchao advises;
   `perf.pack` (`apply_packing`) only changes how the DiT lays out a masked batch, so it may come anywhere here;
9. the optimizer (fused AdamW over the trainable parameters).

The trainer then wraps the model in the flow objective and hands both to accelerate (DDP/FSDP, mixed precision).
This order is torchtitan's (checkpointing before compile, both before data parallelism) and lives here only:
`Trainer` and `scripts/bench_train.py` both call `build_model` and `make_optimizer`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from f5lite.config import OptimConfig, TrainConfig
from f5lite.models import (
    apply_ac,
    apply_compile,
    apply_dropout,
    apply_fp8,
    apply_packing,
    build_backbone_from_config,
    check_fp8,
    resolve_dropout_kernel,
)
from f5lite.storage.lora import LoraSettings, add_lora
from f5lite.storage.model_sources import TEXT_TABLE, run_backbone
from f5lite.text import Vocab
from f5lite.train.ema import EMA
from f5lite.train.finetune import init_from_pretrained


@dataclass
class ModelSetup:
    """A backbone ready to train: weights, adapters, EMA and optimizations applied, in the documented order."""

    backbone: nn.Module
    ema: EMA | None
    """The weight average, or None on ranks other than 0."""
    trainable: list[str] | None
    """Names of the trained parameters with LoRA (None: all)."""
    grown: int
    """Text-embedding rows added for tokens the pretrained vocab lacks."""


def build_model(
    cfg: TrainConfig, num_embeds: int, vocab: Vocab | None, device: torch.device, *, with_ema: bool = True
) -> ModelSetup:
    """Steps 1-8 of the order in the module docstring.

    Args:
        cfg: the run's config.
        num_embeds: the text vocabulary size.
        vocab: the training vocab (None for bytes), for growing pretrained text tables.
        device: where to train.
        with_ema: make the EMA copy (rank 0 only: the other ranks' averages would never be used).

    Raises:
        ValueError: unreadable or mismatched `init.weights`, a vocab that does not extend the pretrained one,
            LoRA without peft or without a matching layer, `perf.fp8` where FP8 cannot run (checked first).
    """
    if cfg.perf.fp8:
        check_fp8(device)
    torch.manual_seed(cfg.seed)  # the same initial weights on every rank and in every launch
    # A distillation's student wraps the backbone before the weights are in: a second stage starts from a student.
    backbone = run_backbone(cfg, build_backbone_from_config(cfg.model, num_embeds))
    grown = init_from_pretrained(cfg.init, cfg.model, cfg.seed, backbone, vocab) if cfg.init.weights else 0
    trainable = None
    if cfg.finetune.lora.rank:
        # Only the adapters (and a grown text table, whose new rows must learn) train, are averaged and saved.
        trainable = add_lora(
            backbone, LoraSettings.from_config(cfg.finetune.lora), also_train=[TEXT_TABLE] if grown else []
        )
    backbone.to(device)
    ema_device = torch.device("cpu") if cfg.ema.device == "cpu" else device
    # A new EMA, also when starting from pretrained weights: its step starts at 0, so its decay warms up again.
    ema = (
        EMA(backbone, cfg.ema.decay, cfg.ema.update_every, cfg.ema.update_after, ema_device, trainable)
        if with_ema
        else None
    )
    apply_dropout(backbone, resolve_dropout_kernel(cfg.perf.dropout, device, cfg.perf.compile))
    if cfg.perf.pack:
        apply_packing(backbone)
    apply_ac(backbone, cfg.perf.ac.mode, cfg.perf.ac.every_n)
    if cfg.perf.fp8:
        apply_fp8(backbone)
    if cfg.perf.compile:
        apply_compile(
            backbone,
            scope=cfg.perf.compile_scope,
            mode=cfg.perf.compile_mode,
            dynamic=cfg.perf.compile_dynamic,
            memory_budget=cfg.perf.memory_budget if cfg.perf.memory_budget < 1.0 else None,
        )
    return ModelSetup(backbone, ema, trainable, grown)


def make_optimizer(optim: OptimConfig, backbone: nn.Module, device: torch.device) -> torch.optim.Optimizer:
    """Step 9: fused AdamW over the trainable parameters; the learning rate is a device tensor set every update.

    Args:
        optim: the run's `optim` section.
        backbone: the network set up by `build_model`.
        device: where it trains.
    """
    return torch.optim.AdamW(
        [p for p in backbone.parameters() if p.requires_grad],
        lr=torch.tensor(optim.lr, device=device),
        betas=(optim.betas[0], optim.betas[1]),
        weight_decay=optim.weight_decay,
        eps=optim.eps,
        fused=True,
    )
