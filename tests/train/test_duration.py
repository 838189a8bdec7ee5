"""The duration predictor end to end: which estimate sizes the speech (predictor present / absent / `duration=rule` /
a predictor directory / explicit seconds / speed), exports with and without it, training it alongside the flow model
and alone (checkpoints, exact resume, export), and `f5lite-eval`'s duration errors."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

import pytest
import soundfile as sf
import torch
from safetensors.torch import load_file
from support.eval_cli_assets import eval_rows
from support.infer_assets import GEN_TEXT, REF_TEXT, VOCAB_FILE, make_model_files, make_reference
from support.trainer_helpers import make

import f5lite
import f5lite.infer.synthesizer as synthesizer_module
from f5lite.config import compose_config
from f5lite.data.testset import write_testset
from f5lite.eval.cli import main as eval_main
from f5lite.infer.cli import main as infer_main
from f5lite.models.duration import DurationPredictor
from f5lite.sampling import SamplerOptions, estimate_duration, predicted_duration
from f5lite.storage import load_source
from f5lite.storage.duration_files import LoadedDuration, load_duration, save_duration
from f5lite.text import TextEncoder
from f5lite.train.export import export_run
from f5lite.train.trainer import Trainer

REF_FRAMES = 40  # make_reference's clip
FAST = SamplerOptions(steps=2, cfg_strength=0.0)


def _predictor(seed: int = 1) -> LoadedDuration:
    torch.manual_seed(seed)
    predictor = DurationPredictor(len(f5lite.load_vocab(VOCAB_FILE)), dim=16, depth=1, kernel_size=3)
    for param in predictor.parameters():
        torch.nn.init.normal_(param, std=0.3)
    return LoadedDuration(predictor.eval(), TextEncoder("char", f5lite.load_vocab(VOCAB_FILE)), 7)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """An old-style export (no predictor), the same model exported with one, a predictor directory, a reference."""
    root = tmp_path_factory.mktemp("duration")
    export, _ = make_model_files(root)
    loaded = load_source(export)
    with_predictor = f5lite.save_pretrained(
        root / "with", loaded.backbone, loaded.model, loaded.vocab, tokenizer="char", duration=_predictor()
    )
    alone = _predictor(seed=2)
    directory = save_duration(root / "alone", alone.predictor, "char", loaded.vocab, 3)
    return {"old": export, "with": with_predictor, "alone": directory, "ref": make_reference(root)}


def durations(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The total frames of every `sample` call the synthesizer makes (the real sampler still runs)."""
    seen: list[int] = []
    real = synthesizer_module.sample

    def spy(*args: Any, **kwargs: Any) -> torch.Tensor:
        seen.append(int(args[3]))
        return real(*args, **kwargs)

    monkeypatch.setattr(synthesizer_module, "sample", spy)
    return seen


def by_predictor(directory: Path, speed: float = 1.0) -> int:
    loaded = load_duration(directory)
    with torch.inference_mode():
        ref, gen = loaded.predictor(loaded.encoder.encode([REF_TEXT.strip(), GEN_TEXT.strip()]).ids).tolist()
    return predicted_duration(REF_FRAMES, ref, gen, speed)


RULE = estimate_duration(REF_FRAMES, REF_TEXT, GEN_TEXT)


def speak(files: dict[str, Path], model: str, seconds: float | None = None, speed: float = 1.0, **kwargs: Any) -> None:
    synth = f5lite.Synthesizer.from_pretrained(files[model], vocoder="griffin_lim", **kwargs)
    options = SamplerOptions(steps=2, cfg_strength=0.0, speed=speed)
    synth.synthesize(GEN_TEXT, str(files["ref"]), REF_TEXT, options, seed=0, seconds=seconds)


def test_a_predictor_in_the_export_sizes_the_speech_by_default(files, monkeypatch) -> None:
    seen = durations(monkeypatch)
    speak(files, "with")
    assert seen == [by_predictor(files["with"])]
    assert seen != [RULE]  # otherwise the test could not tell them apart


def test_duration_rule_forces_the_byte_ratio_rule(files, monkeypatch) -> None:
    seen = durations(monkeypatch)
    speak(files, "with", duration="rule")
    assert seen == [RULE]


def test_an_old_export_without_a_predictor_loads_and_uses_the_rule(files, monkeypatch) -> None:
    assert load_source(files["old"]).duration is None
    seen = durations(monkeypatch)
    speak(files, "old")
    assert seen == [RULE]


def test_a_predictor_directory_serves_any_model(files, monkeypatch) -> None:
    seen = durations(monkeypatch)
    speak(files, "old", duration=str(files["alone"]))
    assert seen == [by_predictor(files["alone"])]
    assert seen != [by_predictor(files["with"])]


def test_speed_scales_the_predicted_length(files, monkeypatch) -> None:
    seen = durations(monkeypatch)
    speak(files, "with", speed=2.0)
    assert seen == [by_predictor(files["with"], speed=2.0)]
    assert seen[0] - REF_FRAMES == pytest.approx((by_predictor(files["with"]) - REF_FRAMES) / 2, abs=1)


def test_given_seconds_win_over_predictor_and_speed(files, monkeypatch) -> None:
    seen = durations(monkeypatch)
    speak(files, "with", seconds=1.5, speed=2.0)
    assert seen == [REF_FRAMES + round(1.5 * 24000 / 256)]


def test_given_seconds_are_shared_by_the_chunks(files, monkeypatch) -> None:
    seen = durations(monkeypatch)
    synth = f5lite.Synthesizer.from_pretrained(files["old"], vocoder="griffin_lim")
    text = "A CAB. " * 3 + "DEAF CAB, A BED, A FACE AND A BEAD."
    monkeypatch.setattr(synthesizer_module, "max_chunk_bytes", lambda *a: 12)
    synth.synthesize(text, str(files["ref"]), REF_TEXT, FAST, seed=0, seconds=3.0)
    generated = [total - REF_FRAMES for total in seen]
    assert len(generated) > 1
    assert sum(generated) == pytest.approx(3.0 * 24000 / 256, abs=len(generated))
    assert len(set(generated)) > 1  # each chunk's share follows its own estimated length


@pytest.mark.parametrize("bad", ["seconds=0", "seconds=-1", "duration=/no/such/dir", "duration=rules"])
def test_infer_refuses_bad_duration_settings_in_one_line(files, tmp_path, capsys, bad) -> None:
    args = [f"model={files['old']}", f"ref_audio={files['ref']}", f"ref_text={REF_TEXT}", f"text={GEN_TEXT}", bad]
    assert infer_main([*args, f"output={tmp_path / 'o.wav'}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and bad.split("=")[0] in err


@pytest.mark.parametrize("damage", ["json", "weights", "vocab"])
def test_broken_predictor_files_in_an_export_give_one_line(files, tmp_path, capsys, damage) -> None:
    export = tmp_path / "export"
    export.mkdir()
    for path in files["with"].iterdir():
        (export / path.name).write_bytes(path.read_bytes())
    if damage == "json":
        (export / "duration.json").write_text("{")
    elif damage == "weights":
        (export / "duration.safetensors").write_bytes(b"\0" * 10)
    else:  # a predictor copied into an export of another vocab: its ids would mean other tokens
        config = json.loads((export / "duration.json").read_text())
        config["vocab_sha256"] = "0" * 64
        (export / "duration.json").write_text(json.dumps(config))
    args = [f"model={export}", f"ref_audio={files['ref']}", f"ref_text={REF_TEXT}", f"text={GEN_TEXT}"]
    assert infer_main([*args, f"output={tmp_path / 'o.wav'}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "duration" in err and "Traceback" not in err
    assert not (tmp_path / "o.wav").exists()


# ------------------------------------------------------------------------------------------------------ training


def test_alongside_trains_checkpoints_resumes_exactly_and_exports(tmp_path) -> None:
    extra = ("duration=small", "optim.max_updates=6", "ckpt.every=3", "ckpt.keep_last=0")
    straight = make(tmp_path, *extra, name="straight")
    straight.fit()
    staged = make(tmp_path, *extra, name="staged")
    staged.fit(until=3)
    make(tmp_path, *extra, name="staged").fit()  # a new process would do the same
    final = {
        r: load_file(tmp_path / r / "checkpoints/step-00000006/duration.safetensors") for r in ("straight", "staged")
    }
    first = load_file(tmp_path / "straight/checkpoints/step-00000003/duration.safetensors")
    assert final["straight"].keys() == final["staged"].keys()
    for key, value in final["straight"].items():
        assert torch.equal(value, final["staged"][key]), key
    assert any(not torch.equal(first[k], v) for k, v in final["straight"].items())  # it did train
    export = tmp_path / "straight" / "export"
    assert (export / "duration.safetensors").is_file() and (export / "model.safetensors").is_file()
    exported = load_duration(export).predictor.state_dict()
    assert all(torch.equal(exported[k], v) for k, v in final["straight"].items())
    assert load_source(tmp_path / "straight").duration is not None


def test_without_a_predictor_the_checkpoint_and_export_have_none(tmp_path) -> None:
    make(tmp_path, "optim.max_updates=2").fit()
    assert not (tmp_path / "run" / "checkpoints" / "step-00000002" / "duration.safetensors").exists()
    assert not (tmp_path / "run" / "export" / "duration.json").exists()


def test_turning_the_predictor_on_at_resume_starts_it_fresh(tmp_path, caplog) -> None:
    make(tmp_path, "optim.max_updates=4").fit(until=2)
    with caplog.at_level(logging.WARNING):
        trainer = make(tmp_path, "optim.max_updates=4", "duration=small")
    assert "no duration predictor" in caplog.text
    trainer.fit()
    assert (tmp_path / "run" / "export" / "duration.json").is_file()


def alone(run: Path, *extra: str) -> Trainer:
    overrides = ["+recipe=duration_small", f"run_dir={run}", "optim.max_updates=12", "optim.warmup_updates=2"]
    return Trainer(compose_config([*overrides, "ckpt.every=4", "eval.every=6", "logger.every=3", *extra]))


def test_alone_trains_resumes_exactly_and_exports_a_predictor_directory(tmp_path, caplog) -> None:
    with caplog.at_level(logging.INFO):
        alone(tmp_path / "straight").fit()
    assert "val/duration_error_rule=" in caplog.text and "val/duration_error=" in caplog.text
    alone(tmp_path / "staged").fit(until=5)
    assert not (tmp_path / "staged" / "export").exists()
    alone(tmp_path / "staged").fit()
    a = load_duration(tmp_path / "straight" / "export")
    b = load_duration(tmp_path / "staged" / "export")
    assert a.trained_updates == b.trained_updates == 12
    for key, value in a.predictor.state_dict().items():
        assert torch.equal(value, b.predictor.state_dict()[key]), key
    assert sorted(p.name for p in (tmp_path / "straight" / "export").iterdir()) == [
        "duration.json", "duration.safetensors", "vocab.txt",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="trained only a duration predictor") as info:
        load_source(tmp_path / "straight")
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="no f5tts format"):
        export_run(tmp_path / "straight", tmp_path / "f5tts", fmt="f5tts")


def test_alone_reads_no_audio(tmp_path, monkeypatch) -> None:
    import f5lite.data.dataset as dataset

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("audio was read")

    monkeypatch.setattr(dataset, "load_audio", refuse)
    monkeypatch.setattr(dataset, "log_mel", refuse)
    alone(tmp_path / "run", "optim.max_updates=3", "eval.every=0").fit()
    assert (tmp_path / "run" / "export" / "duration.json").is_file()


# ------------------------------------------------------------------------------------------------------ f5lite-eval


def test_eval_reports_rule_and_predictor_duration_errors(files, tmp_path) -> None:
    rows = eval_rows(with_gt=2)
    write_testset(tmp_path / "set.txt", rows)
    audio = tmp_path / "audio"
    audio.mkdir()
    for row in rows:
        wave, rate = sf.read(row.gt_audio or row.ref_audio)
        sf.write(audio / f"{row.id}.wav", wave, rate)
    predictor = save_duration(tmp_path / "pred", DurationPredictor(54, 8, 1, 3), "char", load_vocab_demo(), 0)
    out = tmp_path / "out"
    command = [f"audio_dir={audio}", f"testset={tmp_path / 'set.txt'}", f"output={out}", "metrics=[mel]"]
    assert eval_main([*command, f"duration={predictor}"]) == 0
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    with_gt = [r for r in results if "duration_error_rule" in r]
    assert len(with_gt) == 2 and all("duration_error" in r for r in with_gt)
    summary = json.loads((out / "summary.json").read_text())["duration"]
    assert summary["used"] == "predictor" and summary["rows"] == 2
    rule = [r["duration_error_rule"] for r in with_gt]
    assert summary["median_duration_error_rule"] == pytest.approx(sum(rule) / 2)
    for row, result in zip(rows, with_gt, strict=False):
        true = f5lite.audio.mel.frames_for_samples(sf.info(row.gt_audio).frames)
        ref = f5lite.audio.mel.frames_for_samples(sf.info(row.ref_audio).frames)
        estimate = estimate_duration(ref, f5lite.infer.chunking.prepare_ref_text(row.ref_text), row.gen_text) - ref
        assert result["duration_error_rule"] == pytest.approx(abs(estimate - true) / true)
        assert math.isfinite(result["duration_error"])


def load_vocab_demo() -> f5lite.Vocab:
    from f5lite.paths import demo_dir

    return f5lite.load_vocab(demo_dir() / "vocab.txt")


# ------------------------------------------------------------------------------------------------------ failure paths


def test_sigterm_stops_a_predictor_only_run_with_a_checkpoint_it_resumes_from_exactly(tmp_path, monkeypatch) -> None:
    import os
    import signal

    from f5lite.train import TrainingStopped

    alone(tmp_path / "straight", "eval.every=0").fit()
    real_step = Trainer.optimizer_step
    calls = []

    def step_then_sigterm(self: Trainer, loss: torch.Tensor) -> torch.Tensor:
        calls.append(1)
        if len(calls) == 5:  # the launcher's SIGTERM arrives during update 5
            os.kill(os.getpid(), signal.SIGTERM)
        return real_step(self, loss)

    monkeypatch.setattr(Trainer, "optimizer_step", step_then_sigterm)
    with pytest.raises(TrainingStopped) as stopped:
        alone(tmp_path / "stopped", "eval.every=0").fit()
    assert stopped.value.code == 128 + signal.SIGTERM
    assert (tmp_path / "stopped" / "checkpoints" / "step-00000005").is_dir()
    assert not (tmp_path / "stopped" / "export").exists()
    monkeypatch.setattr(Trainer, "optimizer_step", real_step)
    alone(tmp_path / "stopped", "eval.every=0").fit()
    a = load_duration(tmp_path / "straight" / "export").predictor.state_dict()
    b = load_duration(tmp_path / "stopped" / "export").predictor.state_dict()
    assert all(torch.equal(v, b[k]) for k, v in a.items())


def test_a_second_launch_on_a_predictor_only_run_is_refused(tmp_path) -> None:
    import os
    import socket

    run = tmp_path / "run"
    run.mkdir()
    holder = {"host": socket.gethostname(), "pid": os.getppid(), "since": 0}  # a live process that is not this one
    (run / "run.lock").write_text(json.dumps(holder))
    with pytest.raises(ValueError, match="in use by pid") as info:
        alone(run)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("mode", ["alone", "alongside"])
def test_resuming_with_another_predictor_architecture_is_one_line(tmp_path, mode) -> None:
    if mode == "alone":
        alone(tmp_path / "run", "eval.every=0").fit(until=2)
        with pytest.raises(ValueError, match="does not fit duration.dim=32") as info:
            alone(tmp_path / "run", "eval.every=0", "duration.dim=32")
    else:
        make(tmp_path, "duration=small", "optim.max_updates=4").fit(until=2)
        with pytest.raises(ValueError, match="does not fit duration.dim=32") as info:
            make(tmp_path, "duration=small", "optim.max_updates=4", "duration.dim=32")
    assert "\n" not in str(info.value)
