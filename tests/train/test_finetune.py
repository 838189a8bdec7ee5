"""Fine-tuning official weights: vocab growth, EMA restart, architecture guard, LoRA with merged export."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from support.f5tts_fixtures import ASSETS, overrides
from support.trainer_helpers import Record, assert_same_tensors, final_state, recording

from f5lite import build_backbone
from f5lite.config import compose_config
from f5lite.infer.cli import main as infer
from f5lite.models.checkpoint import PREFIX
from f5lite.prepare import PrepareOptions, prepare
from f5lite.storage.lora import merge_lora
from f5lite.storage.model_sources import TEXT_TABLE
from f5lite.train import Trainer
from f5lite.train.finetune import grow_text_table

DEMO = Path(__file__).parents[2] / "f5lite" / "demo_data"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Twelve demo utterances prepared against the fixture's 40-token vocab (only capitals A-H, digits, ...)."""
    root = tmp_path_factory.mktemp("finetune")
    rows = (DEMO / "metadata.csv").read_text().splitlines()
    lines = ["audio_file|text"] + [f"{DEMO / r.split('|')[0]}|{r.split('|')[1]}" for r in rows[1:13]]
    (root / "metadata.csv").write_text("\n".join(lines) + "\n")
    prepare(root / "metadata.csv", root / "data", PrepareOptions(vocab=ASSETS / "vocab.txt"))
    return root / "data"


def test_vocab_grows_and_old_rows_are_kept(data_dir: Path, tmp_path: Path) -> None:
    official = {k[len("ema_model." + PREFIX) :]: v for k, v in load_file(ASSETS / "dit_tiny.safetensors").items()}
    trainer = Trainer(compose_config(overrides(data_dir, tmp_path / "run")))
    table = trainer.network.state_dict()[TEXT_TABLE]
    vocab_rows = len((data_dir / "vocab.txt").read_text().splitlines()) + 1
    assert table.shape[0] == vocab_rows > official[TEXT_TABLE].shape[0] == 41
    assert torch.equal(table[:41], official[TEXT_TABLE])  # unchanged until the first update
    for key, value in official.items():
        if key != TEXT_TABLE and key in trainer.network.state_dict():
            assert torch.equal(trainer.network.state_dict()[key], value), key
    assert trainer.ema.step == 0  # the checkpoint's EMA step (1000) is not inherited
    assert torch.equal(trainer.ema.state_dict()[TEXT_TABLE], table)
    trainer.fit()
    assert (tmp_path / "run" / "vocab.txt").read_text() == (data_dir / "vocab.txt").read_text()
    assert (tmp_path / "run" / "export" / "vocab.txt").read_text() == (data_dir / "vocab.txt").read_text()
    wav = tmp_path / "out.wav"
    ref = DEMO / "audio" / "us_male" / "000_us_male.ogg"
    args = [f"model={tmp_path / 'run' / 'export'}", f"ref_audio={ref}", "ref_text=The kettle.", "text=Hello there."]
    assert (
        infer([*args, f"output={wav}", "sample.vocoder=griffin_lim", "sample.steps=2", "sample.seed=1", "device=cpu"])
        == 0
    )
    assert wav.stat().st_size > 1000


def test_trainer_grows_the_table_at_the_trained_rows_statistics(data_dir: Path, tmp_path: Path) -> None:
    """Through the trainer: new rows follow the trained rows' per-channel mean and spread, not N(0, 1)."""
    weights = load_file(ASSETS / "dit_tiny.safetensors")
    key = "ema_model." + PREFIX + TEXT_TABLE
    g = torch.Generator().manual_seed(3)
    mean, std = torch.linspace(-0.5, 0.5, 32), torch.linspace(0.01, 0.05, 32)  # far from N(0, 1)
    weights[key] = torch.randn(weights[key].shape, generator=g) * std + mean
    shifted = tmp_path / "shifted.safetensors"
    save_file(weights, shifted)
    trainer = Trainer(compose_config([*overrides(data_dir, tmp_path / "run"), f"init.weights={shifted}"]))
    table = trainer.network.state_dict()[TEXT_TABLE]
    assert torch.equal(table[:41], weights[key])
    new = table[41:]
    assert new.shape[0] >= 20
    z = (new - weights[key][1:].mean(0)) / weights[key][1:].std(0)  # standardized by the trained rows' statistics
    assert abs(z.mean().item()) < 0.2 and 0.8 < z.std().item() < 1.2, (z.mean().item(), z.std().item())
    assert torch.equal(trainer.ema.state_dict()[TEXT_TABLE], table)


def test_new_rows_have_the_trained_rows_statistics() -> None:
    g = torch.Generator().manual_seed(0)
    trained = torch.randn(2000, 8, generator=g) * torch.linspace(0.1, 2.0, 8) + torch.linspace(-1, 1, 8)
    grown = grow_text_table(trained, 6000, torch.Generator().manual_seed(1))
    assert torch.equal(grown[:2000], trained)
    torch.testing.assert_close(grown[2000:].mean(0), trained[1:].mean(0), atol=0.06, rtol=0)
    torch.testing.assert_close(grown[2000:].std(0), trained[1:].std(0), atol=0.0, rtol=0.05)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("model.depth=3", "model.depth: checkpoint 4, config 3"),
        ("model.ff_mult=4", "model.ff_mult: checkpoint 2.0, config 4.0"),
        ("model.heads=2", "model.heads x dim_head: checkpoint 64, config 32"),
        ("model.qk_norm=rms_norm", "model.qk_norm: checkpoint none, config set"),
        ("model.long_skip_connection=true", "model.long_skip_connection: checkpoint False, config True"),
    ],
)
def test_mismatched_architecture_names_the_dimension(data_dir: Path, tmp_path: Path, change: str, message: str) -> None:
    with pytest.raises(ValueError, match=r"another architecture than the config: .*" + re.escape(message)):
        Trainer(compose_config([*overrides(data_dir, tmp_path / "run"), change]))


def test_unett_architecture_reveals_ff_mult_and_width() -> None:
    from f5lite.train.finetune import architecture_of

    unett = build_backbone("unett", dim=64, depth=4, heads=4, dim_head=16, ff_mult=3, text_num_embeds=10, text_dim=32)
    arch = architecture_of(unett.state_dict())
    assert (arch["depth"], arch["ff_mult"], arch["heads x dim_head"]) == (4, 3.0, 64)


def test_data_vocab_must_extend_the_pretrained(data_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "other_vocab.txt"
    other.write_text(" \nZ\n")
    with pytest.raises(ValueError, match="does not extend"):
        Trainer(compose_config([*overrides(data_dir, tmp_path / "run"), f"init.vocab={other}"]))


def test_lora_trains_adapters_only_resumes_and_merges(data_dir: Path, tmp_path: Path) -> None:
    run = tmp_path / "lora"
    lora = ["finetune.lora.rank=2", "finetune.lora.alpha=3"]  # scaling alpha / rank = 1.5
    args = [*overrides(data_dir, run, *lora, "optim.max_updates=4", "optim.lr=1e-2")]
    trainer = Trainer(compose_config(args))
    base = {k: v.clone() for k, v in trainer.network.state_dict().items() if "lora_" not in k}
    trainable = {n: p for n, p in trainer.network.named_parameters() if p.requires_grad}
    adapters = [n for n in trainable if "lora_" in n]
    # 4 blocks x (q, k, v, out: 64 -> 64, ff: 64 -> 128 -> 64) at rank 2; plus the grown text table.
    per_block = 4 * (2 * 64 + 2 * 64) + (2 * 64 + 2 * 128) + (2 * 128 + 2 * 64)
    assert sum(trainable[n].numel() for n in adapters) == 4 * per_block
    assert set(trainable) == set(adapters) | {TEXT_TABLE}
    staged = Record()
    recording(trainer, staged).fit(until=2)
    resumed = Trainer(compose_config(args))
    assert resumed.update == 2
    recording(resumed, staged).fit()
    # The same as without the interruption: the adapters and their average came back from the checkpoint.
    straight = Record()
    recording(Trainer(compose_config(overrides(data_dir, tmp_path / "straight", *lora, "optim.max_updates=4",
                                               "optim.lr=1e-2"))), straight).fit()  # fmt: skip
    assert staged.losses == straight.losses
    for group in ("model", "ema", "optimizer"):
        assert_same_tensors(final_state(run, 4)[group], final_state(tmp_path / "straight", 4)[group], group)
    after = resumed.network.state_dict()
    for key, value in base.items():
        if key != TEXT_TABLE:
            assert torch.equal(after[key], value), key  # frozen base: bit-identical
    ckpt = load_file(run / "checkpoints" / "step-00000004" / "model.safetensors")
    assert set(ckpt) == set(trainable)  # adapters (and the grown table) only
    exported = load_file(run / "export" / "model.safetensors")
    ema = load_file(run / "checkpoints" / "step-00000004" / "ema.safetensors")
    state = {**after, **ema}
    merged = merge_lora(state, scaling=1.5)
    key = "transformer_blocks.1.attn.to_q.weight"
    a, b = (
        ema["transformer_blocks.1.attn.to_q.lora_A.default.weight"],
        ema["transformer_blocks.1.attn.to_q.lora_B.default.weight"],
    )
    expected = base["transformer_blocks.1.attn.to_q.base_layer.weight"] + 1.5 * (b @ a)
    torch.testing.assert_close(exported[PREFIX + key], expected, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(merged[key], expected, atol=1e-6, rtol=1e-6)
    assert not any("lora" in k for k in exported)


def test_lora_needs_pretrained_weights() -> None:
    with pytest.raises(ValueError, match="LoRA adapts pretrained weights"):
        compose_config(["+recipe=debug_tiny", "finetune.lora.rank=4"])


def test_lora_with_activation_checkpointing_and_compile(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import f5lite.train.setup as train_setup

    real = train_setup.apply_compile
    monkeypatch.setattr(train_setup, "apply_compile", lambda m, **kw: real(m, **{**kw, "backend": "aot_eager"}))
    torch._dynamo.reset()
    # torch's dropout on both sides: compiled blocks keep it, eager on a CPU would take the cheap-mask kernel.
    plain = Trainer(compose_config(overrides(data_dir, tmp_path / "a", "finetune.lora.rank=2", "perf.dropout=torch")))
    fast = Trainer(
        compose_config(
            overrides(data_dir, tmp_path / "b", "finetune.lora.rank=2", "perf.ac.mode=full", "perf.compile=true")
        )
    )
    batch = next(iter(plain.data.loader))
    torch.testing.assert_close(fast.train_update([batch]), plain.train_update([batch]), atol=1e-5, rtol=1e-5)
    for (name, p), q in zip(fast.network.named_parameters(), plain.network.parameters(), strict=True):
        torch.testing.assert_close(p, q, atol=1e-5, rtol=1e-5, msg=name)
    torch._dynamo.reset()


@pytest.mark.heavy
def test_adapter_only_export(data_dir: Path, tmp_path: Path) -> None:
    import json

    from f5lite.train.export import main as export

    run = tmp_path / "run"
    args = overrides(data_dir, run, "finetune.lora.rank=2", "finetune.lora.alpha=4", "finetune.lora.export=adapter")
    Trainer(compose_config(args)).fit()
    files = {p.name for p in (run / "export").iterdir()}
    assert files == {"adapter_model.safetensors", "adapter_config.json", "vocab.txt"}
    adapters = load_file(run / "export" / "adapter_model.safetensors")
    assert all("lora_" in k or k == TEXT_TABLE for k in adapters) and not any(".default" in k for k in adapters)
    config = json.loads((run / "export" / "adapter_config.json").read_text())
    assert config["r"] == 2 and config["lora_alpha"] == 4
    assert export([str(run), "--out", str(tmp_path / "again")]) == 0  # on demand, same format
    assert (tmp_path / "again" / "adapter_model.safetensors").is_file()
    # The adapter export loads (adapters folded into the base it names) to exactly the run's merged weights.
    from f5lite.storage import SourceKind, load_source

    adapter, merged = load_source(run / "export"), load_source(run)
    assert adapter.kind is SourceKind.ADAPTER and merged.kind is SourceKind.RUN
    assert adapter.model == merged.model and adapter.vocab.tokens == merged.vocab.tokens  # type: ignore[union-attr]
    for key, value in merged.backbone.state_dict().items():
        torch.testing.assert_close(adapter.backbone.state_dict()[key], value, rtol=0, atol=0, msg=key)
    wav = tmp_path / "adapter.wav"
    ref = DEMO / "audio" / "us_male" / "000_us_male.ogg"
    args = [f"model={run / 'export'}", f"ref_audio={ref}", "ref_text=The kettle.", "text=Hello there."]
    assert (
        infer([*args, f"output={wav}", "sample.vocoder=griffin_lim", "sample.steps=2", "sample.seed=1", "device=cpu"])
        == 0
    )
