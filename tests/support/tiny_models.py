"""Tiny backbones and batches for CPU tests of `f5lite.models` (random weights, no fixture needed), and a tiny
Whisper saved as a downloaded checkpoint is, for the ASR backends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from torch import nn

import f5lite

TINY: dict[str, dict[str, Any]] = {
    "dit": {"dim": 64, "depth": 4, "heads": 4, "dim_head": 16, "ff_mult": 2, "text_dim": 32, "conv_layers": 1},
    "mmdit": {"dim": 64, "depth": 4, "heads": 4, "dim_head": 16, "ff_mult": 2},
    "unett": {"dim": 64, "depth": 4, "heads": 4, "dim_head": 16, "ff_mult": 2, "pe_attn_head": 1},
}
VOCAB = 40


def tiny_backbone(name: str, seed: int = 0, **overrides: Any) -> nn.Module:
    """A tiny backbone whose zero-initialised layers are re-drawn, so that every path carries signal."""
    torch.manual_seed(seed)
    model = f5lite.build_backbone(name, **{**TINY[name], "text_num_embeds": VOCAB, "dropout": 0.0, **overrides})
    for param in model.parameters():
        nn.init.normal_(param, std=0.1)
    return model


def tiny_batch(b: int = 2, n: int = 48, nt: int = 20, seed: int = 1) -> dict[str, torch.Tensor]:
    """Random inputs: x, cond `[b, n, 100]`, text `[b, nt]` (-1 padded), time `[b]`, mask `[b, n]`."""
    g = torch.Generator().manual_seed(seed)
    lens = torch.linspace(n, n // 2, b).long()
    text = torch.randint(0, VOCAB, (b, nt), generator=g)
    text[1:, nt - 5 :] = -1
    return {
        "x": torch.randn(b, n, 100, generator=g),
        "cond": torch.randn(b, n, 100, generator=g),
        "text": text,
        "time": torch.rand(b, generator=g),
        "mask": torch.arange(n)[None, :] < lens[:, None],
    }


def save_tiny_whisper(directory: Path, multilingual: bool) -> None:
    """A 1-layer Whisper with a byte-level tokenizer (256 byte tokens plus Whisper's special tokens)."""
    from tokenizers.pre_tokenizers import ByteLevel
    from transformers import (
        WhisperConfig,
        WhisperFeatureExtractor,
        WhisperForConditionalGeneration,
        WhisperProcessor,
        WhisperTokenizer,
    )

    files = directory / "tokenizer_files"
    files.mkdir(parents=True)
    (files / "vocab.json").write_text(json.dumps({s: i for i, s in enumerate(sorted(ByteLevel.alphabet()))}))
    (files / "merges.txt").write_text("#version: 0.2\n")
    end = "<|endoftext|>"
    tokenizer = WhisperTokenizer(
        str(files / "vocab.json"), str(files / "merges.txt"), unk_token=end, bos_token=end, eos_token=end, pad_token=end
    )
    specials = ["<|startoftranscript|>", "<|en|>", "<|zh|>", "<|transcribe|>", "<|translate|>", "<|notimestamps|>"]
    tokenizer.add_special_tokens({"additional_special_tokens": specials})
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in [end, *specials]}
    config = WhisperConfig(
        vocab_size=len(tokenizer),
        num_mel_bins=80,
        d_model=16,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        max_target_positions=32,
        pad_token_id=ids[end],
        bos_token_id=ids[end],
        eos_token_id=ids[end],
        decoder_start_token_id=ids["<|startoftranscript|>"],
    )
    torch.manual_seed(0)
    model = WhisperForConditionalGeneration(config)
    generation = model.generation_config
    generation.max_length = 12
    generation._from_model_config = False  # keep these fields on reload
    if multilingual:  # as openai/whisper-large-v3's generation_config.json declares its languages and tasks
        generation.is_multilingual = True
        generation.lang_to_id = {"<|en|>": ids["<|en|>"], "<|zh|>": ids["<|zh|>"]}
        generation.task_to_id = {"transcribe": ids["<|transcribe|>"], "translate": ids["<|translate|>"]}
        generation.no_timestamps_token_id = ids["<|notimestamps|>"]
    model.save_pretrained(directory)
    WhisperProcessor(feature_extractor=WhisperFeatureExtractor(feature_size=80), tokenizer=tokenizer).save_pretrained(
        directory
    )
