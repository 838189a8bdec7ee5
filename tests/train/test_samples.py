"""Training samples: the sampler settings of the config reach them, and they use the EMA weights."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from support.trainer_helpers import make

import f5lite.train.samples as samples_module
import f5lite.train.trainer as trainer_module
from f5lite.sampling import SamplerOptions
from f5lite.train.loggers import MetricLogger


class Recorder(MetricLogger):
    def __init__(self) -> None:
        self.metrics: list[tuple[int, dict[str, float]]] = []
        self.samples: list[tuple[torch.Tensor, torch.Tensor, int, int]] = []

    def log(self, metrics: dict[str, float], step: int) -> None:
        self.metrics.append((step, metrics))

    def log_sample(self, mel: torch.Tensor, audio: torch.Tensor, sample_rate: int, step: int) -> None:
        self.samples.append((mel, audio, sample_rate, step))


def run_with_samples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *extra: str, name: str) -> tuple[Recorder, int]:
    """Train 2 updates with a sample after the second; returns the logged samples and the backbone calls made."""
    recorder = Recorder()
    monkeypatch.setattr(trainer_module, "make_logger", lambda *a, **kw: recorder)
    trainer = make(tmp_path, "optim.max_updates=2", "logger.sample_every=2", *extra, name=name)
    assert trainer.evaluator.samples is not None
    calls = []
    trainer.evaluator.samples.model.register_forward_hook(lambda *_: calls.append(1))
    trainer.fit()
    return recorder, len(calls)


def test_metrics_and_ema_samples_are_logged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recorder, _ = run_with_samples(tmp_path, monkeypatch, "optim.max_updates=4", "sample.steps=2", name="a")
    assert [step for step, _ in recorder.metrics] == [2, 4]
    assert set(recorder.metrics[0][1]) == {"loss", "lr", "frames_per_s", "skipped_updates"}
    assert [s[3] for s in recorder.samples] == [2, 4]
    mel, audio, rate, _ = recorder.samples[0]
    assert mel.shape[1] == 100 and rate == 24000 and audio.shape == ((mel.shape[0] - 1) * 256,)
    assert torch.isfinite(audio).all()


def test_every_sample_key_reaches_the_sampler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []
    real = samples_module.sample

    def spy(*args, **kwargs):
        seen.append((args[4], kwargs["seed"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(samples_module, "sample", spy)
    settings = {
        "steps": 3, "method": "midpoint", "schedule": "uniform", "sway": -0.5, "cfg_strength": 1.5,
        "cfg_zero_init_steps": 1, "cfg_zero_star": True, "speed": 1.25,
    }  # fmt: skip
    assert set(settings) == {f.name for f in SamplerOptions.__dataclass_fields__.values()}  # every option, changed
    assert all(getattr(SamplerOptions(), k) != v for k, v in settings.items())
    overrides = [f"sample.{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in settings.items()]
    run_with_samples(tmp_path, monkeypatch, *overrides, "sample.seed=5", name="all")
    assert seen == [(SamplerOptions(**settings), 5)]


def test_cfg_zero_settings_change_the_training_samples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain, plain_calls = run_with_samples(tmp_path, monkeypatch, "sample.steps=4", name="plain")
    zero, zero_calls = run_with_samples(
        tmp_path, monkeypatch, "sample.steps=4", "sample.cfg_zero_init_steps=1", "sample.cfg_zero_star=true", name="z"
    )
    assert (plain_calls, zero_calls) == (4, 3)  # the zero-init step calls no network
    assert not torch.equal(plain.samples[0][0], zero.samples[0][0])


def test_an_unavailable_vocoder_stops_the_run_before_training(tmp_path: Path) -> None:
    missing = tmp_path / "no_vocos"
    with pytest.raises(ValueError, match=r"sample.vocoder=vocos cannot be loaded .*no_vocos") as err:
        make(tmp_path, "logger.sample_every=2", "sample.vocoder=vocos", f"sample.vocoder_source={missing}")
    assert "\n" not in str(err.value)
    assert not (tmp_path / "run" / "checkpoints").exists() or not any((tmp_path / "run" / "checkpoints").iterdir())


def test_samples_are_written_as_files_beside_train_jsonl(tmp_path: Path) -> None:
    """Whatever the logger backend, each sample is a WAV and a PNG under RUN_DIR/logs/samples/<tag>/ (the studio
    plays the newest)."""
    import soundfile as sf

    trainer = make(tmp_path, "optim.max_updates=4", "logger.sample_every=2", "logger.backend=none")
    trainer.fit()
    folder = tmp_path / "run" / "logs" / "samples" / "sample"
    assert sorted(p.name for p in folder.iterdir()) == [
        "update-00000002.png", "update-00000002.wav", "update-00000004.png", "update-00000004.wav",
    ]  # fmt: skip
    assert sf.info(str(folder / "update-00000004.wav")).duration > 0
    assert (folder / "update-00000004.png").read_bytes().startswith(b"\x89PNG")
