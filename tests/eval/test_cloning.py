"""Cloning in `f5lite-eval`: `voices=` end to end on demo voices, the `cloning` summary, and the checks before a row.

The end-to-end run scores existing audio (`audio_dir=`, no model) with the real Resemblyzer encoder: demo clips stand
in for the output, one of them in the wrong voice, so that identification has something to find.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from support.eval_cli_assets import demo_clips

from f5lite.data.testset import TestRow, write_testset
from f5lite.eval.cli import compose_eval_config, main
from f5lite.eval.cloning import check_testset_voices, cloning_summary, source_figures
from f5lite.eval.report import write_report
from f5lite.metrics.cloning import Calibration, equal_error_rate, verification_trials
from f5lite.metrics.voices import ENROLLMENT_HEADER, read_enrollment

ENROLLED = {"us_male": "train", "us_female": "train", "gb_male": "train", "caribbean_female": "held_out"}
"""The enrollment list's voices; the test set speaks in us_male and caribbean_female (voices far apart for
Resemblyzer, so that the identifications below hold with a wide margin)."""


def write_enrollment(path: Path) -> Path:
    clips = demo_clips()
    lines = [ENROLLMENT_HEADER]
    lines += [f"{voice}|{split}|{clip}" for voice, split in ENROLLED.items() for clip, _ in clips[voice][2:4]]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, Path]:
    """A test set of three rows, the "output" of each (in `audio/`) and the enrollment list.

    - `0_us_male`: us_male, with ground truth; the output is another us_male clip;
    - `1_us_male_wrong`: us_male, without ground truth; the output is a us_female clip (a cloning failure);
    - `2_caribbean`: caribbean_female (held out), with ground truth; the output is another of its clips.
    """
    root = tmp_path_factory.mktemp("cloning")
    clips = demo_clips()
    (male_ref, male_text), (male_gt, male_gen) = clips["us_male"][:2]
    (car_ref, car_text), (car_gt, car_gen) = clips["caribbean_female"][:2]
    rows = [
        TestRow("0_us_male", male_ref, male_text, male_gen, male_gt, "us_male"),
        TestRow("1_us_male_wrong", male_ref, male_text, male_gen, None, "us_male"),
        TestRow("2_caribbean", car_ref, car_text, car_gen, car_gt, "caribbean_female"),
    ]
    write_testset(root / "test.lst", rows)
    outputs = [clips["us_male"][4][0], clips["us_female"][4][0], clips["caribbean_female"][4][0]]
    (root / "audio").mkdir()
    for row, clip in zip(rows, outputs, strict=True):
        shutil.copy(clip, root / "audio" / f"{row.id}.ogg")
    return {"root": root, "testset": root / "test.lst", "audio": root / "audio", "voices": write_enrollment(root / "v")}


def command(corpus: dict[str, Path], out: Path, *extra: str) -> list[str]:
    keys = [f"audio_dir={corpus['audio']}", f"testset={corpus['testset']}", f"output={out}", "metrics=[sim]"]
    return [*keys, f"voices={corpus['voices']}", *extra]


@pytest.fixture(scope="module")
def scored(corpus) -> Path:
    out = corpus["root"] / "out"
    assert main(command(corpus, out)) == 0
    return out


def test_rows_and_their_floors_are_identified_among_every_enrolled_voice(scored) -> None:
    rows = [json.loads(line) for line in (scored / "results.jsonl").read_text().splitlines()]
    calibration = json.loads((scored / "summary.json").read_text())["cloning"]["calibration"]
    assert [r["voice"] for r in rows] == ["us_male", "us_male", "caribbean_female"]
    assert [r["speaker_top1"] for r in rows] == ["us_male", "us_female", "caribbean_female"]
    assert [r["speaker_correct"] for r in rows] == [True, False, True]
    for clip in (*rows, rows[0]["gt"], rows[2]["gt"]):
        assert list(clip["speaker_scores"]) == list(ENROLLED)
        expected = (clip["sim"] - calibration["between"]) / (calibration["same"] - calibration["between"])
        assert clip["sim_calibrated"] == pytest.approx(expected)
    assert rows[0]["gt"]["speaker_top1"] == "us_male" and rows[2]["gt"]["speaker_top1"] == "caribbean_female"
    assert "gt" not in rows[1] and "gt_vocoded" not in rows[0]  # no ground truth; audio_dir: no vocoded floor


def test_the_cloning_summary(scored, corpus) -> None:
    summary = json.loads((scored / "summary.json").read_text())
    rows = [json.loads(line) for line in (scored / "results.jsonl").read_text().splitlines()]
    cloning = summary["cloning"]
    assert cloning["voices_file"] == str(corpus["voices"].resolve()) and cloning["enrolled_voices"] == 4
    assert summary["settings"]["voices"]["file"] == str(corpus["voices"].resolve())
    calibration = cloning["calibration"]
    # Measured on the test set's two voices only, two enrollment clips each: one pair each, four between them.
    assert calibration["voices"] == ["us_male", "caribbean_female"]
    assert calibration["same_pairs"] == 2 and calibration["between_pairs"] == 4
    assert calibration["same"] > calibration["between"]
    output = cloning["overall"]["output"]
    assert output["rows"] == 3 and output["top1"] == pytest.approx(2 / 3)
    assert output["sim"] == pytest.approx(summary["means"]["sim"])
    assert output["sim_calibrated"] == pytest.approx(summary["means"]["sim_calibrated"])
    trials = verification_trials([(r["voice"], r["speaker_scores"]) for r in rows])
    assert output["eer"] == pytest.approx(equal_error_rate(*trials)) and 0 < output["eer"] < 0.5
    floor = cloning["overall"]["ground_truth"]
    assert floor["rows"] == 2 and floor["top1"] == 1.0 and floor["sim"] == pytest.approx(summary["ground_truth"]["sim"])
    assert cloning["overall"]["ground_truth_vocoded"] is None
    male, caribbean = cloning["per_voice"]["us_male"], cloning["per_voice"]["caribbean_female"]
    assert list(cloning["per_voice"]) == ["us_male", "caribbean_female"]
    assert male["split"] == "train" and male["rows"] == 2 and male["output"]["top1"] == 0.5
    assert male["ground_truth"]["rows"] == 1 and male["ground_truth"]["top1"] == 1.0
    assert male["output"]["sim"] == pytest.approx((rows[0]["sim"] + rows[1]["sim"]) / 2)
    assert caribbean["split"] == "held_out" and caribbean["rows"] == 1 and caribbean["output"]["top1"] == 1.0
    assert cloning["by_split"]["held_out"] == {"voices": 1, **{k: v for k, v in caribbean.items() if k != "split"}}
    assert cloning["by_split"]["train"]["voices"] == 1 and cloning["by_split"]["train"]["rows"] == 2


def test_the_report_has_the_per_voice_table_and_players(scored) -> None:
    page = (scored / "report.html").read_text()
    table = page[page.index("<table id='voices'>") :]
    table = table[: table.index("</table>")]
    assert re.findall(r"<tr class='(voice|split|all)'><td>([^<]*)</td><td>([^<]*)</td>", table) == [
        ("voice", "us_male", "train"),
        ("voice", "caribbean_female", "held_out"),
        ("split", "held_out voices (1)", "held_out"),
        ("split", "train voices (1)", "train"),
        ("all", "all", ""),
    ]
    # The model's SIM, calibrated SIM, top-1 (0.500 for us_male) and EER, then the floor's (no WER: not scored).
    assert re.search(r"<td>us_male</td><td>train</td><td class='num'>2</td>(<td class='num'>[-0-9.]+</td>){2}"
                     r"<td class='num'>0.500</td>", table)  # fmt: skip
    assert "<th colspan='4'>model</th><th colspan='4'>ground truth</th></tr>" in table and "WER" not in table
    for voice, count in (("us_male", 3), ("caribbean_female", 3)):  # reference, output, ground truth
        block = re.search(rf"<div class='voice-clips' id='clips-{voice}'>(.*?)</div>", page)
        assert (
            block is not None and block.group(1).count("<audio controls preload='none' src='data:audio/flac") == count
        )
        assert re.findall(r"<figcaption>([^<]+)</figcaption>", block.group(1)) == [
            "reference",
            "output",
            "ground truth",
        ]
    assert "<p id='calibration'>Calibrated SIM: 0 is the mean cosine" in page


def test_a_voice_not_enrolled_stops_the_run_before_anything_is_scored(corpus, tmp_path, capsys) -> None:
    lines = corpus["testset"].read_text().splitlines()
    lines[2] = lines[2].rsplit("|", 1)[0] + "|nobody"
    (corpus["root"] / "unknown.lst").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    args = command(corpus, out, f"testset={corpus['root'] / 'unknown.lst'}")
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "row '1_us_male_wrong' is in voice 'nobody', which the enrollment list" in err
    assert not out.exists()
    assert main(command(corpus, out, "metrics=[mel]")) == 2
    assert "voices= scores cloning with the speaker encoder of the sim metric: add sim to metrics" in (
        capsys.readouterr().err
    )
    assert main(command(corpus, out, f"voices={tmp_path / 'none.txt'}")) == 2
    assert "enrollment list" in capsys.readouterr().err and not out.exists()


def test_voices_is_a_path_taken_verbatim() -> None:
    cfg = compose_eval_config(["audio_dir=a", "testset=t", "output=o", "voices=v,1.txt", "metrics=[sim]"])
    assert cfg.voices == "v,1.txt"


def test_testset_voices_are_checked_against_the_enrollment(corpus) -> None:
    enrollment = read_enrollment(corpus["voices"])
    clip = demo_clips()["us_male"][0][0]
    rows = [TestRow("a", clip, "R.", "G.", None), TestRow("b", clip, "R.", "G.", None, "gb_male")]
    assert check_testset_voices(rows, enrollment, "t.lst") == ["gb_male"]
    with pytest.raises(ValueError, match="voices= is given but no row of test set t.lst has a voice"):
        check_testset_voices(rows[:1], enrollment, "t.lst")


def test_source_figures_summary_and_report_on_hand_made_rows(corpus, tmp_path) -> None:
    enrollment = read_enrollment(corpus["voices"])
    calibration = Calibration(0.8, 0.2, ("us_male", "caribbean_female"), 2, 4)
    scores = dict.fromkeys(ENROLLED, 0.0)

    def row(voice: str, wer: float, sim: float, top1: str) -> dict:
        clip = {"wer": wer, "sim": sim, "sim_calibrated": calibration.calibrate(sim), "speaker_top1": top1,
                "speaker_correct": top1 == voice, "speaker_scores": {**scores, top1: 1.0}}  # fmt: skip
        gt = {**clip, "wer": float("nan"), "speaker_correct": True}
        return {"id": voice, "audio": str(corpus["audio"] / "0_us_male.ogg"), "voice": voice, **clip, "gt": gt}

    rows = [row("us_male", 0.2, 0.5, "us_male"), row("us_male", 0.4, 0.8, "gb_male"), {"id": "x", "sim": 0.1}]
    figures = source_figures([("us_male", r) for r in rows[:2]])
    assert figures == pytest.approx({"rows": 2, "wer": 0.3, "sim": 0.65, "sim_calibrated": 0.75, "top1": 0.5,
                                     "eer": equal_error_rate(*verification_trials([("us_male", r["speaker_scores"])
                                                                                   for r in rows[:2]]))})  # fmt: skip
    assert source_figures([]) is None
    summary = cloning_summary(rows, enrollment, calibration)
    assert summary["overall"]["rows"] == 2  # the row without a voice is not scored for cloning
    assert "wer" not in summary["overall"]["ground_truth"]  # NaN left out
    assert list(summary["by_split"]) == ["train"] and summary["per_voice"]["us_male"]["output"]["top1"] == 0.5
    # The report: a WER column when it was scored; without the test-set rows, only the output's player, whatever
    # the items' cap.
    write_report(tmp_path / "r.html", {"cloning": summary}, rows, {}, tmp_path, embed=0)
    page = (tmp_path / "r.html").read_text()
    assert "<th>WER</th><th>SIM</th><th>calibrated SIM</th><th>top-1</th><th>EER</th>" in page
    assert "<tr class='voice'><td>us_male</td><td>train</td><td class='num'>2</td><td class='num'>0.300</td>" in page
    players = re.findall(r"<div class='voice-clips' id='clips-us_male'>.*?</div>", page)
    assert len(players) == 1 and page.count("<figcaption>output</figcaption><audio") == 1
