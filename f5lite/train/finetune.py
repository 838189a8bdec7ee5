"""Starting a run from pretrained weights: architecture guard and vocabulary growth.

Fine-tuning F5-TTS's released models goes wrong in known ways, each handled here:

- a recipe that does not match the checkpoint: refused with the dimension that differs (`model.dim: checkpoint
  1024, config 768`), before any key-by-key listing;
- a dataset with characters the pretrained vocab lacks: `f5lite-prepare --vocab PRETRAINED` appends them (old ids
  unchanged), and the text-embedding table grows here by as many rows, drawn at the trained rows' per-channel mean
  and standard deviation instead of N(0, 1).

`init.weights` is read through `f5lite.storage.model_sources`, so it takes any model source: an official checkpoint, an
f5lite export, a training run or a LoRA adapter export. LoRA itself lives in `f5lite.storage.lora`.
"""

from __future__ import annotations

import re
from typing import Any

import torch
from torch import nn

from f5lite.config import ModelConfig
from f5lite.config.finetune import InitConfig
from f5lite.models import CheckpointError, load_backbone_weights
from f5lite.models.distill import StudentBackbone
from f5lite.storage.model_sources import TEXT_TABLE, read_weights
from f5lite.text import Vocab, load_vocab


def _count(state: dict[str, torch.Tensor], pattern: str) -> int:
    found = {m.group(1) for k in state if (m := re.match(pattern, k))}
    return len(found)


def architecture_of(state: dict[str, torch.Tensor]) -> dict[str, Any]:
    """The architecture fields a backbone state dict reveals (those it cannot tell are left out).

    `heads x dim_head` is the attention width (the rows of `to_q`); `qk_norm` and `long_skip_connection` are told
    by whether their weights exist.
    """
    arch: dict[str, Any] = {}
    if "proj_out.weight" in state:
        arch["mel_dim"], arch["dim"] = tuple(state["proj_out.weight"].shape)
    blocks = _count(state, r"(?:transformer_blocks|layers)\.(\d+)\.")
    if blocks:
        arch["depth"] = blocks
    if TEXT_TABLE in state and "input_embed.proj.weight" in state:
        arch["text_dim"] = state[TEXT_TABLE].shape[1]
    arch["conv_layers"] = _count(state, r"text_embed\.text_blocks\.(\d+)\.")
    # The audio stream's feed-forward (DiT `ff.ff.0.0`, MMDiT `ff_x.ff.0.0`, UNetT `layers.i.4.ff.0.0`).
    ff = next((v for k, v in state.items() if k.endswith(".ff.0.0.weight") and "ff_c." not in k), None)
    if ff is not None and "dim" in arch:
        arch["ff_mult"] = ff.shape[0] / arch["dim"]
    to_q = next((v for k, v in state.items() if k.endswith(".to_q.weight")), None)
    if to_q is not None:
        arch["heads x dim_head"] = to_q.shape[0]
    arch["qk_norm"] = "set" if any(k.endswith(".q_norm.weight") for k in state) else "none"
    arch["long_skip_connection"] = "long_skip_connection.weight" in state
    return arch


def check_architecture(model_cfg: ModelConfig, model: nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Refuse weights of another architecture, naming the dimension that differs.

    Raises:
        ValueError: e.g. `init.weights has another architecture than the config: model.depth: checkpoint 22,
            config 18`.
    """
    have, want = architecture_of(state), architecture_of(model.state_dict())
    diffs = [f"model.{k}: checkpoint {have[k]}, config {want[k]}" for k in want if k in have and have[k] != want[k]]
    if ("transformer_blocks.0.attn_norm_x.linear.weight" in state) != (
        "transformer_blocks.0.attn_norm_x.linear.weight" in model.state_dict()
    ) or any(k.startswith("layers.") for k in state) != any(k.startswith("layers.") for k in model.state_dict()):
        diffs.insert(0, f"model.backbone: the checkpoint is not a {model_cfg.backbone}")
    if diffs:
        raise ValueError("init.weights has another architecture than the config: " + "; ".join(diffs))


def grow_text_table(table: torch.Tensor, rows: int, generator: torch.Generator) -> torch.Tensor:
    """Append rows to a text-embedding table at the scale of its trained rows.

    Args:
        table: `[v0 + 1, td]`, row 0 the filler token.
        rows: the new row count (>= `v0 + 1`).
        generator: for the new rows.

    Returns:
        `[rows, td]`: the old rows unchanged, the new ones drawn from N(mean, std) of rows 1.. per channel.
    """
    trained = table[1:].float() if table.shape[0] > 2 else table.float()
    mean, std = trained.mean(dim=0), trained.std(dim=0)
    extra = torch.randn(rows - table.shape[0], table.shape[1], generator=generator) * std + mean
    return torch.cat((table, extra.to(table.dtype)))


def init_from_pretrained(
    init: InitConfig, model: ModelConfig, seed: int, network: nn.Module, data_vocab: Vocab | None
) -> int:
    """Load `init.weights` into a freshly built network, growing the text table for an extended vocab.

    Args:
        init: the run's `init` section (`init.weights` given).
        model: the run's architecture, which the weights must have.
        seed: the run's seed (the grown rows' draws).
        network: the backbone built for the training data's vocab size, or a distillation's student of it; a
            distilled student's weights (the second stage) load into a student only, embeddings included.
        data_vocab: the training data's vocab (None for the byte tokenizer).

    Returns:
        How many text-embedding rows were added (0 when the vocab did not grow).

    Raises:
        ValueError: unreadable weights, another architecture, a data vocab that does not extend the pretrained, or
            a distilled student's weights outside a distillation.
    """
    assert init.weights is not None
    try:
        source = read_weights(init.weights, use_ema=init.use_ema)
    except ValueError as err:
        raise ValueError(f"init.weights: {err}") from None
    student = network if isinstance(network, StudentBackbone) else None
    backbone = network if student is None else student.backbone
    if source.student is not None:
        if student is None:
            # Its backbone alone is no longer a flow model of its own: it was trained with the step embeddings.
            raise ValueError(
                f"init.weights={init.weights} is a distilled student: fine-tune the model it was distilled from, "
                f"or distil it further with distill.teacher={init.weights}"
            )
        student.step_embed.load_state_dict(source.student)
    state = source.state
    check_architecture(model, backbone, state)
    added = 0
    if data_vocab is not None:
        if init.vocab is not None:
            pretrained, vocab_name = load_vocab(init.vocab), init.vocab
        elif source.vocab is not None:
            pretrained, vocab_name = source.vocab, f"the vocab of {init.weights}"
        else:
            raise ValueError("init.vocab is not set: give the vocab.txt that goes with init.weights")
        if data_vocab.tokens[: len(pretrained)] != pretrained.tokens:
            raise ValueError(
                f"the training data's vocab does not extend {vocab_name} (old ids would move); prepare the data with "
                f"f5lite-prepare ... --vocab {init.vocab or 'PRETRAINED_VOCAB'}"
            )
        table = state[TEXT_TABLE]
        if table.shape[0] != len(pretrained) + 1:
            raise ValueError(
                f"init.vocab={str(init.vocab)!r} has {len(pretrained)} tokens but the weights' text table has "
                f"{table.shape[0] - 1}; give the vocab.txt released with these weights"
            )
        added = len(data_vocab) - len(pretrained)
        if added:
            generator = torch.Generator().manual_seed(seed)
            state[TEXT_TABLE] = grow_text_table(table, len(data_vocab) + 1, generator)
    try:
        load_backbone_weights(backbone, state)
    except CheckpointError as err:
        raise ValueError(f"init.weights: {err}") from None
    return added
