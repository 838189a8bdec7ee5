"""scripts/eval_paths.py --student on a tiny teacher and a new student of it, with f5lite-eval on one row (slow)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from support.eval_cli_assets import make_tiny_export
from support.scripts import load_script

from f5lite.data.testset import read_testset, write_testset
from f5lite.models.distill import StudentBackbone
from f5lite.paths import demo_dir
from f5lite.storage.pretrained import load_pretrained, save_pretrained


@pytest.mark.slow
def test_fewstep_writes_every_setting(tmp_path: Path) -> None:
    bench = load_script("eval_paths")
    teacher = make_tiny_export(tmp_path)
    backbone, info = load_pretrained(teacher)
    student = save_pretrained(
        tmp_path / "student", StudentBackbone(copy.deepcopy(backbone), {"steps": 4}), info.model, info.vocab,
        tokenizer=info.tokenizer,
    )  # fmt: skip
    testset = tmp_path / "testset.txt"
    write_testset(testset, read_testset(demo_dir() / "val" / "testset.txt")[:1])
    argv = ["--model", str(teacher), "--student", str(student), "--testset", str(testset), "--eval"]
    assert bench.main([*argv, "--second-stage", str(student), "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "fewstep_cpu.json").read_text())
    settings = result["settings"]
    every = [f"{model} {steps} steps" for model, steps in bench.FEWSTEP + bench.SECOND_STAGE]
    assert list(settings) == every and settings["teacher 32 steps"]["mel_l1_to_teacher_32"] == 0
    assert [settings[name]["backbone_calls"] for name in every] == [64, 8, 2, 4, 8, 2, 4, 8]
    # The same export as first and second stage: the same mels, so the same distances.
    assert (
        settings["second stage 4 steps"]["mel_l1_to_teacher_32"] == settings["student 4 steps"]["mel_l1_to_teacher_32"]
    )
    assert all(settings[name]["mel_l1_to_teacher_32"] > 0 for name in list(settings)[1:])
    assert set(result["eval"]) == set(settings) and all("wer" in e for e in result["eval"].values())
    assert "| student 4 steps | 4 |" in (tmp_path / "fewstep_cpu.md").read_text()
