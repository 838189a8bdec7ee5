"""Backbone construction, options, parameter counts, text caching and attention masking."""

from __future__ import annotations

import re

import pytest
import torch
from support.tiny_models import TINY, VOCAB, tiny_backbone, tiny_batch

import f5lite
from f5lite.config import compose_config
from f5lite.models import backbone_kwargs, build_backbone_from_config

BACKBONES = ("dit", "mmdit", "unett")


@pytest.mark.parametrize(
    ("recipe", "params", "keys"), [("dit_base", 337_096_804, 364), ("unett_base", 333_470_444, 363)]
)
def test_released_architectures_have_the_released_size(recipe: str, params: int, keys: int) -> None:
    cfg = compose_config([f"+recipe={recipe}"])
    with torch.device("meta"):
        model = build_backbone_from_config(cfg.model, text_num_embeds=2545)  # F5TTS_v1_Base/vocab.txt lines
    assert sum(p.numel() for p in model.parameters()) == params
    assert len(model.state_dict()) == keys  # plus rotary_embed.inv_freq, a persistent buffer


def test_vocab_size_must_come_from_somewhere() -> None:
    cfg = compose_config(["+recipe=debug_tiny"])
    with pytest.raises(ValueError, match="model.text_num_embeds is not set"):
        backbone_kwargs(cfg.model)
    assert backbone_kwargs(cfg.model, 12)["text_num_embeds"] == 12


def test_bad_constructor_arguments() -> None:
    with pytest.raises(ValueError, match="backbone 'transformer' is not valid; choose one of: dit, mmdit, unett"):
        f5lite.build_backbone("transformer", dim=64)
    with pytest.raises(ValueError, match="cannot build mmdit: .*conv_layers"):
        f5lite.build_backbone("mmdit", dim=64, conv_layers=2)
    with pytest.raises(ValueError, match="depth=3 is not valid"):
        f5lite.build_backbone("unett", dim=64, depth=3)
    with pytest.raises(ValueError, match="skip_connect_type='cat' is not valid"):
        f5lite.build_backbone("unett", dim=64, skip_connect_type="cat")
    with pytest.raises(ValueError, match="qk_norm='layer_norm' is not valid"):
        f5lite.build_backbone("dit", dim=64, qk_norm="layer_norm")


@pytest.mark.parametrize("name", ["dit", "mmdit"])
def test_adaln_zero_init_outputs_zero(name: str) -> None:
    model = f5lite.build_backbone(name, **TINY[name], text_num_embeds=VOCAB)
    batch = tiny_batch()
    out = model(batch["x"], batch["cond"], batch["text"], batch["time"], mask=batch["mask"])
    assert out.shape == (2, 48, 100)
    assert torch.count_nonzero(out) == 0


@pytest.mark.parametrize("name", BACKBONES)
@pytest.mark.parametrize("use_mask", [True, False])
def test_cached_text_embedding_equals_recomputed(name: str, use_mask: bool) -> None:
    model = tiny_backbone(name).eval()
    b = tiny_batch()
    mask = b["mask"] if use_mask else None
    drop = torch.tensor([False, True])
    cache = model.embed_text(b["text"], b["x"].shape[1], mask, drop)
    with torch.no_grad():
        direct = model(b["x"], b["cond"], b["text"], b["time"], mask, False, drop)
        cached = model(b["x"], b["cond"], b["text"], b["time"], mask, False, drop, text_embed=cache)
    assert torch.equal(direct, cached)


@pytest.mark.parametrize("enabled", [True, False])
def test_dit_attention_mask_decides_whether_padding_leaks(enabled: bool) -> None:
    """With the mask, DiT's valid frames ignore the padded frames' content; without it (F5-TTS's released
    configuration) padded frames are attention keys and change the result."""
    model = tiny_backbone("dit", attn_mask_enabled=enabled).eval()
    b = tiny_batch()
    noisy = b["x"].clone()
    noisy[~b["mask"]] = 100.0
    with torch.no_grad():
        out = model(b["x"], b["cond"], b["text"], b["time"], mask=b["mask"])[b["mask"]]
        out_noisy = model(noisy, b["cond"], b["text"], b["time"], mask=b["mask"])[b["mask"]]
    assert torch.allclose(out, out_noisy, atol=1e-5) == enabled


@pytest.mark.parametrize("name", BACKBONES)
def test_attention_masks_are_not_materialized(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    shapes = []
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def spy(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        shapes.append(None if attn_mask is None else tuple(attn_mask.shape))
        return sdpa(q, k, v, attn_mask=attn_mask)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", spy)
    b = tiny_batch()
    for enabled in (False, True):
        shapes.clear()
        tiny_backbone(name, attn_mask_enabled=enabled)(b["x"], b["cond"], b["text"], b["time"], mask=b["mask"])
        keys = {"dit": 48, "unett": 49, "mmdit": 48 + 20}[name]
        assert shapes == [(2, 1, 1, keys) if enabled else None] * 4


def test_optional_parameters_have_f5tts_keys() -> None:
    dit = tiny_backbone("dit", qk_norm="rms_norm", long_skip_connection=True, pe_attn_head=2)
    keys = dit.state_dict()
    assert keys["transformer_blocks.0.attn.q_norm.weight"].shape == (16,)
    assert keys["transformer_blocks.0.attn.k_norm.weight"].shape == (16,)
    assert keys["long_skip_connection.weight"].shape == (64, 128)
    mmdit = tiny_backbone("mmdit", qk_norm="rms_norm").state_dict()
    assert {"transformer_blocks.0.attn.c_q_norm.weight", "transformer_blocks.3.attn.c_k_norm.weight"} <= set(mmdit)
    assert "transformer_blocks.3.attn.to_out_c.weight" not in mmdit  # the last block is context pre-only
    assert "transformer_blocks.3.ff_c.ff.0.0.weight" not in mmdit
    b = tiny_batch()
    assert dit(b["x"], b["cond"], b["text"], b["time"], mask=b["mask"]).isfinite().all()


@pytest.mark.parametrize(("skip", "skip_keys"), [("concat", 2), ("add", 0), ("none", 0)])
def test_unett_skip_types(skip: str, skip_keys: int) -> None:
    model = tiny_backbone("unett", skip_connect_type=skip)
    assert sum(re.fullmatch(r"layers\.\d+\.0\.weight", k) is not None for k in model.state_dict()) == skip_keys
    b = tiny_batch()
    out = model(b["x"], b["cond"], b["text"], b["time"], mask=b["mask"])
    assert out.shape == (2, 48, 100) and out.isfinite().all()


@pytest.mark.parametrize("name", BACKBONES)
def test_scalar_time_and_blocks(name: str) -> None:
    model = tiny_backbone(name).eval()
    b = tiny_batch()
    with torch.no_grad():
        scalar = model(b["x"], b["cond"], b["text"], torch.tensor(0.4))
        vector = model(b["x"], b["cond"], b["text"], torch.full((2,), 0.4))
    assert torch.equal(scalar, vector)
    assert isinstance(model.blocks, torch.nn.ModuleList) and len(model.blocks) == 4
