"""scripts/bench_fewstep.py on a tiny teacher and a new student of it, with f5lite-eval on one row (slow)."""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from pathlib import Path

import pytest
from support.eval_cli_assets import make_tiny_export

from f5lite.data.testset import read_testset, write_testset
from f5lite.models.distill import StudentBackbone
from f5lite.paths import demo_dir
from f5lite.storage.pretrained import load_pretrained, save_pretrained

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_fewstep.py"


@pytest.mark.slow
def test_bench_fewstep_writes_every_setting(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("bench_fewstep", SCRIPT)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench
    spec.loader.exec_module(bench)
    teacher = make_tiny_export(tmp_path)
    backbone, info = load_pretrained(teacher)
    student = save_pretrained(
        tmp_path / "student", StudentBackbone(copy.deepcopy(backbone), {"steps": 4}), info.model, info.vocab,
        tokenizer=info.tokenizer,
    )  # fmt: skip
    testset = tmp_path / "testset.txt"
    write_testset(testset, read_testset(demo_dir() / "val" / "testset.txt")[:1])
    argv = ["--teacher", str(teacher), "--student", str(student), "--testset", str(testset), "--eval"]
    assert bench.main([*argv, "--second-stage", str(student), "--out-dir", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "fewstep_cpu.json").read_text())
    settings = result["settings"]
    every = bench.SETTINGS + bench.SECOND_STAGE
    assert list(settings) == [s.name for s in every] and settings["teacher 32 steps"]["mel_l1_to_teacher_32"] == 0
    assert [settings[s.name]["backbone_calls"] for s in every] == [64, 8, 2, 4, 8, 2, 4, 8]
    # The same export as first and second stage: the same mels, so the same distances.
    assert (
        settings["second stage 4 steps"]["mel_l1_to_teacher_32"] == settings["student 4 steps"]["mel_l1_to_teacher_32"]
    )
    assert all(settings[name]["mel_l1_to_teacher_32"] > 0 for name in list(settings)[1:])
    assert set(result["eval"]) == set(settings) and all("wer" in e for e in result["eval"].values())
    assert "| student 4 steps | 4 |" in (tmp_path / "fewstep_cpu.md").read_text()
