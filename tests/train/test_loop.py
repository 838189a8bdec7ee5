"""The training loop on the demo data with the debug_tiny recipe: learning, exact resume, skipping bad updates,
optimizations switched from the config, signals, export and the command line."""

from __future__ import annotations

import dataclasses
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from support.trainer_helpers import BASE, Record, assert_same_tensors, final_state, make, recording

import f5lite.train.trainer as trainer_module
from f5lite.config import compose_config
from f5lite.train.schedule import lr_factor


@pytest.mark.heavy
def test_loss_decreases_on_demo_data(tmp_path: Path) -> None:
    record = Record()
    recording(make(tmp_path, "optim.max_updates=40", "optim.lr=2e-3"), record).fit()
    first, last = sum(record.losses[:8]) / 8, sum(record.losses[-8:]) / 8
    assert last < 0.8 * first, (first, last)
    assert (tmp_path / "run" / "export" / "model.safetensors").is_file()


def test_non_finite_update_is_skipped_by_optimizer_schedule_and_ema(tmp_path: Path) -> None:
    trainer = make(tmp_path, "optim.max_updates=10")
    batch = next(iter(trainer.data.loader))
    for _ in range(4):  # past the EMA's copy phase (update_after=2): the average now differs from the weights
        trainer.train_update([batch])
    model = {k: v.clone() for k, v in trainer.network.state_dict().items()}
    ema = {k: v.clone() for k, v in trainer.ema.state_dict().items()}
    assert any(not torch.equal(ema[k], model[k]) for k in ema)
    optimizer = trainer.optimizer.state_dict()
    ema_step = int(trainer.ema.step)
    good = make(tmp_path, "optim.max_updates=10", name="good")  # the same updates, without the bad one
    for _ in range(4):
        good.train_update([batch])

    poisoned = dataclasses.replace(batch, mel=batch.mel.clone())
    poisoned.mel[0, 0, 0] = float("nan")
    trainer.train_update([poisoned])
    assert (trainer.applied.item(), trainer.bad_total.item(), trainer.bad_streak.item()) == (4, 1, 1)
    assert_same_tensors(trainer.network.state_dict(), model, "weights")
    assert_same_tensors(trainer.ema.state_dict(), ema, "EMA weights")
    assert int(trainer.ema.step) == ema_step  # the EMA's decay schedule did not advance either
    after = trainer.optimizer.state_dict()
    for index, state in optimizer["state"].items():  # moments and AdamW's step count
        assert_same_tensors(after["state"][index], state, f"optimizer state of parameter {index}")

    # The next update uses the learning rate and EMA decay the skipped one would have used: it matches the
    # run that never saw the bad batch, except for the step's random draws (seeded by the update count).
    trainer.train_update([batch])
    good.train_update([batch])
    assert trainer.optimizer.param_groups[0]["lr"] == good.optimizer.param_groups[0]["lr"]
    assert trainer.optimizer.param_groups[0]["lr"] != lr_factor(5, 4, 10) * 1e-3
    assert int(trainer.ema.step) == int(good.ema.step) == 5 and trainer.ema.current_decay() == good.ema.current_decay()
    assert trainer.bad_streak.item() == 0


def test_too_many_bad_updates_stop_the_run(tmp_path: Path) -> None:
    trainer = make(tmp_path, "optim.max_updates=10", "optim.max_bad_updates=2", "optim.lr=1e30")
    with pytest.raises(trainer_module.BadUpdatesError, match="updates in a row had a non-finite"):
        trainer.fit()


def test_a_bad_run_ended_between_log_checks_still_stops(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Updates 1 and 2 are bad, 3 and 4 good; the only check is after update 4.
    trainer = make(tmp_path, "optim.max_updates=8", "optim.max_bad_updates=2", "logger.every=4")
    original = trainer.train_update

    def poisoned(batches: list) -> torch.Tensor:
        if trainer.update < 2:
            batches[0].mel[0, 0, 0] = float("nan")
        return original(batches)

    trainer.train_update = poisoned  # type: ignore[method-assign]
    with caplog.at_level("WARNING"), pytest.raises(trainer_module.BadUpdatesError, match="^2 updates in a row"):
        trainer.fit()
    assert trainer.update == 4 and trainer.bad_streak.item() == 0 and trainer.bad_total.item() == 2
    skipped = [r.getMessage() for r in caplog.records if "skipped: non-finite" in r.getMessage()]
    assert [m.split(" skipped")[0] for m in skipped] == ["update 1", "update 2"]
    assert all(".ogg" in m or ".wav" in m or ".flac" in m for m in skipped)  # the batch's files are named


def test_export_runs_once_at_the_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = trainer_module.export_run
    monkeypatch.setattr(trainer_module, "export_run", lambda *a, **kw: calls.append(a) or real(*a, **kw))
    make(tmp_path, "optim.max_updates=4", "ckpt.every=1").fit(until=2)
    assert calls == []
    make(tmp_path, "optim.max_updates=4", "ckpt.every=1").fit()
    assert len(calls) == 1


def test_sigterm_saves_and_exits_143(tmp_path: Path) -> None:
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "f5lite.train", *BASE, f"run_dir={run}", "optim.max_updates=100000", "ckpt.every=3"]
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not (run / "checkpoints" / "latest").exists() and time.time() < deadline:  # training is under way
        time.sleep(0.1)
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=120)
    assert child.returncode == 143, err[-2000:]
    saved = (run / "checkpoints" / "latest").read_text().strip()
    step = int(saved.split("-")[1])
    assert step > 0 and f"checkpoint at update {step}" in err


@pytest.mark.parametrize(
    ("override", "message"),
    [("perf.ac.every_n=-1", "perf.ac.every_n=-1"), ("+recipe=nope", "nope")],
)
def test_bad_override_is_one_line(tmp_path: Path, override: str, message: str) -> None:
    args = [*BASE, f"run_dir={tmp_path}/run", override]
    if override.startswith("+recipe"):
        args = [a for a in args if not a.startswith("+recipe")] + [override]
    proc = subprocess.run([sys.executable, "-m", "f5lite.train", *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr


def test_memory_budget_with_dropout_is_refused() -> None:
    with pytest.raises(ValueError, match="perf.memory_budget=0.5 with model.dropout=0.1 gives wrong gradients"):
        compose_config([*BASE, "perf.compile=true", "perf.memory_budget=0.5"])


def test_tensorboard_logger_writes_events(tmp_path: Path) -> None:
    make(tmp_path, "optim.max_updates=2", "logger.backend=tensorboard").fit()
    assert list((tmp_path / "run" / "logs").glob("events.out.tfevents.*"))


@pytest.mark.parametrize(("backend", "fused"), [("auto", True), ("math", False)])
def test_sdpa_backend_choice(tmp_path: Path, backend: str, fused: bool) -> None:
    trainer = make(tmp_path, f"perf.sdpa_backend={backend}")
    batch = next(iter(trainer.data.loader))
    with torch.profiler.profile() as prof:
        trainer.train_update([batch])
    names = {event.name for event in prof.events()}
    assert ("aten::_scaled_dot_product_flash_attention_for_cpu" in names) == fused
    assert "aten::_scaled_dot_product_attention_math" in names or fused


def test_run_dir_and_its_exports_synthesize_the_same_audio(tmp_path: Path) -> None:
    """`f5lite-infer model=RUN_DIR`, the end-of-training export and `f5lite-export --format f5tts` agree."""
    import soundfile as sf

    from f5lite.infer.cli import main as infer
    from f5lite.infer.loading import load_model
    from f5lite.train.export import main as export

    run = tmp_path / "run"
    make(tmp_path, "optim.max_updates=5").fit()
    assert export([str(run), "--out", str(tmp_path / "official"), "--format", "f5tts"]) == 0
    # Every way of reading the run gives the EMA weights (the run is past the EMA's copy phase, so they differ
    # from the online weights).
    ckpt = final_state(run, 5)
    assert any(not torch.equal(ckpt["ema"][k], ckpt["model"][k]) for k in ckpt["ema"])
    exported = {k.removeprefix("transformer."): v for k, v in load_file(run / "export" / "model.safetensors").items()}
    official = load_file(tmp_path / "official" / "model_5.safetensors")
    official = {k.removeprefix("ema_model.transformer."): v for k, v in official.items() if k.startswith("ema_model.")}
    from_run = load_model(run).backbone.state_dict()
    for weights in (exported, official, from_run):
        assert_same_tensors(weights, ckpt["ema"], "EMA weights")
    ref = next((Path(__file__).parents[2] / "f5lite" / "demo_data" / "audio").rglob("*.ogg"))
    common = [
        f"ref_audio={ref}",
        "ref_text=The kettle started.",
        "text=A test.",
        "sample.vocoder=griffin_lim",
        "sample.seed=3",
    ]
    common += ["sample.steps=2", "device=cpu"]
    wavs = {}
    sources = {
        "run": [f"model={run}"],
        "export": [f"model={run / 'export'}"],
        "official": [
            f"model={tmp_path / 'official' / 'model_5.safetensors'}",
            "recipe=debug_tiny",
            f"vocab={tmp_path / 'official' / 'vocab.txt'}",
        ],
    }
    for name, model in sources.items():
        out = tmp_path / f"{name}.wav"
        assert infer([*model, *common, f"output={out}"]) == 0
        wavs[name], rate = sf.read(out)
        assert rate == 24000 and len(wavs[name]) > 0
    assert (wavs["run"] == wavs["export"]).all() and (wavs["run"] == wavs["official"]).all()


def test_bf16_autocast_keeps_fp32_weights_and_loss(tmp_path: Path) -> None:
    trainer = make(tmp_path, "perf.precision=bf16")
    batch = next(iter(trainer.data.loader))
    seen = []
    hook = trainer.network.proj_out.register_forward_hook(lambda m, i, o: seen.append(o.dtype))
    loss = trainer.train_update([batch])
    hook.remove()
    assert seen == [torch.bfloat16]  # the matmuls ran in bf16
    assert loss.dtype == torch.float32 and torch.isfinite(loss)
    assert all(p.dtype == torch.float32 for p in trainer.network.parameters())
    assert trainer.applied.item() == 1


def test_export_of_an_earlier_step_in_bf16(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from f5lite.train.export import main as export

    run = tmp_path / "run"
    make(tmp_path, "optim.max_updates=6", "ckpt.every=2", "ckpt.keep_last=3").fit()
    capsys.readouterr()  # the training's progress bar
    out = tmp_path / "step4"
    assert export([str(run), "--out", str(out), "--step", "4", "--dtype", "bf16"]) == 0
    weights = load_file(out / "model.safetensors")
    step4, step6 = final_state(run, 4), final_state(run, 6)
    assert weights["transformer.proj_out.weight"].dtype == torch.bfloat16  # (buffers such as inv_freq stay exact)
    for key, value in weights.items():  # step 4's EMA, not step 6's
        assert torch.equal(value, step4["ema"][key.removeprefix("transformer.")].to(value.dtype)), key
    key = "proj_out.weight"
    for other in (step4["model"][key], step6["ema"][key]):  # neither the online weights nor another step's EMA
        assert not torch.equal(weights["transformer." + key], other.to(torch.bfloat16))
    assert export([str(run), "--out", str(tmp_path / "x"), "--step", "3"]) == 2  # no checkpoint of step 3
    assert export([str(run), "--out", str(tmp_path / "y"), "--dtype", "int8"]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 2 and all(e.startswith("f5lite-export: ") for e in errors) and "int8" in errors[1]


def test_exports_replace_only_earlier_exports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An export never mixes with, nor deletes, other files: it replaces an earlier export whole, or refuses."""
    from f5lite.train.export import main as export

    run = tmp_path / "run"
    make(tmp_path, "optim.max_updates=4", "ckpt.every=2", "ckpt.keep_last=3").fit()
    out = tmp_path / "for_f5tts"
    assert export([str(run), "--out", str(out), "--format", "f5tts", "--step", "2"]) == 0
    assert export([str(run), "--out", str(out), "--format", "f5tts"]) == 0  # replaces the step-2 export whole
    assert sorted(p.name for p in out.iterdir()) == ["model_4.safetensors", "vocab.txt"]
    assert export([str(run), "--out", str(out)]) == 0  # another format over an export of ours: fine
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    capsys.readouterr()
    for fmt in ("f5tts", "f5lite"):
        assert export([str(run), "--out", str(busy), "--format", fmt]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 2 and all("non-empty directory that is not an export" in e for e in errors)
    assert [p.name for p in busy.iterdir()] == ["notes.txt"] and not list(tmp_path.glob(".*tmp*"))


def test_every_logging_window_is_a_line_of_train_jsonl_and_a_resume_appends(tmp_path: Path) -> None:
    record = Record()
    recording(make(tmp_path, "optim.max_updates=6", "ckpt.every=6"), record).fit()  # logger.every=2
    path = tmp_path / "run" / "logs" / "train.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [row["update"] for row in rows] == [2, 4, 6]
    for row in rows:
        assert row["loss"] > 0 and row["lr"] > 0 and row["frames_per_s"] > 0 and row["skipped_updates"] == 0
    for row, window in zip(rows, (record.losses[0:2], record.losses[2:4], record.losses[4:6]), strict=True):
        assert row["loss"] == pytest.approx(sum(window) / 2, rel=1e-5)  # the window's mean loss
    make(tmp_path, "optim.max_updates=8", "ckpt.every=6").fit()
    assert [json.loads(line)["update"] for line in path.read_text().splitlines()] == [2, 4, 6, 8]
