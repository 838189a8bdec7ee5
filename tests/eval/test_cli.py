"""`f5lite-eval` end to end on a tiny random model with Griffin-Lim: outputs, reruns, resuming, one-line errors."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import soundfile as sf
from support.eval_cli_assets import eval_rows, make_testset, make_tiny_export

from f5lite.data.testset import TESTSET_HEADER, read_testset, write_testset
from f5lite.eval.cli import compose_eval_config, main
from f5lite.eval.run import row_seed

METRICS = "[mel,sim]"
"""The offline metrics cheap enough for the fast tests: `mel` needs the ground truth, `sim` gives the floor."""
MEL_KEYS = {"mel_l1", "mcd", "f0_pairs"}
"""Always there with ground truth (`f0_rmse` is left out when no frame is voiced in both, as with a random model)."""


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("eval")
    return {"root": root, "export": make_tiny_export(root), "testset": make_testset(root / "test.lst")}


def args(setup: dict[str, Path], out: Path, *extra: str) -> list[str]:
    """The test run's arguments; `extra` replaces a key (`key=...`) or, as `~key`, drops it."""
    keys = {
        "model": str(setup["export"]),
        "testset": str(setup["testset"]),
        "output": str(out),
        "metrics": METRICS,
        "sample.vocoder": "griffin_lim",
        "sample.steps": "2",
        "device": "cpu",
        "sample.seed": "7",
    }
    for arg in extra:
        key, _, value = arg.partition("=")
        if key.startswith("~"):
            del keys[key[1:]]
        else:
            keys[key] = value
    return [f"{k}={v}" for k, v in keys.items()]


@pytest.fixture(scope="module")
def first(setup) -> Path:
    """One evaluation of the three-row test set, which the other tests compare against."""
    out = setup["root"] / "first"
    assert main(args(setup, out)) == 0
    return out


def results(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def mean_of(rows: list[dict], key: str) -> float:
    values = [r[key] for r in rows if key in r and not math.isnan(r[key])]
    return sum(values) / len(values)


def test_results_summary_and_report_agree(setup, first) -> None:
    rows = results(first)
    test_rows = read_testset(setup["testset"])
    assert [r["id"] for r in rows] == [t.id for t in test_rows]
    for row, test_row in zip(rows, test_rows, strict=True):
        assert row["gen_text"] == test_row.gen_text
        assert row["audio"] == f"audio/{row['id']}.wav"
        info = sf.info(first / row["audio"])
        assert info.samplerate == 24000 and row["seconds"] == pytest.approx(info.frames / 24000)
        assert row["seed"] == row_seed(7, row["id"])
        assert isinstance(row["sim"], float)
        if test_row.gt_audio is not None:
            assert row.keys() >= MEL_KEYS
            # The floor: the ground truth scored like the output, without the mel metrics (it is their reference).
            assert set(row["gt"]) == {"sim"}
            # The vocoded floor (floor_vocoder=auto: the model's Griffin-Lim): the mel metrics say what it loses.
            assert row["gt_vocoded"].keys() >= {"sim"} | MEL_KEYS
            assert sf.info(first / "gt_vocoded" / f"{row['id']}.wav").samplerate == 24000
        else:
            assert not MEL_KEYS & row.keys() and "gt" not in row and "gt_vocoded" not in row
    assert len({r["seed"] for r in rows}) == len(rows)

    means = summary(first)["means"]
    assert means["count"] == 3
    assert means.keys() == {key for row in rows for key in row if key in {"sim", "f0_rmse", *MEL_KEYS}} | {"count"}
    for key in means.keys() - {"count", "f0_pairs"}:
        assert means[key] == pytest.approx(mean_of(rows, key))
    assert means["f0_pairs"] == sum(row["f0_pairs"] for row in rows if "f0_pairs" in row)  # a total, not a mean
    floor = summary(first)["ground_truth"]
    assert floor["count"] == 2
    assert floor["sim"] == pytest.approx(mean_of([r["gt"] for r in rows if "gt" in r], "sim"))
    vocoded = summary(first)["ground_truth_vocoded"]
    assert vocoded["count"] == 2
    assert vocoded["mel_l1"] == pytest.approx(mean_of([r["gt_vocoded"] for r in rows if "gt" in r], "mel_l1"))
    settings = summary(first)["settings"]
    assert settings["floor_vocoder"] == "griffin_lim"
    assert settings["sample"]["steps"] == 2 and settings["sample"]["seed"] == 7
    assert settings["metrics"] == ["mel", "sim"] and settings["backends"] == {"sim": "resemblyzer"}
    assert {"f5lite", "torch"} <= summary(first)["versions"].keys()

    page = (first / "report.html").read_text()
    assert '<table id="summary">' in page and '<table id="items">' in page
    # Every item embedded (3 rows < report_items): output and reference each, ground truth and vocoded for two.
    sources = re.findall(r"<audio controls preload='none' src='(data:audio/flac;base64,[^']+)'>", page)
    assert len(sources) == page.count("<audio") == 3 + 3 + 2 + 2
    # Worst first by mel_l1 (the first metric with a direction; no wer here), the row without it last.
    listed = re.findall(r"<tr class='item' id='item-([^']+)'>", page)
    with_mel = sorted((r for r in rows if "mel_l1" in r), key=lambda r: -r["mel_l1"])
    assert listed == [r["id"] for r in with_mel] + ["02_gb_male"]


def test_audio_dir_scores_the_written_audio_the_same(setup, first, tmp_path) -> None:
    out = tmp_path / "scored"
    command = [f"audio_dir={first / 'audio'}", f"testset={setup['testset']}", f"output={out}", f"metrics={METRICS}"]
    # audio_dir has no vocoder of its own: the model's is named, so the vocoded floor is the model run's.
    assert main([*command, "limit=2", "floor_vocoder=griffin_lim"]) == 0
    made = results(first)[:2]
    for scored, row in zip(results(out), made, strict=True):
        assert scored["audio"] == str((first / row["audio"]).resolve()) and "seed" not in scored
        assert {k: v for k, v in scored.items() if k != "audio"} == {
            k: v for k, v in row.items() if k not in ("audio", "seed")
        }
    assert "audio_dir" in summary(out)["settings"] and "sample" not in summary(out)["settings"]
    assert summary(out)["settings"]["floor_vocoder"] == "griffin_lim"


def test_the_ground_truth_as_audio_dir_scores_the_floor(setup, first, tmp_path) -> None:
    rows = eval_rows(with_gt=3)[:2]
    write_testset(tmp_path / "gt.lst", rows)
    audio = tmp_path / "gt_audio"
    audio.mkdir()
    for row in rows:
        assert row.gt_audio is not None
        shutil.copy(row.gt_audio, audio / f"{row.id}.ogg")  # any extension soundfile reads
    out = tmp_path / "floor"
    assert main([f"audio_dir={audio}", f"testset={tmp_path / 'gt.lst'}", f"output={out}", "metrics=[sim]"]) == 0
    assert [r["sim"] for r in results(out)] == pytest.approx([r["gt"]["sim"] for r in results(first)[:2]])
    assert summary(out)["means"]["sim"] == pytest.approx(summary(first)["ground_truth"]["sim"])


def test_seed_tts_eval_meta_lst(tmp_path) -> None:
    (tmp_path / "wavs").mkdir()
    lines = []
    for row in eval_rows(with_gt=3)[:2]:
        assert row.gt_audio is not None
        wave, rate = sf.read(row.gt_audio)
        sf.write(tmp_path / "wavs" / f"{row.id}.wav", wave, rate)  # where seed-tts-eval keeps the ground truth
        lines.append(f"{row.id}|{row.ref_text}|{row.ref_audio}|{row.gen_text}")
    (tmp_path / "meta.lst").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    command = [f"audio_dir={tmp_path / 'wavs'}", f"testset={tmp_path / 'meta.lst'}", f"output={out}", "metrics=[mel]"]
    assert main(command) == 0
    assert [r["id"] for r in results(out)] == [line.split("|")[0] for line in lines]
    assert all(r["mel_l1"] == 0 and r["mcd"] == 0 for r in results(out))  # the ground truth against itself


def test_an_interrupted_run_resumes_and_reruns_reproduce_the_audio(setup, first, tmp_path) -> None:
    out = tmp_path / "resumed"
    assert main(args(setup, out, "limit=1")) == 0
    assert [r["id"] for r in results(out)] == [results(first)[0]["id"]]
    with open(out / "results.jsonl", "a") as file:
        file.write('{"id": "01_us_fe')  # a row cut off by a kill while it was written
    assert main(args(setup, out, "limit=2")) == 0
    assert summary(out)["resumed_rows"] == 1
    # Both rows, each made afresh by another run, are the first run's, bit for bit.
    assert results(out) == results(first)[:2]
    for row in results(out):
        assert (out / row["audio"]).read_bytes() == (first / row["audio"]).read_bytes()


def test_a_finished_run_rerun_only_rewrites_the_report(setup, first, tmp_path, monkeypatch) -> None:
    out = tmp_path / "copy"
    shutil.copytree(first, out)
    import f5lite.infer.synthesizer as synthesizer

    monkeypatch.setattr(synthesizer.Synthesizer, "synthesize", lambda *a, **k: pytest.fail("synthesized again"))
    assert main(args(setup, out, "report_items=1")) == 0
    assert summary(out)["resumed_rows"] == 3 and results(out) == results(first)
    assert (out / "report.html").read_text().count("<audio") == 4  # only the worst: output, reference, truth, vocoded


def test_other_settings_or_other_files_in_the_output_are_refused(setup, first, tmp_path, capsys) -> None:
    out = tmp_path / "copy"
    shutil.copytree(first, out)
    assert main(args(setup, out, "sample.steps=3")) == 2
    assert "holds an f5lite-eval run with other settings (differing: sample)" in capsys.readouterr().err
    assert results(out) == results(first)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    assert main(args(setup, tmp_path / "other")) == 2
    assert "is not empty and holds no f5lite-eval run" in capsys.readouterr().err
    assert main(args(setup, tmp_path / "other" / "notes.txt")) == 2
    assert "is a file, not a directory" in capsys.readouterr().err


def bad_testset(root: Path, row: str) -> Path:
    path = root / "bad.lst"
    path.write_text(f"{TESTSET_HEADER}\n{row}\n")
    return path


BAD_INPUTS = {
    "missing test set": (lambda s, t: [f"testset={t / 'nothing.lst'}"], "nothing.lst: no such file"),
    "missing audio": (
        lambda s, t: [f"testset={bad_testset(t, 'a|zz.wav|Ref.|Gen.|')}"],
        "ref_audio .*zz.wav does not exist",
    ),
    "empty text": (lambda s, t: [f"testset={bad_testset(t, 'a|../test.lst|Ref.| |')}"], "gen_text of 'a' is empty"),
    "unknown metric": (lambda s, t: ["metrics=[mel,bleu]"], "metrics='bleu' is not valid"),
    "unknown backend": (lambda s, t: ["metrics=[sim]", "speaker=nosuch"], "nosuch"),
    "missing model": (lambda s, t: [f"model={t / 'no_model'}"], "no_model"),
    "audio_dir without the audio": (
        lambda s, t: [f"audio_dir={t}", "~model", "~sample.vocoder"],
        r"has no <id>\.\{wav\|flac\|ogg\|mp3\} for 3 of 3 rows: 00_us_male, ",
    ),
    "model and audio_dir": (lambda s, t: [f"audio_dir={t}"], "give exactly one of model=PATH"),
    "no output": (lambda s, t: ["output="], "output is not set"),
    "language": (lambda s, t: ["lang=fr"], "lang='fr' is not valid"),
    "seed null": (lambda s, t: ["sample.seed=null"], "sample.seed=null is not valid here"),
    "unknown key": (lambda s, t: ["steps=4"], "Key 'steps' not in 'EvalConfig'"),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_gives_one_line_and_status_2_before_anything_is_made(setup, tmp_path, capsys, case) -> None:
    extra, message = BAD_INPUTS[case]
    (tmp_path / "bad").mkdir()
    out = tmp_path / "out"
    assert main(args(setup, out, *extra(setup, tmp_path / "bad"))) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("f5lite-eval: error: "), err
    assert re.search(message, err), err
    assert not out.exists()  # checked before the output, the model and the synthesis


def test_compose_takes_paths_and_backend_specs_verbatim() -> None:
    cfg = compose_eval_config(
        [
            "model=m,1",
            "testset=t.lst",
            "output=o",
            "asr=whisper:/models/large-v3,x",
            "sample.seed=3",
            "sample.vocoder=griffin_lim",
        ]
    )
    assert cfg.model == "m,1" and cfg.asr == "whisper:/models/large-v3,x"
    assert cfg.sample.seed == 3 and cfg.sample.vocoder == "griffin_lim" and cfg.metrics == ["wer", "sim", "mos", "mel"]


def test_console_script_help_and_error(tmp_path, capsys) -> None:
    assert main(["--help"]) == 0
    assert "f5lite-eval model=PATH testset=FILE output=DIR" in capsys.readouterr().out
    script = Path(sys.executable).parent / "f5lite-eval"
    done = subprocess.run(
        [str(script), f"testset={tmp_path / 'x.lst'}", f"output={tmp_path / 'o'}", "model=m"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "x.lst: no such file" in done.stderr
