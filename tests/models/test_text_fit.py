"""`model.text_fit=spread`: each token stretched evenly over its utterance's frames (ZipVoice's average upsampling),
per sample of a batch, through CFG's text drop, the same alone and batched; F5-TTS's `pad` unchanged; the config
key checked; no F5-TTS export of a spread model."""

from __future__ import annotations

import pytest
import torch

from f5lite.config import compose_config
from f5lite.models.dit import DiT
from f5lite.models.text_embed import FrameTextEmbedding


def _embedding(fit: str, conv_layers: int = 0) -> FrameTextEmbedding:
    torch.manual_seed(0)
    return FrameTextEmbedding(
        num_embeds=12, text_dim=8, mask_padding=True, conv_layers=conv_layers, max_pos=64, fit=fit
    )


def test_each_frame_shows_the_token_spoken_there_evenly() -> None:
    embed = _embedding("spread")
    text = torch.tensor([[3, 5, 7, -1, -1], [1, 2, 3, 4, 5]])
    lens = torch.tensor([7, 10])
    out = embed(text, 12, lens=lens)
    table = embed.text_embed.weight
    # Sample 0: 3 tokens over 7 frames -> floor(i * 3 / 7) = 0 0 0 1 1 2 2; sample 1: 5 over 10 -> two frames each.
    expected0 = [3, 3, 3, 5, 5, 7, 7]
    expected1 = [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    for i, token in enumerate(expected0):
        torch.testing.assert_close(out[0, i], table[token + 1], rtol=0, atol=0)
    for i, token in enumerate(expected1):
        torch.testing.assert_close(out[1, i], table[token + 1], rtol=0, atol=0)
    assert out[0, 7:].abs().sum() == 0 and out[1, 10:].abs().sum() == 0, "frames past a sample's length are zero"


def test_without_a_mask_the_text_covers_every_frame_and_pad_is_f5tts_s_layout() -> None:
    spread, pad = _embedding("spread"), _embedding("pad")
    text = torch.tensor([[3, 5]])
    table = spread.text_embed.weight
    out = spread(text, 4)
    assert [int(torch.argmin((table - row).abs().sum(-1))) - 1 for row in out[0]] == [3, 3, 5, 5]
    # pad: token j on frame j, the filler after the text.
    torch.testing.assert_close(pad(text, 4)[0], pad.text_embed.weight[[4, 6, 0, 0]], rtol=0, atol=0)


def test_a_dropped_text_is_filler_on_the_real_frames() -> None:
    embed = _embedding("spread")
    out = embed(torch.tensor([[3, 5, 7]]), 6, drop_text=True, lens=torch.tensor([4]))
    filler = embed.text_embed.weight[0]
    torch.testing.assert_close(out[0, :4], filler.expand(4, -1), rtol=0, atol=0)
    assert out[0, 4:].abs().sum() == 0


def test_a_sample_is_embedded_the_same_alone_and_in_a_batch() -> None:
    """Sampling a batch passes each utterance's frame mask; alone, an utterance fills its frames (no mask)."""
    embed = _embedding("spread", conv_layers=2)
    long, short = torch.tensor([2, 4, 6, 8, 10, 1]), torch.tensor([9, 3, 5])
    batch = torch.full((2, 6), -1)
    batch[0], batch[1, :3] = long, short
    mask = torch.arange(20)[None, :] < torch.tensor([20, 11])[:, None]
    together = embed(batch, 20, lens=mask.sum(1))
    torch.testing.assert_close(together[0], embed(long[None], 20)[0], rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(together[1, :11], embed(short[None], 11)[0], rtol=1e-6, atol=1e-6)


def test_a_spread_dit_trains_and_keeps_f5tts_s_keys() -> None:
    kwargs = {
        "dim": 32,
        "depth": 1,
        "heads": 2,
        "dim_head": 16,
        "text_num_embeds": 10,
        "text_dim": 16,
        "conv_layers": 1,
    }
    spread, pad = DiT(**kwargs, text_fit="spread"), DiT(**kwargs)
    assert spread.state_dict().keys() == pad.state_dict().keys()
    x = torch.randn(2, 9, 100)
    out = spread(x, x, torch.tensor([[1, 2, 3], [4, 5, -1]]), torch.rand(2), mask=torch.ones(2, 9, dtype=torch.bool))
    out.pow(2).mean().backward()
    assert spread.text_embed.text_embed.weight.grad is not None


def test_the_config_key_is_checked() -> None:
    assert compose_config(["+recipe=speak_cpu"]).model.text_fit == "spread"
    assert compose_config([]).model.text_fit == "pad"
    with pytest.raises(ValueError, match=r"model\.text_fit"):
        compose_config(["model.text_fit=stretch"])
    with pytest.raises(ValueError, match="text fit 'stretch' is not valid"):
        _embedding("stretch")
