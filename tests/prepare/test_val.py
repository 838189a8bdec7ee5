"""f5lite-prepare's validation split: held out reproducibly (by utterance or by speaker), with a test set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lhotse import CutSet
from support.data_helpers import read_cuts, write_tone

from f5lite.data.data_sources import open_source
from f5lite.data.testset import read_testset
from f5lite.prepare import PrepareOptions, prepare
from f5lite.prepare.cli import main
from f5lite.prepare.val_split import ValSplit

SPEAKERS = ("ann", "bob", "cyd", "dee")


def dataset(root: Path, per_speaker: int = 5) -> Path:
    """A metadata.csv of `per_speaker` utterances (distinct texts) for each of four speakers."""
    rows = ["audio_file|text|speaker"]
    for s, speaker in enumerate(SPEAKERS):
        for i in range(per_speaker):
            name = f"audio/{speaker}_{i}.wav"
            write_tone(root / name, 1.0 + 0.1 * i + 0.01 * s)
            rows.append(f"{name}|Sentence number {i} read by {speaker}.|{speaker}")
    (root / "metadata.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return root / "metadata.csv"


def val_cuts(out: Path) -> list:
    return list(CutSet.from_jsonl_lazy(out / "val" / "cuts.jsonl.gz"))


def speaker(cut) -> str:
    return cut.supervisions[0].speaker


def test_val_count_holds_out_that_many_and_the_rest_trains(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = prepare(dataset(tmp_path), out, PrepareOptions(val=ValSplit(count=5)))
    train, val = read_cuts(out), val_cuts(out)
    assert len(val) == 5 and len(train) == 15 and len(result.val) == 5 and len(result.cuts) == 15
    assert {c.id for c in train}.isdisjoint({c.id for c in val})
    report = json.loads((out / "report.json").read_text())
    assert report["kept"] == 20 and report["train"] == 15 and report["val"]["utterances"] == 5
    assert {"val/cuts.jsonl.gz", "val/testset.txt"} <= set(report["outputs"])
    # The held-out cuts load as data (paths relative to val/), with their own frames.
    loaded = list(open_source(out / "val").cuts())
    assert [c.id for c in loaded] == [c.id for c in val] and all(
        Path(c.recording.sources[0].source).is_file() for c in loaded
    )


def test_the_split_is_the_same_every_run_and_moves_little_when_data_grows(tmp_path: Path) -> None:
    # Prepared in place, so the cut ids are the relative paths and the hash order does not depend on tmp_path.
    first = tmp_path / "first"
    prepare(dataset(first), first, PrepareOptions(val=ValSplit(count=4)))
    split = (first / "val" / "cuts.jsonl.gz").read_bytes()
    prepare(first / "metadata.csv", first, PrepareOptions(val=ValSplit(count=4)))
    assert (first / "val" / "cuts.jsonl.gz").read_bytes() == split
    grown = tmp_path / "grown"
    prepare(dataset(grown, per_speaker=10), grown, PrepareOptions(val=ValSplit(count=8)))
    before, after = {c.id for c in val_cuts(first)}, {c.id for c in val_cuts(grown)}
    old = before | {c.id for c in read_cuts(first)}
    assert old < {c.id for c in read_cuts(grown)} | after
    # A hash order, not a reshuffle: of the old utterances, the grown split holds out the first ones of the old
    # order. Here (8 of 40 against 4 of 20) that is the whole old split and two more old utterances.
    assert before < after & old


def test_by_speaker_holds_out_whole_voices(tmp_path: Path) -> None:
    out = tmp_path / "out"
    prepare(dataset(tmp_path), out, PrepareOptions(val=ValSplit(count=6, by_speaker=True)))
    held = {speaker(c) for c in val_cuts(out)}
    assert len(held) == 2 and len(val_cuts(out)) == 10  # two whole speakers reach 6 utterances
    assert held.isdisjoint({speaker(c) for c in read_cuts(out)})
    report = json.loads((out / "report.json").read_text())
    assert report["val"] == {"utterances": 10, "seconds": pytest.approx(report["val"]["seconds"]), "speakers": 2,
                             "by_speaker": True}  # fmt: skip


def test_the_test_set_pairs_each_held_out_utterance_with_another_of_its_voice(tmp_path: Path) -> None:
    out = tmp_path / "out"
    prepare(dataset(tmp_path), out, PrepareOptions(val=ValSplit(count=6, by_speaker=True)))
    rows = read_testset(out / "val" / "testset.txt")
    val = {str((out / "val" / c.recording.sources[0].source).resolve()): c for c in val_cuts(out)}
    assert len(rows) == len(val) == 10
    for row in rows:
        target = val[str(row.gt_audio)]
        assert row.gen_text == target.supervisions[0].text and "/" not in row.id
        assert row.ref_audio != row.gt_audio and row.ref_text != row.gen_text
        prompt = str(row.ref_audio)
        assert prompt in val and speaker(val[prompt]) == speaker(target)  # disjoint voices: prompts held out too


def test_fraction_and_bad_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    prepare(dataset(tmp_path), out, PrepareOptions(val=ValSplit(fraction=0.1)))
    assert len(val_cuts(out)) == 2
    with pytest.raises(ValueError, match="holds out all 20 kept utterances"):
        prepare(tmp_path / "metadata.csv", tmp_path / "o2", PrepareOptions(val=ValSplit(count=20)))
    for args, message in [
        (["--val-count", "2", "--val-fraction", "0.1"], "--val-count or --val-fraction, not both"),
        (["--val-by-speaker"], "--val-by-speaker needs --val-count"),
        (["--val-fraction", "1.5"], "--val-fraction 1.5 is not valid"),
        (["--val-count", "-1"], "--val-count -1 is not valid"),
    ]:
        assert main([str(tmp_path / "metadata.csv"), str(tmp_path / "o3"), *args]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1


def test_a_later_run_without_a_split_removes_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main([str(dataset(tmp_path)), str(out), "--val-count", "3", "--mels", "--workers", "1"]) == 0
    assert "validation: 3 utterance(s) held out" in capsys.readouterr().out
    mels = sorted((out / "mels").rglob("*.npy"))
    assert len(mels) == 20
    # The held-out cuts name their mels (../mels/...); a rerun knows them as its own and replaces them.
    assert main([str(tmp_path / "metadata.csv"), str(out), "--val-count", "3", "--mels", "--workers", "1"]) == 0
    assert main([str(tmp_path / "metadata.csv"), str(out), "--workers", "1"]) == 0
    assert not (out / "val").exists() and len(read_cuts(out)) == 20 and not (out / "mels").exists()


def test_a_val_folder_of_someone_elses_stops_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    (out / "val").mkdir(parents=True)
    (out / "val" / "testset.txt").write_text("mine\n")
    assert main([str(dataset(tmp_path)), str(out), "--val-count", "3"]) == 2
    assert "was not written by f5lite-prepare" in capsys.readouterr().err
    assert (out / "val" / "testset.txt").read_text() == "mine\n"
