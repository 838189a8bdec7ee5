"""The export directory: round trip, dtypes, atomic replacement and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from support.tiny_models import TINY, tiny_backbone

import f5lite
from f5lite.config import DiTConfig, MMDiTConfig
from f5lite.storage.pretrained import PretrainedError, load_pretrained, save_pretrained

VOCAB_FILE = Path(__file__).parents[1] / "assets" / "f5tts_compat" / "vocab.txt"


def dit_config(**overrides) -> DiTConfig:
    return DiTConfig(**{**TINY["dit"], "dropout": 0.0, **overrides})


def outputs(model: torch.nn.Module) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 30, 100, generator=g)
    text = torch.randint(0, 40, (2, 12), generator=g)
    with torch.no_grad():
        return model(x, x.flip(1), text, torch.tensor([0.2, 0.7]))


def test_round_trip_gives_the_same_model(tmp_path):
    model = tiny_backbone("dit").eval()
    vocab = f5lite.load_vocab(VOCAB_FILE)
    out = save_pretrained(tmp_path / "export", model, dit_config(), vocab, tokenizer="char")
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.safetensors", "vocab.txt"]
    config = json.loads((out / "config.json").read_text())
    assert config["format"] == "f5lite-pretrained" and config["format_version"] == 1
    assert config["backbone"] == "dit" and config["model"]["text_num_embeds"] == 40
    assert (config["tokenizer"], config["mel_type"], config["dtype"]) == ("char", "vocos", "fp32")
    assert config["f5lite_version"] == f5lite.__version__
    assert all(key.startswith("transformer.") for key in load_file(out / "model.safetensors"))
    loaded, info = load_pretrained(out)
    assert not loaded.training and isinstance(info.model, DiTConfig)
    assert info.vocab is not None and info.vocab.tokens == vocab.tokens
    assert torch.equal(outputs(loaded), outputs(model))
    assert (out / "vocab.txt").read_bytes() == VOCAB_FILE.read_bytes()


def test_half_precision_export_keeps_buffers_exact(tmp_path):
    model = tiny_backbone("mmdit").eval()
    save_pretrained(
        tmp_path / "e",
        model,
        MMDiTConfig(**TINY["mmdit"], dropout=0.0),
        None,
        tokenizer="byte",
        mel_type="vocos",
        dtype="bf16",
    )
    weights = load_file(tmp_path / "e" / "model.safetensors")
    params = {f"transformer.{name}" for name, _ in model.named_parameters()}
    assert all(weights[k].dtype == torch.bfloat16 for k in params)
    assert all(weights[k].dtype == torch.float32 for k in weights.keys() - params)
    loaded, info = load_pretrained(tmp_path / "e")
    assert info.dtype == "bf16" and info.vocab is None and info.tokenizer == "byte"
    assert not (tmp_path / "e" / "vocab.txt").exists()
    assert torch.allclose(outputs(loaded), outputs(model), atol=0.05)


def test_an_earlier_export_is_replaced_and_nothing_is_left_behind(tmp_path):
    vocab = f5lite.load_vocab(VOCAB_FILE)
    save_pretrained(tmp_path / "e", tiny_backbone("dit", seed=0), dit_config(), vocab, tokenizer="char")
    second = tiny_backbone("dit", seed=1).eval()
    save_pretrained(tmp_path / "e", second, dit_config(), vocab, tokenizer="char")
    assert [p.name for p in tmp_path.iterdir()] == ["e"]
    assert torch.equal(outputs(load_pretrained(tmp_path / "e")[0]), outputs(second))


def test_save_refuses_what_does_not_fit(tmp_path):
    model, vocab = tiny_backbone("dit"), f5lite.load_vocab(VOCAB_FILE)
    with pytest.raises(PretrainedError, match="does not describe the backbone"):
        save_pretrained(tmp_path / "a", model, dit_config(depth=2), vocab, tokenizer="char")
    with pytest.raises(PretrainedError, match="needs a vocab"):
        save_pretrained(tmp_path / "a", model, dit_config(), None, tokenizer="char")
    with pytest.raises(PretrainedError, match="dtype='fp8'"):
        save_pretrained(tmp_path / "a", model, dit_config(), vocab, tokenizer="char", dtype="fp8")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(PretrainedError, match="not an export"):
        save_pretrained(tmp_path / "busy", model, dit_config(), vocab, tokenizer="char")
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"
    assert not (tmp_path / "a").exists()


def test_load_explains_broken_directories(tmp_path):
    vocab = f5lite.load_vocab(VOCAB_FILE)
    out = save_pretrained(tmp_path / "e", tiny_backbone("dit"), dit_config(), vocab, tokenizer="char")
    with pytest.raises(PretrainedError, match="no_such"):
        load_pretrained(tmp_path / "no_such")
    (out / "vocab.txt").write_text("".join(t + "\n" for t in vocab.tokens[:-1]))
    with pytest.raises(PretrainedError, match="vocab has 39 tokens but the model embeds 40"):
        load_pretrained(out)
    config = json.loads((out / "config.json").read_text())
    (out / "config.json").write_text(json.dumps({**config, "format_version": 9}))
    with pytest.raises(PretrainedError, match="format_version 9"):
        load_pretrained(out)
    (out / "config.json").write_text(json.dumps({**config, "model": {**config["model"], "depth": 3}}))
    (out / "vocab.txt").write_bytes(VOCAB_FILE.read_bytes())
    with pytest.raises(PretrainedError, match="weights do not fit"):
        load_pretrained(out)
