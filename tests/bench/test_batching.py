"""scripts/bench_data.py --batching as a user runs it (a subprocess, small counts): f5lite's figures alone without F5-TTS,
and beside an F5-TTS checkout given by path (here a stand-in with F5-TTS's algorithm) on a dataset's lengths."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from f5lite.data import make_cut, write_cuts

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_data.py"

# F5-TTS's `DynamicBatchSampler` (f5_tts/model/dataset.py), cut down to what the script uses.
F5TTS_DATASET = """
import torch


class DynamicBatchSampler:
    def __init__(self, sampler, frames_threshold, max_samples=0, random_seed=None, drop_residual=False):
        data_source = sampler.data_source
        indices = sorted(((i, data_source.get_frame_len(i)) for i in sampler), key=lambda e: e[1])
        batches, batch, batch_frames = [], [], 0
        for idx, frame_len in indices:
            if batch_frames + frame_len <= frames_threshold and (max_samples == 0 or len(batch) < max_samples):
                batch.append(idx)
                batch_frames += frame_len
            else:
                if batch:
                    batches.append(batch)
                batch, batch_frames = ([idx], frame_len) if frame_len <= frames_threshold else ([], 0)
        if not drop_residual and batch:
            batches.append(batch)
        self.batches, self.random_seed, self.epoch = batches, random_seed, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        g = torch.Generator()
        g.manual_seed(self.random_seed + self.epoch)
        return iter([self.batches[i] for i in torch.randperm(len(self.batches), generator=g).tolist()])
"""


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--batching", *args], capture_output=True, text=True, timeout=300
    )


def test_without_f5tts_it_reports_f5lite_alone_and_says_so(tmp_path: Path) -> None:
    proc = bench("--count", "1500", "--frames-per-gpu", "9600", "--max-samples", "16", "--window", "600",
                 "--lhotse-buckets", "4", "--out-dir", str(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads((tmp_path / "batching.json").read_text())
    assert result["machine"]["cpu"] and result["versions"]["f5lite"] and result["date"]  # the run header
    assert result["lengths"]["count"] == 1500 and result["f5tts"] is None
    names = [row["sampler"] for row in result["samplers"]]
    assert names == [
        "f5lite (window 600, fill_efficiency 0.99)",
        "f5lite (window 600, no top-up)",
        "Lhotse dynamic bucketing (4 buckets)",
    ]
    seconds = np.clip(np.random.default_rng(0).lognormal(np.log(8.0), 0.5, size=1500), 3.0, 30.0)  # the defaults
    total = sum(1 + int(s * 24000) // 256 for s in seconds)
    for row in result["samplers"]:
        assert row["utterances"] == 1500 and row["left_out"] == 0
        assert row["real_frames_per_batch"] == round(total / row["batches"], 1)  # every frame of the set, once
        assert row["largest_batch_frames"] <= 9600 + 16  # Lhotse budgets seconds: a frame per utterance more
    ours = result["samplers"][0]
    assert ours["largest_batch_frames"] <= 9600 and ours["padding_efficiency"] >= 0.98
    page = (tmp_path / "batching.md").read_text()
    assert "F5-TTS was not given" in page and "| f5lite (window 600, fill_efficiency 0.99) |" in page
    assert [json.loads(line) for line in proc.stdout.splitlines()] == result["samplers"]  # a JSON line per sampler


def test_beside_f5tts_on_the_lengths_of_a_dataset(tmp_path: Path) -> None:
    checkout = tmp_path / "F5-TTS"
    package = checkout / "src" / "f5_tts" / "model"
    package.mkdir(parents=True)
    (package.parent / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "dataset.py").write_text(F5TTS_DATASET)
    rng = np.random.default_rng(1)
    samples = (np.clip(rng.lognormal(np.log(8.0), 0.5, size=800), 3.0, 30.0) * 24000).astype(int)
    samples[5] = 200 * 24000  # longer than the budget: left out by both
    cuts = [make_cut(f"c{i}", f"/nowhere/{i}.wav", sample_rate=24000, num_samples=int(n), channels=1, text="x",
                     frames=1 + int(n) // 256) for i, n in enumerate(samples)]  # fmt: skip
    (tmp_path / "data").mkdir()
    write_cuts(tmp_path / "data" / "cuts.jsonl.gz", cuts)
    proc = bench("--data", str(tmp_path / "data" / "cuts.jsonl.gz"), "--f5tts", str(checkout), "--frames-per-gpu",
                 "9600", "--max-samples", "16", "--lhotse-buckets", "", "--out-dir", str(tmp_path), "--name", "b")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads((tmp_path / "b.json").read_text())
    assert result["lengths"]["count"] == 800 and result["lengths"]["data"].endswith("cuts.jsonl.gz")
    rows = {row["sampler"].split(" (")[0]: row for row in result["samplers"]}
    assert set(rows) == {"f5lite", "F5-TTS DynamicBatchSampler"}
    f5tts = rows["F5-TTS DynamicBatchSampler"]
    assert f5tts["left_out"] == 1 and f5tts["utterances"] == 799
    # F5-TTS's batches by hand: the whole set sorted, filled while the sum fits.
    lengths = sorted(1 + int(n) // 256 for n in samples if 1 + int(n) // 256 <= 9600)
    batches, total, count = 1, 0, 0
    for n in lengths:
        if total + n > 9600 or count == 16:
            batches, total, count = batches + 1, 0, 0
        total, count = total + n, count + 1
    assert f5tts["batches"] == batches
    ours = result["samplers"][0]
    assert ours["left_out"] == 1 and ours["real_frames_vs_f5tts"] == round(
        ours["real_frames_per_batch"] / f5tts["real_frames_per_batch"], 4
    )
    assert "real frames vs F5-TTS" in (tmp_path / "b.md").read_text()
