"""The input layouts: the same audio gives the same cuts, and every unusable row is reported."""

from __future__ import annotations

import json

import pytest
from support.data_helpers import read_cuts, write_tone

from f5lite.data.manifest import ManifestRow, read_manifest
from f5lite.prepare import prepare, read_source

TRANSCRIPTS = {
    "LJ001-0001": ("Printing, in the only sense with which we are at present concerned.", 4.0),
    "LJ001-0002": ("In being comparatively modern, 2 years.", 2.5),
    "LJ001-0003": ("For although the Chinese took impressions.", 3.1),
}
NORMALIZED = {"LJ001-0002": "In being comparatively modern, two years."}


def _lj_speech(root):
    wavs = root / "wavs"
    lines = []
    for utterance, (text, seconds) in TRANSCRIPTS.items():
        write_tone(wavs / f"{utterance}.wav", seconds, sample_rate=22050)
        lines.append(f"{utterance}|{text}|{NORMALIZED.get(utterance, text)}")
    (root / "metadata.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def test_the_layouts_give_the_same_cuts(tmp_path):
    lj = _lj_speech(tmp_path / "LJSpeech-1.1")
    # F5-TTS layout over the same files: a header, paths relative to the CSV, a byte-order mark, CRLF endings.
    csv = tmp_path / "f5" / "metadata.csv"
    csv.parent.mkdir()
    rows = [f"../LJSpeech-1.1/wavs/{u}.wav|{NORMALIZED.get(u, t)}" for u, (t, _) in TRANSCRIPTS.items()]
    csv.write_bytes(("\ufeffaudio_file|text\r\n" + "\r\n".join(rows) + "\r\n").encode("utf-8"))
    # Folder layout over the same files: transcripts next to the audio, one wrapped over two lines, one a .lab.
    for utterance, (text, _) in TRANSCRIPTS.items():
        text = NORMALIZED.get(utterance, text)
        suffix = ".lab" if utterance.endswith("3") else ".txt"
        (lj / "wavs" / f"{utterance}{suffix}").write_text(text.replace(", ", ",\n"), encoding="utf-8")

    # A Lhotse CutSet over the same files, as a recipe writes one (speaker-less supervisions, absolute paths).
    from lhotse import CutSet, MonoCut, Recording, SupervisionSegment

    cuts = []
    for utterance, (text, _) in TRANSCRIPTS.items():
        recording = Recording.from_file(lj / "wavs" / f"{utterance}.wav", recording_id=utterance)
        supervision = SupervisionSegment(
            utterance, utterance, 0.0, recording.duration, text=NORMALIZED.get(utterance, text)
        )
        cuts.append(MonoCut(utterance, 0.0, recording.duration, 0, recording=recording, supervisions=[supervision]))
    segment = MonoCut("part", 1.0, 1.0, 0, recording=cuts[0].recording, supervisions=[])
    CutSet.from_cuts([*cuts, segment]).to_file(tmp_path / "recipe_cuts.jsonl.gz")

    written = {}
    layouts = {
        "ljspeech": lj,
        "f5tts_csv": csv,
        "folder": lj / "wavs",
        "lhotse_cuts": tmp_path / "recipe_cuts.jsonl.gz",
    }
    for name, source in layouts.items():
        result = prepare(source, tmp_path / f"out_{name}")
        assert result.report["layout"] == name
        assert result.report["kept"] == 3
        assert [s.reason for s in result.skipped] == (["segment"] if name == "lhotse_cuts" else [])
        written[name] = (tmp_path / f"out_{name}" / "cuts.jsonl.gz").read_bytes()
    assert written["ljspeech"] == written["f5tts_csv"] == written["folder"] == written["lhotse_cuts"]
    texts = [cut.supervisions[0].text for cut in read_cuts(tmp_path / "out_folder")]
    assert texts[1] == "In being comparatively modern, two years."  # LJSpeech's normalized column


def test_ljspeech_metadata_file_and_two_column_rows(tmp_path):
    lj = tmp_path / "lj"
    write_tone(lj / "wavs" / "a.wav", 1.0)
    write_tone(lj / "wavs" / "b.flac", 1.0)
    (lj / "metadata.csv").write_text("a|Raw text.|\nb.flac|Only raw.\nbroken line\n", encoding="utf-8")
    source = read_source(lj / "metadata.csv")
    assert source.layout == "ljspeech"
    assert [(r.audio_path.name, r.text) for r in source.rows] == [("a.wav", "Raw text."), ("b.flac", "Only raw.")]
    assert [(s.reason, s.detail.split(":")[0]) for s in source.skipped] == [("malformed_row", "metadata.csv")]
    assert "metadata.csv:3" in source.skipped[0].detail


def test_f5tts_csv_with_absolute_paths_speakers_and_bad_rows(tmp_path):
    audio = write_tone(tmp_path / "elsewhere" / "x.wav", 1.0)
    csv = tmp_path / "data" / "metadata.csv"
    csv.parent.mkdir()
    csv.write_text(
        f"audio_file|text|speaker\n{audio}|Hello | there.|alice\nno separator here\n{audio}|Again.|bob\n",
        encoding="utf-8",
    )
    source = read_source(csv)
    assert source.layout == "f5tts_csv"
    assert [(r.audio_path, r.text, r.speaker) for r in source.rows] == [(audio, "Hello | there.", "alice")]
    assert sorted(s.reason for s in source.skipped) == ["duplicate", "malformed_row"]


def test_folder_layout_speakers_missing_transcripts_and_orphans(tmp_path):
    root = tmp_path / "corpus"
    write_tone(root / "anna" / "1.wav", 1.0)
    (root / "anna" / "1.txt").write_text("Anna speaks.", encoding="utf-8")
    write_tone(root / "ben" / "sub" / "2.ogg", 1.0)
    (root / "ben" / "sub" / "2.lab").write_text("Ben speaks.", encoding="utf-8")
    write_tone(root / "top.wav", 1.0)
    (root / "top.txt").write_text("No speaker.", encoding="utf-8")
    write_tone(root / "untranscribed.wav", 1.0)
    (root / "orphan.lab").write_text("Nobody said this.", encoding="utf-8")
    (root / "notes.md").write_text("not data", encoding="utf-8")

    result = prepare(root, root)  # the outputs go into the input folder itself
    assert [(c.recording.sources[0].source, c.supervisions[0].speaker) for c in result.cuts] == [
        ("anna/1.wav", "anna"),  # relative to OUT_DIR, because the audio lives inside it
        ("ben/sub/2.ogg", "ben"),
        ("top.wav", None),
    ]
    assert sorted((s.path.name, s.reason) for s in result.skipped) == [
        ("orphan.lab", "missing_audio"),
        ("untranscribed.wav", "no_transcript"),
    ]
    assert result.report["speakers"] == {"anna": 1, "ben": 1}
    assert [c.id for c in read_cuts(root)] == ["anna/1", "ben/sub/2", "top"]
    # A second run does not mistake the first run's vocab.txt for a transcript.
    assert prepare(root, root).report == result.report


def test_unusable_inputs_raise_one_line(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        read_source(tmp_path / "nope")
    bad = tmp_path / "latin1.csv"
    bad.write_bytes(b"audio_file|text\nx.wav|caf\xe9\n")
    with pytest.raises(ValueError, match="not UTF-8"):
        read_source(bad)


def test_a_manifest_of_an_earlier_version_is_still_read_and_errors_name_the_line(tmp_path):
    manifest = tmp_path / "manifest.jsonl"
    lines = [
        {"audio_path": "a.wav", "text": "text", "duration": 1.5, "frames": 141, "sample_rate": 24000, "speaker": "spk"},
        {"audio_path": str(tmp_path.parent / "b.wav"), "text": ["ni3", "hao3"], "duration": 2.0, "frames": 188},
    ]
    manifest.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    assert read_manifest(manifest) == [
        ManifestRow(tmp_path / "a.wav", "text", 1.5, 141, 24000, "spk"),
        ManifestRow(tmp_path.parent / "b.wav", ("ni3", "hao3"), 2.0, 188),
    ]

    manifest.write_text(json.dumps(lines[0]) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"manifest\.jsonl:2: not valid JSON"):
        read_manifest(manifest)
    manifest.write_text('{"audio_path": "a.wav", "text": "x"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="missing key.*duration"):
        read_manifest(manifest)
