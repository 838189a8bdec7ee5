"""Reading official checkpoints (.safetensors and .pt, every prefix F5-TTS tolerates) and strict loading errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from support.tiny_models import tiny_backbone

import f5lite
from f5lite.models import CheckpointError, load_backbone_weights, to_f5tts_layout


def test_round_trip_through_official_layout(tmp_path: Path) -> None:
    model = tiny_backbone("dit")
    path = tmp_path / "model_100.safetensors"
    save_file(to_f5tts_layout(model.state_dict(), step=100), path)

    raw = load_file(path)
    assert raw["initted"].item() is True and raw["step"].item() == 100
    assert "ema_model.transformer.rotary_embed.inv_freq" in raw
    assert all(k.startswith("ema_model.transformer.") for k in raw if k not in ("initted", "step"))

    loaded = f5lite.load_f5tts_state_dict(path)
    assert set(loaded) == {"transformer." + k for k in model.state_dict()}
    for key, value in model.state_dict().items():
        assert torch.equal(loaded["transformer." + key], value)
    fresh = tiny_backbone("dit", seed=5)
    load_backbone_weights(fresh, loaded)
    for key, value in model.state_dict().items():
        assert torch.equal(fresh.state_dict()[key], value)


@pytest.mark.parametrize("name", ["dit", "mmdit", "unett"])
def test_pt_training_checkpoint_with_wrapper_prefixes(tmp_path: Path, name: str) -> None:
    """A training .pt: EMA and online weights, compile/DDP prefixes, legacy mel buffers, bookkeeping."""
    ema, online = tiny_backbone(name, seed=1), tiny_backbone(name, seed=2)
    ema_sd = {f"ema_model.transformer._orig_mod.{k}": v for k, v in ema.state_dict().items()}
    ema_sd |= {"initted": torch.tensor(True), "step": torch.tensor(7)}
    ema_sd["ema_model.mel_spec.mel_stft.mel_scale.fb"] = torch.zeros(3)
    online_sd = {f"module.transformer.{k}": v for k, v in online.state_dict().items()}
    path = tmp_path / "model_last.pt"
    torch.save({"ema_model_state_dict": ema_sd, "model_state_dict": online_sd, "update": 7}, path)

    for use_ema, source in ((True, ema), (False, online)):
        target = tiny_backbone(name, seed=3)
        load_backbone_weights(target, f5lite.load_f5tts_state_dict(path, use_ema=use_ema))
        for key, value in source.state_dict().items():
            assert torch.equal(target.state_dict()[key], value)


def test_pruned_pt_without_online_weights_says_so(tmp_path: Path) -> None:
    path = tmp_path / "pruned.pt"
    torch.save({"ema_model_state_dict": {"ema_model.transformer.proj_out.bias": torch.zeros(100)}}, path)
    with pytest.raises(CheckpointError, match="no model_state_dict; try use_ema=True"):
        f5lite.load_f5tts_state_dict(path, use_ema=False)


def test_pt_is_read_with_weights_only(tmp_path: Path) -> None:
    """Arbitrary pickled objects are refused, not executed."""
    path = tmp_path / "evil.pt"
    torch.save({"model": Path("/")}, path)
    with pytest.raises(CheckpointError, match="objects other than tensors, which are not loaded"):
        f5lite.load_f5tts_state_dict(path)


@pytest.mark.parametrize(
    ("filename", "content", "message"),
    [
        ("missing.safetensors", None, "does not exist"),
        ("corrupt.safetensors", b"\x00" * 64, "not a readable .safetensors file"),
        ("corrupt.pt", b"not a zip file", "not a readable torch file"),
    ],
)
def test_unreadable_checkpoints(tmp_path: Path, filename: str, content: bytes | None, message: str) -> None:
    path = tmp_path / filename
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(CheckpointError, match=message) as err:
        f5lite.load_f5tts_state_dict(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_vocab_size_mismatch_points_to_vocab_extension() -> None:
    small = tiny_backbone("dit", text_num_embeds=30)
    with pytest.raises(CheckpointError) as err:
        load_backbone_weights(tiny_backbone("dit"), small.state_dict())
    message = str(err.value)
    assert "text_embed.text_embed.weight has shape (31, 32) in the checkpoint, (41, 32) here" in message
    assert "vocab size differs (30 tokens in the checkpoint, 40 here)" in message
    assert "--vocab" in message


def test_missing_and_unexpected_keys_are_listed() -> None:
    sd = {f"transformer.{k}": v for k, v in tiny_backbone("dit").state_dict().items()}
    del sd["transformer.proj_out.bias"]
    sd["transformer.extra.weight"] = torch.zeros(1)
    with pytest.raises(CheckpointError, match=r"missing keys: proj_out\.bias; unexpected keys: extra\.weight"):
        load_backbone_weights(tiny_backbone("dit"), sd)


def test_wrong_backbone_family_is_refused() -> None:
    with pytest.raises(CheckpointError, match="missing keys: .*unexpected keys"):
        load_backbone_weights(tiny_backbone("unett"), tiny_backbone("dit").state_dict())
