"""Fixed prompts while training: spoken through `Synthesizer` with the EMA weights and the run's sampler, scored,
logged per prompt and as means, and checked at start-up."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from support.trainer_helpers import make

import f5lite.train.trainer as trainer_module
from f5lite.infer.synthesizer import Synthesizer
from f5lite.paths import demo_dir
from f5lite.sampling import SamplerOptions
from f5lite.storage.rundir import load_run_config
from f5lite.train.loggers import MetricLogger

pytest.importorskip("librosa", reason="the mel metric needs the eval extra")

PROMPTS = ["eval.sample_every=3", "eval.max_prompts=2", "eval.metrics=[mel]", "sample.steps=3", "sample.seed=4"]


class Recorder(MetricLogger):
    def __init__(self) -> None:
        self.metrics: list[tuple[int, dict[str, float]]] = []
        self.tags: list[tuple[str, int]] = []

    def log(self, metrics: dict[str, float], step: int) -> None:
        self.metrics.append((step, metrics))

    def log_sample(
        self, mel: torch.Tensor, audio: torch.Tensor, sample_rate: int, step: int, tag: str = "sample"
    ) -> None:
        assert mel.shape[1] == 100 and sample_rate == 24000 and torch.isfinite(audio).all()
        self.tags.append((tag, step))


@pytest.mark.heavy
def test_prompts_are_spoken_with_the_ema_weights_and_the_run_s_sampler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = Recorder()
    monkeypatch.setattr(trainer_module, "make_logger", lambda *a, **kw: recorder)
    calls: list[tuple[str, SamplerOptions, int | None, dict[str, torch.Tensor]]] = []
    real = Synthesizer.synthesize

    def spy(self: Synthesizer, text: str, ref_audio, ref_text: str, options=None, **kw):  # type: ignore[no-untyped-def]
        calls.append((text, options, kw.get("seed"), {k: v.clone() for k, v in self.backbone.state_dict().items()}))
        return real(self, text, ref_audio, ref_text, options, **kw)

    monkeypatch.setattr(Synthesizer, "synthesize", spy)
    trainer = make(tmp_path, "optim.max_updates=6", *PROMPTS)
    trainer.fit()

    rows = (demo_dir() / "val" / "testset.txt").read_text().splitlines()[1:3]
    texts = [row.split("|")[3] for row in rows]
    assert [(c[0], c[2]) for c in calls] == [(texts[0], 0), (texts[1], 1)] * 2  # eval.seed + row, each time
    assert all(c[1] == load_run_config(trainer.run_dir).sample.sampler_options() and c[1].steps == 3 for c in calls)
    ema = trainer.net.ema_weights()
    online = trainer.net.online_weights()
    held = calls[-1][3]
    assert all(torch.equal(held[k], v) for k, v in ema.items())  # the EMA, not the online weights
    assert any(not torch.equal(held[k], online[k]) for k in ema)

    ids = [row.split("|")[0] for row in rows]
    assert recorder.tags == [(f"prompts/{i}", step) for step in (3, 6) for i in ids]
    logged = {step: m for step, m in recorder.metrics if "prompts/mel_l1" in m}
    assert sorted(logged) == [3, 6]
    assert {"prompts/mel_l1", "prompts/mcd", "eval/prompts_seconds"} <= logged[6].keys()
    assert logged[3]["prompts/mel_l1"] != logged[6]["prompts/mel_l1"]  # other weights, same noise: other audio
    lines = [json.loads(line) for line in (tmp_path / "run" / "logs" / "eval.jsonl").read_text().splitlines()]
    assert [line["update"] for line in lines] == [3, 6] and lines[1]["prompts/mcd"] == logged[6]["prompts/mcd"]


@pytest.mark.heavy
def test_the_best_checkpoint_by_a_prompt_metric(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trainer_module, "make_logger", lambda *a, **kw: Recorder())
    trainer = make(tmp_path, "optim.max_updates=6", *PROMPTS, "ckpt.every=3", "ckpt.keep_best=1", "ckpt.keep_last=1",
                   "ckpt.best_metric=prompts/mel_l1")  # fmt: skip
    trainer.fit()
    lines = [json.loads(line) for line in (tmp_path / "run" / "logs" / "eval.jsonl").read_text().splitlines()]
    best = min(lines, key=lambda line: line["prompts/mel_l1"])["update"]
    kept = sorted(int(p.name.removeprefix("step-")) for p in (tmp_path / "run" / "checkpoints").glob("step-*"))
    assert kept == sorted({best, 6})
    meta = json.loads((tmp_path / "run" / "checkpoints" / f"step-{best:08d}" / "meta.json").read_text())
    assert meta["score"] == {"metric": "prompts/mel_l1", "value": min(line["prompts/mel_l1"] for line in lines),
                             "lower_is_better": True}  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["eval.prompts=/no/such/testset.txt"], "/no/such/testset.txt"),
        (["eval.metrics=[wer]", "eval.asr=whisper:/no/such/dir"], "model directory '/no/such/dir' does not exist"),
        (["eval.metrics=[sim]", "eval.speaker=ecapa"], "unknown speaker backend 'ecapa'"),
    ],
)
def test_a_bad_prompt_setting_stops_the_run_before_it_starts(tmp_path: Path, extra: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message) as err:
        make(tmp_path, *PROMPTS, *extra)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "run" / "config.yaml").exists()


def test_prompts_need_a_file_when_the_data_has_no_validation_split(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "cuts.jsonl.gz").write_bytes((demo_dir() / "cuts.jsonl.gz").read_bytes())
    with pytest.raises(ValueError, match="eval.sample_every is set but there are no prompts: give eval.prompts"):
        make(tmp_path, *PROMPTS, f"data.dir={data}", "data.tokenizer=byte")
