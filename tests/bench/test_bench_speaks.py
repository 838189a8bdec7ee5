"""scripts/bench_speaks.py: which checkpoints it scores and when they were written, its plot and table from a made-up
result (floors drawn), the options it refuses, and (slow) every arm trained, stopped and scored end to end on a few
sentences."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest
from support.scripts import load_script

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_script("bench_speaks")


def test_pick_spreads_the_checkpoints_and_keeps_the_last(bench: ModuleType) -> None:
    assert bench.pick(list(range(10)), 4) == [0, 3, 6, 9]
    assert bench.pick(list(range(3)), 8) == [0, 1, 2]
    assert bench.pick(list(range(9)), 2) == [0, 8]


def test_checkpoints_of_both_trainers_in_update_order_with_their_minutes(bench: ModuleType, tmp_path: Path) -> None:
    launched = time.time() - 600
    f5lite = bench.Arm(name="f5lite", run_dir=str(tmp_path / "a"), recipe="speak_cpu", corpus="c", launched=launched)
    for step, age in ((1000, 60), (250, 480), (500, 300)):
        path = tmp_path / "a" / "checkpoints" / f"step-{step:08d}"
        path.mkdir(parents=True)
        os.utime(path, (launched + 600 - age, launched + 600 - age))
    (tmp_path / "a" / "checkpoints" / "latest").write_text("step-00001000")
    found = bench.checkpoints(f5lite)
    assert [s for s, _, _ in found] == [250, 500, 1000]
    assert [round(sec) for _, _, sec in found] == [120, 300, 540]
    f5tts = bench.Arm(name="f5tts", run_dir=str(tmp_path / "b"), recipe="speak_cpu_char", corpus="c", launched=launched)
    (tmp_path / "b").mkdir()
    for name in ("model_20.pt", "model_5.pt", "model_last.pt"):
        (tmp_path / "b" / name).write_bytes(b"")
    assert [s for s, _, _ in bench.checkpoints(f5tts)] == [5, 20]  # model_last.pt repeats one of them


def _result() -> dict:
    points = [{"update": u, "minutes": m, "wer": w, "sim": 0.5, "mos": 2.0} for u, m, w in ((250, 9.5, 1.0),
              (500, 18.0, 0.7), (1000, 36.2, 0.35))]  # fmt: skip
    arm = {"recipe": "speak_cpu", "corpus": "/c", "points": points}
    return {
        "date": "2026-11-26T16:00:00+00:00", "machine": {"cpu": "AMD EPYC", "flags": ["avx2"], "logical_cores": 2},
        "minutes": 45.0, "threads": 1, "limit": 30,
        "floors": {"recorded": {"wer": 0.15, "sim": 0.9, "mos": 3.0}, "vocoded": {"wer": 0.14, "sim": 0.88}},
        "arms": {"f5lite": arm, "f5tts": {**arm, "recipe": "speak_cpu_char", "points": points[:1]},
                 "f5lite-ipa-pad": {**arm, "overrides": ["model.text_fit=pad"]}},
    }  # fmt: skip


def test_the_plot_and_the_table(bench: ModuleType, tmp_path: Path) -> None:
    import matplotlib.image

    bench.plot(_result(), tmp_path / "curve.png")
    image = matplotlib.image.imread(tmp_path / "curve.png")
    assert image.shape[0] > 500 and image.shape[1] > 800
    table = bench.markdown(_result())
    assert "| 1000 | 36.2 | 0.350 | 0.500 | 2.000 |" in table
    assert "floor, recorded: WER 0.150, SIM 0.900" in table and "floor, vocoded: WER 0.140, SIM 0.880, MOS -" in table
    assert table.count("| update | minutes |") == 3 and "budget: 45.0 min" in table
    assert "## f5lite-ipa-pad (recipe speak_cpu, model.text_fit=pad, /c)" in table  # a lever arm says its lever


def test_the_floors_are_drawn(bench: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import matplotlib.axes

    drawn = []
    original = matplotlib.axes.Axes.axhline

    def axhline(self, y=0, *args, **kwargs):  # noqa: ANN001, ANN202
        drawn.append((self.get_title(), y))
        return original(self, y, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "axhline", axhline)
    bench.plot(_result(), tmp_path / "curve.png")
    wer = sorted(y for title, y in drawn if title == "held-out WER")
    assert wer == [0.14, 0.14, 0.15, 0.15]  # both WER panels, both floors
    assert ("MOS (DNSMOS)", 3.0) in drawn and ("SIM", 0.88) in drawn


def test_refusals(bench: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="cannot change model"):
        bench.main(["--set", "model.dim=64", "--work", str(tmp_path)])
    with pytest.raises(SystemExit, match="is not a speak corpus; run `make speak-corpus`"):
        bench.main(["--ipa-corpus", str(tmp_path / "none"), "--arms", "f5lite", "--work", str(tmp_path)])
    with pytest.raises(SystemExit, match="unknown arm 'f5'"):
        bench.main(["--runs", f"f5={tmp_path}", "--work", str(tmp_path)])


@pytest.mark.slow  # three trainers and their scoring on a few sentences (about 5 min); `make test-slow`
@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="needs espeak-ng (apt-get install espeak-ng)")
def test_every_arm_end_to_end_on_a_few_sentences(bench: ModuleType, tmp_path: Path) -> None:
    pytest.importorskip("phonemizer")
    pytest.importorskip("pocketsphinx")
    corpus = SCRIPTS / "make_speak_corpus.py"
    for tokenizer, out in (("char", tmp_path / "char"), ("ipa", tmp_path / "ipa")):
        argv = [sys.executable, str(corpus), "--out", str(out), "--train", "24", "--test", "2", "--val", "2",
                "--workers", "1", "--tokenizer", tokenizer]  # fmt: skip
        assert os.spawnv(os.P_WAIT, sys.executable, argv) == 0
    arms = ["f5lite", "f5lite-char"] + (["f5tts"] if importlib.util.find_spec("f5_tts") else [])
    argv = ["--arms", *arms, "--minutes", "4", "--char-corpus", str(tmp_path / "char"), "--ipa-corpus",
            str(tmp_path / "ipa"), "--set", "optim.max_updates=4", "ckpt.every=2", "eval.every=0",
            "data.frames_per_gpu=1500", "--limit", "1", "--points", "2", "--work", str(tmp_path / "work")]  # fmt: skip
    assert bench.main(argv) == 0
    result = json.loads((tmp_path / "work" / "bench_speaks_cpu.json").read_text())
    assert list(result["arms"]) == arms
    for name, arm in result["arms"].items():
        assert arm["error"] is None and arm["returncode"] == 0, name  # each finished its 4 updates
        assert [p["update"] for p in arm["points"]] == [2, 4], name
        assert all(p["wer"] >= 0 and 0 < p["minutes"] <= 4 for p in arm["points"]), name
    assert result["floors"]["recorded"]["wer"] is not None and result["floors"]["vocoded"]["wer"] is not None
    assert (tmp_path / "work" / "bench_speaks_cpu.png").stat().st_size > 10_000


def test_a_corpus_with_an_enrollment_list_is_scored_for_cloning(bench: ModuleType, tmp_path: Path) -> None:
    """`make bench-clone` runs this bench on the clone corpus: its voices file goes to f5lite-eval, and the curve
    keeps the held-out voices' calibrated similarity and top-1 (all rows' when none is held out)."""
    (tmp_path / "test").mkdir()
    assert not any(k.startswith("voices=") for k in bench.eval_keys(tmp_path, tmp_path / "out", 60))
    (tmp_path / "test" / "voices.txt").write_text("voice|split|audio\n")
    assert f"voices={tmp_path / 'test' / 'voices.txt'}" in bench.eval_keys(tmp_path, tmp_path / "out", 60)
    held = {"output": {"sim_calibrated": 0.4, "top1": 0.5}}
    train = {"output": {"sim_calibrated": 0.9, "top1": 1.0}}
    summary = {"cloning": {"by_split": {"held_out": held, "train": train}, "overall": train}}
    assert bench.cloning_means(summary) == (0.4, 0.5)
    assert bench.cloning_means({"cloning": {"by_split": {"train": train}, "overall": train}}) == (0.9, 1.0)
    assert bench.cloning_means({"means": {}}) == (None, None)
    result = _result()
    next(iter(result["arms"].values()))["points"][0].update(sim_calibrated=0.4, top1=0.5)
    assert "| 0.400 | 0.500 |" in bench.markdown(result)
