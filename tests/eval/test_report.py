"""`report.html`: items worst first, escaped text, a cap on embedded media that decodes; and the PNG encoder."""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from support.eval_cli_assets import eval_rows

from f5lite.audio import load_audio
from f5lite.eval.png import grey_png
from f5lite.eval.report import primary_metric, worst_first, write_report
from f5lite.metrics.melmetrics import F0_FEW_PAIRS

NAN = float("nan")


def ids(rows) -> list[str]:
    return [r["id"] for r in rows]


def test_worst_first_follows_each_metric_s_direction() -> None:
    rows = [{"id": "a", "wer": 0.1, "sim": 0.9}, {"id": "b", "wer": 0.5, "sim": 0.2}, {"id": "c", "sim": 0.5},
            {"id": "d", "wer": NAN, "sim": 0.1}, {"id": "e", "wer": 0.3, "sim": 0.4}]  # fmt: skip
    assert primary_metric(rows) == "wer"
    assert ids(worst_first(rows)) == ["b", "e", "a", "c", "d"]  # highest error first, no value (or NaN) last
    only_sim = [{k: v for k, v in r.items() if k != "wer"} for r in rows]
    assert primary_metric(only_sim) == "sim"
    assert ids(worst_first(only_sim)) == ["d", "b", "e", "c", "a"]  # lowest similarity first


def test_primary_metric_prefers_the_error_rate_and_skips_undirected_keys() -> None:
    assert primary_metric([{"id": "a", "sim": 0.5, "cer": 0.1}]) == "cer"
    assert primary_metric([{"id": "a", "seconds": 2.0, "novel": 1.0, "mcd": 3.0}]) == "mcd"
    assert primary_metric([{"id": "a", "transcript": "hi"}]) is None


@pytest.fixture
def report(tmp_path: Path) -> tuple[Path, list[dict]]:
    """A report of three items over demo clips standing in for the output (the third without ground truth)."""
    test_rows = eval_rows(with_gt=2)
    rows = [
        {
            "id": t.id,
            "gen_text": t.gen_text,
            "audio": str(t.ref_audio),
            "wer": wer,
            "transcript": f"heard {t.id}",
            "duration_error_rule": 0.1,
        }  # summed up apart (as a median), with no mean: no summary row
        for t, wer in zip(test_rows, (0.2, 0.6, 0.4), strict=True)
    ]
    rows[0]["gen_text"] = "<script>alert('x')</script> & \"quotes\""
    summary = {
        "means": {"wer": 0.4, "count": 3},
        "ground_truth": {"wer": 0.05, "count": 2},
        "settings": {"model": "runs/<m>", "testset": "t.lst"},
    }
    page = tmp_path / "report.html"
    write_report(page, summary, rows, {t.id: t for t in test_rows}, tmp_path, embed=2)
    return page, rows


def test_report_tables_escape_and_order(report) -> None:
    page, rows = report
    text = page.read_text()
    summary_table = text[text.index('<table id="summary">') : text.index("</table>")]
    assert re.search(r"<td>wer</td><td>lower</td><td class='num'>0.400</td><td class='num'>0.050</td>", summary_table)
    assert "<td class='num'>3</td><td class='num'>2</td>" in summary_table
    assert summary_table.count("<tr>") == 3 and "duration_error_rule" not in summary_table  # header, wer, items
    assert re.findall(r"<tr class='item' id='item-([^']+)'>", text) == [rows[1]["id"], rows[2]["id"], rows[0]["id"]]
    assert (
        "<script>" not in text and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &quot;quotes&quot;" in text
    )
    assert "runs/&lt;m&gt;" in text and "heard: heard " in text


def test_report_marks_an_f0_error_over_few_voiced_frames_as_noise(tmp_path: Path) -> None:
    test_rows = eval_rows(with_gt=2)[:2]
    rows = [
        {"id": t.id, "gen_text": "x", "audio": str(t.ref_audio), "f0_rmse": rmse, "f0_pairs": pairs}
        for t, rmse, pairs in zip(test_rows, (30.0, 900.0), (F0_FEW_PAIRS, F0_FEW_PAIRS - 1), strict=True)
    ]
    summary = {"means": {"f0_rmse": 465.0, "f0_pairs": 2 * F0_FEW_PAIRS - 1, "count": 2}, "settings": {}}
    page = tmp_path / "report.html"
    write_report(page, summary, rows, {t.id: t for t in test_rows}, tmp_path, embed=0)
    text = page.read_text()
    note = re.search(r"<p id='f0-pairs'>(.*?)</p>", text)
    assert note is not None
    assert note.group(1) == (
        f"f0_rmse rests on {2 * F0_FEW_PAIRS - 1} voiced frame pairs in all; 1 of 2 items rest on fewer than "
        f"{F0_FEW_PAIRS} (marked few): their F0 error is noise."
    )
    items = {m.group(1): m.group(2) for m in re.finditer(r"<tr class='item' id='item-([^']+)'>(.*?)</tr>", text)}
    few, enough = items[rows[1]["id"]], items[rows[0]["id"]]
    assert f"title='rests on {F0_FEW_PAIRS - 1} voiced frame pairs: noise'>900.000 few</td>" in few
    assert " few</td>" not in enough and "<td class='num'>30.000</td>" in enough
    # Counts show as counts: the summary's total and each item's pairs.
    assert f"<td>f0_pairs</td><td></td><td class='num'>{2 * F0_FEW_PAIRS - 1}</td>" in text
    assert f"<td class='num'>{F0_FEW_PAIRS}</td>" in enough

    rows[1]["f0_pairs"] = F0_FEW_PAIRS
    write_report(page, summary, rows, {t.id: t for t in test_rows}, tmp_path, embed=0)
    assert f"every item on at least {F0_FEW_PAIRS}." in page.read_text() and " few</td>" not in page.read_text()


def test_report_embeds_decodable_audio_and_mels_for_the_worst_items_only(report) -> None:
    page, rows = report
    text = page.read_text()
    items = text.split("<tr class='item'")[1:]
    # embed=2: the two worst (row 1 with ground truth: 3 clips, 2 mels; row 2 without: 2 clips, 1 mel), not row 0.
    assert [item.count("<audio") for item in items] == [3, 2, 0]
    assert [item.count("<img class='mel'") for item in items] == [2, 1, 0]
    first_clip = re.search(r"src='data:audio/flac;base64,([^']+)'", items[0])
    assert first_clip is not None
    decoded, rate = sf.read(io.BytesIO(base64.b64decode(first_clip.group(1))), dtype="float32")
    original = load_audio(rows[1]["audio"]).numpy()
    assert rate == 24000 and decoded.shape == original.shape
    assert np.abs(decoded - original).max() < 2 / 32768  # 16-bit FLAC of the clip
    image = re.search(r"<img class='mel' alt='mel of output' src='data:image/png;base64,([^']+)'>", items[0])
    assert image is not None
    pil = pytest.importorskip("PIL.Image")
    mel = pil.open(io.BytesIO(base64.b64decode(image.group(1))))
    assert mel.mode == "L" and mel.size == (len(original) // 256 + 1, 100)  # [frames, mels] as width x height


def test_grey_png_decodes_to_the_same_pixels() -> None:
    pil = pytest.importorskip("PIL.Image")
    image = np.random.default_rng(0).integers(0, 256, size=(7, 13), dtype=np.uint8)
    decoded = np.asarray(pil.open(io.BytesIO(grey_png(image))))
    assert decoded.dtype == np.uint8 and np.array_equal(decoded, image)
    with pytest.raises(ValueError, match="uint8 image"):
        grey_png(image.astype(np.float32))
