"""scripts/compare_f5tts_run.py and benchmarks.f5tts: F5-TTS's prepared format, the run planning and measurement arithmetic, and the
f5lite half end to end on a tiny model (2 updates). The checks against F5-TTS's own loader and sampler run only
where F5-TTS is importable (it is never a dependency)."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
from support.scripts import load_script

from benchmarks import f5tts
from f5lite.paths import demo_dir


@pytest.fixture(scope="module")
def cmp() -> ModuleType:
    return load_script("compare_f5tts_run")


@pytest.fixture(scope="module")
def demo_format(cmp: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[float]]:
    pytest.importorskip("datasets")
    out = tmp_path_factory.mktemp("f5tts_data")
    return out, f5tts.write_dataset(f5tts.demo_clips(Path(demo_dir())), out)


def test_f5tts_format_holds_the_demo_training_clips(cmp, demo_format) -> None:
    from datasets import Dataset

    out, durations = demo_format
    rows = Dataset.from_file(str(out / "raw.arrow"))
    assert rows.column_names == ["audio_path", "text", "duration"]
    assert len(rows) == len(durations) == len(f5tts.demo_clips(Path(demo_dir()))) > 0
    assert json.loads((out / "duration.json").read_text())["duration"] == pytest.approx(rows["duration"])
    assert all(Path(p).is_absolute() and Path(p).exists() for p in rows["audio_path"])
    # F5-TTS's char vocab is the sorted characters (space first: id 0 is also its unknown id), the demo's own vocab.
    vocab = (out / "vocab.txt").read_text().splitlines()
    assert vocab[0] == " " and vocab == (Path(demo_dir()) / "vocab.txt").read_text().splitlines()


@pytest.mark.golden  # needs F5-TTS: test-golden runs it beside .f5tts
@pytest.mark.parametrize(("frames", "max_samples"), [(2400, 64), (1000, 3), (700, 0)])
def test_batch_count_matches_f5tts_sampler(cmp, demo_format, frames: int, max_samples: int) -> None:
    dataset = pytest.importorskip("f5_tts.model.dataset")
    from torch.utils.data import SequentialSampler

    _, durations = demo_format

    class Lengths:
        def __len__(self) -> int:
            return len(durations)

        def get_frame_len(self, i: int) -> float:
            return durations[i] * f5tts.SAMPLE_RATE / f5tts.HOP_LENGTH

    sampler = dataset.DynamicBatchSampler(SequentialSampler(Lengths()), frames, max_samples=max_samples)
    assert f5tts.batches_per_epoch(durations, frames, max_samples) == len(sampler)


@pytest.mark.golden  # needs F5-TTS: test-golden runs it beside .f5tts
def test_f5tts_loader_reads_the_format(cmp, demo_format, monkeypatch) -> None:
    dataset = pytest.importorskip("f5_tts.model.dataset")
    import torchaudio
    from datasets import Dataset

    monkeypatch.setattr(torchaudio, "load", torchaudio.load)  # restored after the test
    f5tts.read_with_soundfile()
    out, durations = demo_format
    data = dataset.CustomDataset(Dataset.from_file(str(out / "raw.arrow")), durations=durations, **f5tts.MEL_KWARGS)
    item = data[0]
    assert item["mel_spec"].shape[0] == 100
    assert item["mel_spec"].shape[1] == pytest.approx(durations[0] * f5tts.SAMPLE_RATE / f5tts.HOP_LENGTH, abs=2)
    assert isinstance(item["text"], str) and item["text"]


def test_summary_takes_checkpoints_out_of_the_steady_part(cmp) -> None:
    events = {
        "updates": [10.0, 11.0, 12.0, 15.0, 16.0],  # 2 s of the third interval is a save
        "frames": [100, 100, 100, 100, 100],
        "saves": [{"kind": "save", "start": 13.0, "end": 15.0}, {"kind": "export", "start": 16.5, "end": 17.0}],
        "vmhwm_kb": 2048,
        "threads": 2,
    }
    run = {"launch": 8.0, "wall_s": 10.0, "peaks": {1: 1024, 2: 512}, "tree_rss_kb": 3072, "pid": 1}
    s = cmp.summarize(run, events, skip=1)
    assert s["steady_updates_per_s"] == pytest.approx(3 / 3.0)
    assert s["steady_frames_per_s"] == pytest.approx(300 / 3.0)
    assert (s["saves"], s["ckpt_total_s"], s["export_s"]) == (1, pytest.approx(2.0), pytest.approx(0.5))
    assert (s["to_first_update_s"], s["after_last_update_s"]) == (pytest.approx(2.0), pytest.approx(2.0))
    assert (s["peak_rss_mb"], s["main_vmhwm_mb"]) == (pytest.approx(2.5), pytest.approx(2.0))


def test_bad_arguments_fail(cmp) -> None:
    for argv in (["--sides", "f5lite,nope"], ["--sides", "f5lite", "--workers", "0"]):
        with pytest.raises(SystemExit):
            cmp.main(argv)


def test_missing_f5tts_fails_with_one_line(cmp, monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "f5_tts", None)  # makes `import f5_tts...` fail whether installed or not
    monkeypatch.setitem(sys.modules, "f5_tts.model", None)
    with pytest.raises(SystemExit) as exc:
        cmp.main(["--rounds", "1"])
    assert exc.value.code == 2
    assert "F5-TTS is not importable" in capsys.readouterr().err.strip().splitlines()[-1]


def test_f5lite_half_runs_and_writes_results(cmp, tmp_path, capsys) -> None:
    argv = ["--sides", "f5lite", "--model", "tiny", "--updates", "2", "--ckpt-every", "1", "--rounds", "1"]
    argv += ["--frames", "800", "--skip", "0", "--out-dir", str(tmp_path), "--name", "run"]
    assert cmp.main(argv) == 0
    result = json.loads((tmp_path / "run.json").read_text())
    med = result["medians"]["f5lite"]
    assert (med["updates"], med["saves"]) == (2, 2) and med["frames"] > 0
    assert med["steady_updates_per_s"] > 0 and med["peak_rss_mb"] >= med["main_vmhwm_mb"] > 0
    assert med["wall_s"] > med["to_first_update_s"] > 0 and med["export_s"] > 0
    assert "ratios" not in result and result["settings"]["updates"] == 2
    assert "optim.max_updates=2" in result["settings"]["f5lite_overrides"]
    assert {"cpu", "logical_cores"} <= set(result["machine"]) and "torch" in result["versions"]
    md = (tmp_path / "run.md").read_text()
    assert "| steady updates/s |" in md and "F5-TTS epoch" not in md and "- per round" in md
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["f5lite"]["updates"] == 2


@pytest.mark.heavy
def test_f5lite_mels_are_the_same_clips_with_a_cache(cmp, tmp_path) -> None:
    demo = Path(demo_dir())
    clips = f5tts.demo_clips(demo)
    prepared = cmp.write_f5lite_mels(clips, demo, tmp_path)
    with gzip.open(prepared / "cuts.jsonl.gz", "rt", encoding="utf-8") as f:
        cuts = [json.loads(line) for line in f]
    assert sorted(c["recording"]["sources"][0]["source"] for c in cuts) == sorted(c["audio_path"] for c in clips)
    assert all((prepared / c["custom"]["mel_path"]).is_file() for c in cuts)
    assert (prepared / "vocab.txt").read_text() == (demo / "vocab.txt").read_text()  # same token ids


@pytest.mark.golden  # needs F5-TTS: test-golden runs it beside .f5tts
def test_f5tts_side_compiles_its_dit_as_its_users_do(cmp, demo_format, tmp_path, monkeypatch) -> None:
    """`--f5tts-compile`: the F5-TTS process wraps its DiT's `forward` in `torch.compile` before building its Trainer
    (as `bench_train.py`'s `F5-TTS bf16 + compile`), and only then; the trainer is a stand-in here."""
    pytest.importorskip("f5_tts.model")
    import f5_tts.model
    import torch

    assert cmp.parse_args(["--f5tts-compile", "--sides", "f5lite"]).f5tts_compile
    assert not cmp.parse_args(["--sides", "f5lite"]).f5tts_compile
    compiled: list[object] = []
    built: list[object] = []

    def fake_compile(fn, *args, **kwargs):
        compiled.append(fn)

        def wrapper(*a, **k):
            return fn(*a, **k)

        wrapper.compiled = True
        return wrapper

    class Trainer:
        def __init__(self, model, **kwargs) -> None:
            built.append(model)
            self.model = model
            self.ema_model = type("EMA", (), {"update": lambda self: None})()

        def save_checkpoint(self, update, last=False) -> None: ...

        def train(self, dataset, **kwargs) -> None: ...

    monkeypatch.setattr(torch, "compile", fake_compile)
    monkeypatch.setattr(f5_tts.model, "Trainer", Trainer)
    monkeypatch.setattr(f5tts, "read_with_soundfile", lambda: None)
    data, _ = demo_format
    spec = {"model": cmp.MODELS["tiny"], "seed": 0, "epochs": 1, "lr": 1e-4, "warmup": 1, "ckpt_every": 1}
    spec |= {"run_dir": str(tmp_path), "frames": 800, "max_samples": 4, "precision": "no", "workers": 1}
    spec |= {"ema_decay": 0.99, "ema_update_every": 1, "ema_update_after": 0, "f5tts_data": str(data)}
    for flag in (False, True):
        compiled.clear()
        assert f5tts.train({**spec, "f5tts_compile": flag}, f5tts.Events()) == 0
        backbone = built[-1].transformer
        assert len(compiled) == int(flag) and getattr(backbone.forward, "compiled", False) == flag
        if flag:
            assert compiled[0].__self__ is backbone  # the DiT's own bound forward, not the CFM's
