"""Test-set files: our format and seed-tts-eval's meta.lst read alike, written back relative, and one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from f5lite.data.testset import TESTSET_HEADER, TESTSET_VOICE_HEADER, TestRow, read_testset, write_testset


@pytest.fixture
def clips(tmp_path: Path) -> Path:
    """A directory with empty stand-in audio files (reading a test set only checks that they exist)."""
    for name in ("ref/a.wav", "ref/b.wav", "gt/a.wav", "wavs/u1.wav"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).touch()
    return tmp_path


def write(path: Path, *lines: str) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_our_format_resolves_paths_against_the_file_and_gt_is_optional(clips: Path, monkeypatch) -> None:
    file = write(
        clips / "test.lst",
        TESTSET_HEADER,
        "a|ref/a.wav| Some call me nature. |Hello there.|gt/a.wav",
        "",  # blank lines are skipped
        "b|ref/b.wav|Others call me mother.|How are you?|",
    )
    monkeypatch.chdir("/")  # paths are relative to the file, not to the working directory
    rows = read_testset(file)
    assert rows == [
        TestRow("a", clips / "ref/a.wav", "Some call me nature.", "Hello there.", clips / "gt/a.wav"),
        TestRow("b", clips / "ref/b.wav", "Others call me mother.", "How are you?", None),
    ]


def test_header_without_the_gt_column(clips: Path) -> None:
    file = write(clips / "test.lst", "id|ref_audio|ref_text|gen_text", "a|ref/a.wav|Ref.|Gen.")
    assert read_testset(file) == [TestRow("a", clips / "ref/a.wav", "Ref.", "Gen.", None)]


def test_write_then_read_gives_the_same_rows_with_relative_paths(clips: Path) -> None:
    rows = [
        TestRow("a", clips / "ref/a.wav", "Ref a.", "Gen a.", clips / "gt/a.wav"),
        TestRow("b", clips / "ref/b.wav", "Ref b.", "Gen b.", None),
    ]
    (clips / "lists").mkdir()
    file = clips / "lists" / "val.lst"
    write_testset(file, rows)
    assert file.read_text().splitlines() == [
        TESTSET_HEADER,
        "a|../ref/a.wav|Ref a.|Gen a.|../gt/a.wav",
        "b|../ref/b.wav|Ref b.|Gen b.|",
    ]
    assert read_testset(file) == rows


def test_the_voice_column_is_read_and_written_only_when_a_row_has_a_voice(clips: Path) -> None:
    assert TESTSET_VOICE_HEADER == "id|ref_audio|ref_text|gen_text|gt_audio|voice"
    file = write(
        clips / "test.lst",
        TESTSET_VOICE_HEADER,
        "a|ref/a.wav|Ref.|Gen.|gt/a.wav| ann ",
        "b|ref/b.wav|Ref.|Gen.||",  # a row may leave its voice empty
    )
    rows = read_testset(file)
    assert rows == [
        TestRow("a", clips / "ref/a.wav", "Ref.", "Gen.", clips / "gt/a.wav", "ann"),
        TestRow("b", clips / "ref/b.wav", "Ref.", "Gen.", None),
    ]
    assert rows[1].voice is None
    write_testset(clips / "again.lst", rows)
    assert (clips / "again.lst").read_text().splitlines() == [
        TESTSET_VOICE_HEADER,
        "a|ref/a.wav|Ref.|Gen.|gt/a.wav|ann",
        "b|ref/b.wav|Ref.|Gen.||",
    ]
    assert read_testset(clips / "again.lst") == rows
    write_testset(clips / "plain.lst", [rows[1]])
    assert (clips / "plain.lst").read_text().splitlines()[0] == TESTSET_HEADER  # no voice: no column
    for voice, message in (("x|y", "voice holds '|'"), (" ", "voice is empty")):
        with pytest.raises(ValueError, match=message):
            write_testset(clips / "x.lst", [TestRow("a", clips / "ref/a.wav", "Ref.", "Gen.", None, voice)])
    with pytest.raises(ValueError, match=r"test.lst:2: expected 6 fields separated by '\|' \(.*\|gt_audio\|voice\)"):
        read_testset(write(clips / "test.lst", TESTSET_VOICE_HEADER, "a|ref/a.wav|Ref.|Gen.|"))


def test_write_refuses_a_separator_or_line_break_in_a_field(clips: Path) -> None:
    for text in ("one|two", "one\ntwo"):
        with pytest.raises(ValueError, match="gen_text holds"):
            write_testset(clips / "x.lst", [TestRow("a", clips / "ref/a.wav", "Ref.", text, None)])
    assert not (clips / "x.lst").exists()


def test_seed_tts_eval_meta_lst(clips: Path) -> None:
    file = write(
        clips / "meta.lst",
        "u1|Ref one.|ref/a.wav|Gen one.",  # 4 fields: ground truth at wavs/<id>.wav, which exists
        "u2|Ref two.|ref/b.wav|Gen two.",  # ... and does not
        "u3|Ref three.|ref/a.wav|Gen three.|gt/a.wav",  # 5 fields: named
    )
    assert read_testset(file) == [
        TestRow("u1", clips / "ref/a.wav", "Ref one.", "Gen one.", clips / "wavs/u1.wav"),
        TestRow("u2", clips / "ref/b.wav", "Ref two.", "Gen two.", None),
        TestRow("u3", clips / "ref/a.wav", "Ref three.", "Gen three.", clips / "gt/a.wav"),
    ]


BAD_ROWS = {
    "fields": ("a|ref/a.wav|Ref.", r"test.lst:2: expected 5 fields"),
    "empty gen_text": ("a|ref/a.wav|Ref.| |", r"test.lst:2: gen_text of 'a' is empty"),
    "empty ref_text": ("a|ref/a.wav||Gen.|", r"test.lst:2: ref_text of 'a' is empty"),
    "missing ref": ("a|ref/zz.wav|Ref.|Gen.|", r"test.lst:2: ref_audio .*zz.wav does not exist"),
    "missing gt": ("a|ref/a.wav|Ref.|Gen.|gt/zz.wav", r"test.lst:2: gt_audio .*zz.wav does not exist"),
    "empty id": (" |ref/a.wav|Ref.|Gen.|", r"test.lst:2: the id is empty"),
    "path id": ("x/a|ref/a.wav|Ref.|Gen.|", r"test.lst:2: id 'x/a' is not a plain file name"),
}


@pytest.mark.parametrize("case", BAD_ROWS)
def test_bad_rows_name_the_file_and_line(clips: Path, case: str) -> None:
    row, message = BAD_ROWS[case]
    with pytest.raises(ValueError, match=message) as caught:
        read_testset(write(clips / "test.lst", TESTSET_HEADER, row))
    assert "\n" not in str(caught.value)


def test_duplicate_ids_name_both_lines(clips: Path) -> None:
    file = write(clips / "test.lst", TESTSET_HEADER, "a|ref/a.wav|R.|G.|", "b|ref/a.wav|R.|G.|", "a|ref/b.wav|R.|G.|")
    with pytest.raises(ValueError, match=r"test.lst:4: id 'a' is already used on line 2"):
        read_testset(file)


def test_bad_files(clips: Path) -> None:
    with pytest.raises(ValueError, match=r"test set .*nothing.lst: no such file"):
        read_testset(clips / "nothing.lst")
    with pytest.raises(ValueError, match=r"is a directory"):
        read_testset(clips)
    with pytest.raises(ValueError, match=r"is empty"):
        read_testset(write(clips / "empty.lst", ""))
    with pytest.raises(ValueError, match=r"has a header but no rows"):
        read_testset(write(clips / "header.lst", TESTSET_HEADER))
    with pytest.raises(ValueError, match=r"meta.lst.*but the line has 1 fields"):
        read_testset(write(clips / "other.lst", "id,text", "a,b|c"))
