"""OUT of `f5lite-transcribe`: what is refused before anything is written, what an interrupted run leaves, and clip
folders that never hold one another."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from support.data_helpers import file_digests
from support.transcribe_assets import build_recording

from f5lite.prepare import PrepareOptions, prepare
from f5lite.transcribe.filters import FilterSettings
from f5lite.transcribe.run import TranscribeOptions, transcribe
from f5lite.transcribe.slicing import SliceSettings
from f5lite.transcribe.source import TranscribeSettings
from f5lite.transcribe.workspace import CLIPS_DIR, STATE_DIR

pytest.importorskip("silero_vad")
pytest.importorskip("pocketsphinx")


@pytest.fixture(scope="module")
def raw(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two short recordings of three utterances each, with the same stem in two formats."""
    root = tmp_path_factory.mktemp("raw")
    build_recording(root / "talk.wav", "us_female", 3)
    build_recording(root / "talk.flac", "gb_male", 3, rate=22_050, seed=4)
    return root


@pytest.fixture(scope="module")
def finished(raw: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run's OUT (copy it before changing it)."""
    out = tmp_path_factory.mktemp("finished") / "out"
    transcribe(raw, out, TranscribeOptions())
    return out


def copy_of(out: Path, tmp_path: Path) -> Path:
    shutil.copytree(out, tmp_path / "out")
    return tmp_path / "out"


def clip_files(out: Path) -> dict[str, str]:
    """Every clip file under OUT/clips with its content hash."""
    return {name: digest for name, (digest, _) in file_digests(out / CLIPS_DIR).items()}


def test_sources_with_one_stem_get_their_own_folders(finished: Path) -> None:
    assert sorted(p.name for p in (finished / CLIPS_DIR).iterdir()) == ["talk", "talk_wav"]
    assert {p.name.rsplit("_", 1)[0] for p in (finished / CLIPS_DIR / "talk_wav").iterdir()} == {"talk_wav"}


def test_out_inside_in_is_refused_before_anything_is_written(raw: Path) -> None:
    before = file_digests(raw)
    with pytest.raises(ValueError, match=r"OUT .*clips.* is inside IN .*: its clips would be read as recordings"):
        transcribe(raw, raw / "clips", TranscribeOptions())
    assert file_digests(raw) == before and not (raw / "clips").exists()


def test_in_inside_out_is_refused_before_anything_is_written(finished: Path, tmp_path: Path) -> None:
    out = copy_of(finished, tmp_path)
    before = sorted(out.rglob("*")), file_digests(out)
    with pytest.raises(ValueError, match=r"IN .*clips is inside OUT .*out, which holds only what f5lite-transcribe"):
        transcribe(out / CLIPS_DIR, out, TranscribeOptions())  # an earlier run's clips taken for recordings
    assert (sorted(out.rglob("*")), file_digests(out)) == before


def test_a_run_refused_after_taking_outs_lock_removes_the_out_it_made(raw: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"--vocab-of: .*nothing does not exist"):
        transcribe(raw, tmp_path / "new" / "out", TranscribeOptions(vocab_of=tmp_path / "nothing"))
    assert list(tmp_path.iterdir()) == []  # OUT, and its parent, made for the lock: gone again
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"--vocab-of: .*nothing does not exist"):
        transcribe(raw, tmp_path / "empty", TranscribeOptions(vocab_of=tmp_path / "nothing"))
    assert [p.name for p in tmp_path.iterdir()] == ["empty"]  # the user's own empty OUT stays


def test_paths_that_are_not_utf8_are_refused_in_one_line(raw: Path, tmp_path: Path) -> None:
    odd = Path(os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9"))
    with pytest.raises(ValueError, match=r"^OUT .*/caf\\xe9 is not valid UTF-8 .*; rename it$"):
        transcribe(raw, odd, TranscribeOptions())
    shutil.copytree(raw, odd)
    with pytest.raises(ValueError, match=r"^IN .*/caf\\xe9 is not valid UTF-8"):
        transcribe(odd, tmp_path / "out", TranscribeOptions())
    assert sorted(os.listdir(os.fsencode(tmp_path))) == [b"caf\xe9"]


def test_out_with_someone_elses_files_is_refused_before_anything_is_written(raw: Path, tmp_path: Path) -> None:
    (tmp_path / "mine.wav").write_bytes(b"not ours")
    with pytest.raises(ValueError, match=r"holds files that f5lite-transcribe did not write \(such as mine.wav\)"):
        transcribe(raw, tmp_path, TranscribeOptions())
    assert [p.name for p in tmp_path.iterdir()] == ["mine.wav"]
    (tmp_path / "mine.wav").unlink()
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ValueError, match="is a file, not a folder"):
        transcribe(raw, tmp_path / "afile", TranscribeOptions())


def test_a_foreign_file_among_the_clips_is_refused(finished: Path, raw: Path, tmp_path: Path) -> None:
    out = copy_of(finished, tmp_path)
    (out / CLIPS_DIR / "talk" / "notes.md").write_text("mine")
    before = file_digests(out)
    with pytest.raises(ValueError, match=r"notes.md was not written by f5lite-transcribe"):
        transcribe(raw, out, TranscribeOptions())
    assert file_digests(out) == before


def test_other_settings_are_refused_naming_them(finished: Path, raw: Path, tmp_path: Path) -> None:
    out = copy_of(finished, tmp_path)
    other = TranscribeOptions(TranscribeSettings(SliceSettings(max_seconds=12.0)))
    with pytest.raises(ValueError, match=r"made with other settings: slicing.max_seconds=20.0 \(now 12.0\)"):
        transcribe(raw, out, other)
    (
        out / STATE_DIR / "sources" / next(iter(sorted(p.name for p in (out / STATE_DIR / "sources").iterdir())))
    ).write_text("{")
    with pytest.raises(ValueError, match="a damaged record of a finished source"):
        transcribe(raw, out, TranscribeOptions())


def test_bad_inputs_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is not a folder"):
        transcribe(tmp_path / "missing", tmp_path / "out", TranscribeOptions())
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("no audio here")
    with pytest.raises(ValueError, match=r"holds no audio files \(aif, aiff"):
        transcribe(tmp_path / "empty", tmp_path / "out", TranscribeOptions())
    with pytest.raises(ValueError, match="workers=0 is not valid"):
        TranscribeOptions(workers=0)
    assert not (tmp_path / "out").exists()


def test_an_interrupted_source_is_redone_and_finished_ones_are_not_touched(
    finished: Path, raw: Path, tmp_path: Path
) -> None:
    out = copy_of(finished, tmp_path)
    first = clip_files(finished)
    # As a run killed after `talk_wav`'s folder was renamed into place but before its record was written, with a
    # staging folder of the next source half written.
    (record,) = [p for p in (out / STATE_DIR / "sources").iterdir() if json.loads(p.read_text())["key"] == "talk.wav"]
    record.unlink()
    (out / CLIPS_DIR / "talk_wav" / "talk_wav_00001.txt").write_text("half")
    staging = out / STATE_DIR / "staging" / "0123456789abcdef"
    staging.mkdir(parents=True)
    (staging / "talk_00001.wav").write_bytes(b"half a clip")
    kept = file_digests(out / CLIPS_DIR / "talk")
    transcribe(raw, out, TranscribeOptions())
    assert file_digests(out / CLIPS_DIR / "talk") == kept  # the finished source: not rewritten
    assert clip_files(out) == first  # the redone one: as an uninterrupted run made it
    assert not (out / STATE_DIR / "staging").exists()


def test_deleted_or_corrected_clips_are_the_users_choice(finished: Path, raw: Path, tmp_path: Path) -> None:
    out = copy_of(finished, tmp_path)
    (out / CLIPS_DIR / "talk" / "talk_00001.wav").unlink()
    (out / CLIPS_DIR / "talk" / "talk_00001.txt").unlink()
    (out / CLIPS_DIR / "talk" / "talk_00002.txt").write_text("Zürich\n", encoding="utf-8")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text(" \n" + "".join(f"{c}\n" for c in "abcdefghijklmnopqrstuvwxyz'"), encoding="utf-8")
    result = transcribe(raw, out, TranscribeOptions(vocab_of=vocab))
    assert result.vocab is not None
    assert [(m.token, m.count, m.examples) for m in result.vocab.missing] == [
        ("Z", 1, ("clips/talk/talk_00002.txt",)),
        ("ü", 1, ("clips/talk/talk_00002.txt",)),
    ]
    written = (out / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert written == vocab.read_text(encoding="utf-8").splitlines() + ["Z", "ü"]  # old ids kept, new appended
    assert result.report["vocab"]["missing"][0] == {"token": "Z", "count": 1, "examples": ["clips/talk/talk_00002.txt"]}
    assert not (out / CLIPS_DIR / "talk" / "talk_00001.wav").exists()  # a deleted clip stays deleted


def test_vocab_of_a_model_directory_and_its_errors(finished: Path, raw: Path, tmp_path: Path) -> None:
    out = copy_of(finished, tmp_path)
    model = tmp_path / "model"
    model.mkdir()
    with pytest.raises(ValueError, match=r"--vocab-of: .*model has no vocab.txt"):
        transcribe(raw, out, TranscribeOptions(vocab_of=model))
    with pytest.raises(ValueError, match=r"--vocab-of: .*nothing does not exist"):
        transcribe(raw, out, TranscribeOptions(vocab_of=tmp_path / "nothing"))
    letters = sorted(
        {c for p in (out / CLIPS_DIR).rglob("*.txt") for c in p.read_text(encoding="utf-8").strip()} - {" "}
    )
    (model / "vocab.txt").write_text(" \n" + "".join(f"{c}\n" for c in letters), encoding="utf-8")
    result = transcribe(raw, out, TranscribeOptions(vocab_of=model))
    assert result.vocab is not None and result.vocab.missing == ()
    assert (out / "vocab.txt").read_text(encoding="utf-8") == (model / "vocab.txt").read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="--vocab-of needs a tokenizer with a vocabulary"):
        transcribe(raw, out, TranscribeOptions(vocab_of=model, tokenizer="byte"))


def test_clips_the_filters_leave_out_are_listed_and_not_written(finished: Path, raw: Path, tmp_path: Path) -> None:
    report = json.loads((finished / "report.json").read_text(encoding="utf-8"))
    confidences = sorted(clip["confidence"] for source in report["sources"] for clip in source["clips"])
    median = confidences[len(confidences) // 2]
    strict = TranscribeOptions(TranscribeSettings(filters=FilterSettings(min_confidence=median)))
    result = transcribe(raw, tmp_path / "out", strict)
    kept = [clip for source in result.report["sources"] for clip in source["clips"]]
    left = [span for source in result.report["sources"] for span in source["left_out"]]
    assert len(kept) + len(left) == len(confidences) and kept and left
    assert all(clip["confidence"] >= median for clip in kept)
    assert all(span["reason"].endswith(f"< min_confidence={median:g}") and span["text"] for span in left)
    written = sorted(p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*.wav"))
    assert written == sorted(clip["file"] for clip in kept)


def test_a_file_without_speech_gives_no_clips(tmp_path: Path) -> None:
    (tmp_path / "raw").mkdir()
    sf.write(tmp_path / "raw" / "hum.wav", 0.05 * np.sin(np.arange(16_000 * 4) * 2 * np.pi * 50 / 16_000), 16_000)
    result = transcribe(tmp_path / "raw", tmp_path / "out", TranscribeOptions())
    (source,) = result.report["sources"]
    assert source["status"] == "no speech" and result.report["totals"]["clips_kept"] == 0
    assert not (tmp_path / "out" / CLIPS_DIR).exists()


def wav_names(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.wav"))


def test_a_retried_recording_leaves_the_clips_of_a_folder_of_its_name_alone(tmp_path: Path) -> None:
    """The review's case: `a.wav` beside a folder `a/`; `a.wav` is corrupt at first, then replaced and redone."""
    raw, out = tmp_path / "raw", tmp_path / "out"
    raw.mkdir()
    (raw / "a.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunk" + bytes(200))
    build_recording(raw / "a" / "b.wav", "us_female", 2)
    first = transcribe(raw, out, TranscribeOptions())
    assert [f.key for f in first.failures] == ["a.wav"]
    assert wav_names(out / CLIPS_DIR) == ["a/b/b_00001.wav", "a/b/b_00002.wav"]
    (out / CLIPS_DIR / "a" / "b" / "b_00002.txt").write_text("Proofread by hand.\n", encoding="utf-8")
    proofread = file_digests(out / CLIPS_DIR / "a")
    build_recording(raw / "a.wav", "gb_male", 1, seed=4)  # replaced by a good recording
    second = transcribe(raw, out, TranscribeOptions())
    assert second.failures == []
    assert file_digests(out / CLIPS_DIR / "a") == proofread  # every clip of a/b.wav and its edited text, untouched
    assert wav_names(out / CLIPS_DIR) == ["a/b/b_00001.wav", "a/b/b_00002.wav", "a_wav/a_wav_00001.wav"]
    prepared = prepare(out / CLIPS_DIR, tmp_path / "data", PrepareOptions())
    cuts = {Path(cut.recording.sources[0].source).name: cut.supervisions[0] for cut in prepared.cuts}
    assert {name: s.speaker for name, s in cuts.items()} == {
        "b_00001.wav": "a",  # a recording in a folder of IN: that folder's speaker
        "b_00002.wav": "a",
        "a_wav_00001.wav": "a_wav",  # a recording at IN's top level: its own speaker
    }
    assert cuts["b_00002.wav"].text == "Proofread by hand."


def test_a_folder_added_beside_a_finished_recording_of_its_name_gets_a_clip_folder_of_its_own(tmp_path: Path) -> None:
    raw, out = tmp_path / "raw", tmp_path / "out"
    build_recording(raw / "a.wav", "us_female", 1)
    transcribe(raw, out, TranscribeOptions())
    finished = file_digests(out / CLIPS_DIR / "a")
    build_recording(raw / "a" / "b.wav", "gb_male", 1, seed=4)
    transcribe(raw, out, TranscribeOptions())
    build_recording(raw / "a_2" / "d.wav", "us_male", 1, seed=5)
    last = transcribe(raw, out, TranscribeOptions())
    assert file_digests(out / CLIPS_DIR / "a") == finished  # a finished source keeps its folder, untouched
    # The folder's clip folder is renamed (a_2, its speaker), and stays its own when a folder a_2 of IN comes later.
    assert wav_names(out / CLIPS_DIR) == ["a/a_00001.wav", "a_2/b/b_00001.wav", "a_2_2/d/d_00001.wav"]
    assert last.report["totals"]["clips_kept"] == 3 and last.failures == []
