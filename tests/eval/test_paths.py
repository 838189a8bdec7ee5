"""scripts/eval_paths.py: every inference path scored by f5lite-eval, and each one's distance to the 32-step audio."""

from __future__ import annotations

import json
from types import ModuleType

import pytest
from support.eval_cli_assets import make_testset, make_tiny_export
from support.scripts import load_script

from f5lite.data.testset import read_testset

EXTRA = ["sample.vocoder=griffin_lim", "metrics=[mel,sim]", "device=cpu"]


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return load_script("eval_paths")


@pytest.mark.slow  # six f5lite-eval processes: about a minute
def test_paths_are_scored_and_compared_with_the_32_step_output(script, tmp_path, capsys) -> None:
    export, testset = make_tiny_export(tmp_path), make_testset(tmp_path / "test.lst", with_gt=3)
    out, results = tmp_path / "paths", tmp_path / "results"
    argv = ["--model", str(export), "--testset", str(testset), "--out", str(out), "--results", str(results)]
    assert script.main([*argv, "--paths", "32_fp32,7zero_fp32,7zero_bf16", *EXTRA]) == 0
    result = json.loads((results / "eval_paths.json").read_text())
    assert result == json.loads((out / "eval_paths.json").read_text())
    assert list(result["paths"]) == ["32_fp32", "7zero_fp32", "7zero_bf16"] and result["rows"] == 3
    assert {"cpu", "logical_cores"} <= set(result["machine"]) and result["date"]
    reference, fast, fast_bf16 = result["paths"].values()
    assert "mel_l1_to_reference" not in reference and {"mel_l1", "sim"} <= set(reference["means"])
    assert fast["mel_l1_to_reference"] > 0  # 7 steps do not give the 32-step audio
    # bf16 weights change the audio far less than 25 fewer steps do.
    assert abs(fast_bf16["mel_l1_to_reference"] - fast["mel_l1_to_reference"]) < fast["mel_l1_to_reference"]
    md = (results / "eval_paths.md").read_text()
    assert "| 7 EPSS + CFG-Zero*, fp32 |" in md and "mel L1 to 32 steps" in md
    capsys.readouterr()

    # The comparison really is with the 32-step audio: that audio scored against itself is 0 apart.
    against = script.testset_against(testset, out / "32_fp32" / "audio", tmp_path / "self.lst")
    own = script.run_eval(
        [f"audio_dir={out / '32_fp32' / 'audio'}", f"testset={against}", "metrics=[mel]"], tmp_path / "s"
    )
    assert own["means"]["mel_l1"] == 0


def test_reference_testset_points_every_row_at_the_reference_audio(script, tmp_path) -> None:
    testset = make_testset(tmp_path / "t.lst", with_gt=1)
    audio = tmp_path / "ref_audio"
    audio.mkdir()
    original = read_testset(testset)
    for row in original:  # read_testset checks that every file exists
        (audio / f"{row.id}.wav").touch()
    rows = read_testset(script.testset_against(testset, audio, tmp_path / "against.lst"))
    assert [(r.id, r.ref_audio, r.ref_text, r.gen_text) for r in rows] == [
        (r.id, r.ref_audio, r.ref_text, r.gen_text) for r in original
    ]
    assert [r.gt_audio for r in rows] == [(audio / f"{r.id}.wav").resolve() for r in original]


def test_bad_arguments_stop_with_one_line(script, tmp_path, capsys) -> None:
    base = ["--model", "m", "--out", str(tmp_path / "o")]
    with pytest.raises(SystemExit):
        script.main([*base, "--testset", str(tmp_path / "missing.lst")])
    assert "no such file" in capsys.readouterr().err
    testset = make_testset(tmp_path / "t.lst")
    for paths in ("7zero_fp32,32_fp32", "32_fp32,nope"):
        with pytest.raises(SystemExit):
            script.main([*base, "--testset", str(testset), "--paths", paths])
        assert "starting with 32_fp32" in capsys.readouterr().err


def test_a_failing_eval_stops_with_its_message(script, tmp_path) -> None:
    with pytest.raises(SystemExit, match=r"eval_paths.py: .*f5lite-eval .* failed: .*nope.lst") as exc:
        script.run_eval([f"model={tmp_path / 'missing'}", "testset=nope.lst"], tmp_path / "out")
    assert "\n" not in str(exc.value)  # f5lite-eval's own one-line reason is passed on, in one line
