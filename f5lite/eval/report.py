"""`report.html`: one self-contained page to read an evaluation and listen to its worst items.

The page holds a summary table (the model's means next to the ground-truth floor, and to the vocoded floor when there
is one), then every item, worst first by the primary metric (`wer` or `cer` when scored, else the first metric with a
direction). The first `embed` items carry their audio (output, reference, ground truth, vocoded ground truth) as FLAC
data URIs and their mel-spectrograms as PNG data URIs;
the rest are table rows only, which keeps the page to a few megabytes per 10 embedded items of 5 s. An `f0_rmse` that
rests on fewer than `F0_FEW_PAIRS` voiced frame pairs is marked "few" and counted under the summary: over a handful
of frames the figure is noise. With cloning metrics (`voices=`) a per-voice table follows the summary (rows, error
rate, similarity raw and calibrated, top-1 accuracy and EER of the model beside the floors, then per split and over
all rows) with players for the reference, the output and the ground truth of each voice's first row (three clips a
voice: a test set of 25 voices adds about 10 MB). Nothing is loaded from elsewhere, so the file can be mailed or
attached to a run as it is. All text is HTML-escaped.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import soundfile as sf
from torch import Tensor

from f5lite.atomic import write_text_atomic
from f5lite.audio import SAMPLE_RATE, load_audio, log_mel
from f5lite.audio.images import mel_image
from f5lite.data.testset import TestRow
from f5lite.eval.floors import VOCODED_DIR
from f5lite.eval.png import grey_png
from f5lite.metrics.melmetrics import F0_FEW_PAIRS
from f5lite.metrics.scoring import LOWER_IS_BETTER, SUMMED_KEYS

_PRIMARY = ("wer", "cer")
_NON_METRIC = ("id", "gen_text", "audio", "seconds", "seed", "gt", "gt_vocoded", "transcript")
_NOT_SETTINGS = ("means", "ground_truth", "ground_truth_vocoded", "cloning")  # the summary's keys shown in tables
_CLONING_COLUMNS = (("sim", "SIM"), ("sim_calibrated", "calibrated SIM"), ("top1", "top-1"), ("eer", "EER"))
"""The figures of each source in the per-voice table after the error rate, and their headings."""
_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin-bottom: 1.5em; }
th, td { border: 1px solid #ccc; padding: 4px 8px; vertical-align: top; text-align: left; }
th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.text { max-width: 28em; }
td.few { color: #a33; }
.heard { color: #666; }
figure { margin: 0 0 6px 0; }
figcaption { font-size: 12px; color: #555; }
audio { height: 32px; width: 260px; display: block; }
img.mel { height: 100px; image-rendering: pixelated; display: block; max-width: 40em; }
pre { background: #f7f7f7; padding: 8px; overflow-x: auto; }
tr.split td, tr.all td { font-weight: 600; }
div.voice-clips figure { display: inline-block; margin-right: 12px; }
"""


def metric_columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The numeric metric keys found in the rows, in the order they first appear.

    Args:
        rows: result rows.

    Returns:
        The keys (e.g. `["wer", "sim", "mos", "mel_l1", "mcd", "f0_rmse"]`).
    """
    columns: dict[str, None] = {}
    for row in rows:
        for key, value in row.items():
            if key not in _NON_METRIC and isinstance(value, (int, float)) and not isinstance(value, bool):
                columns.setdefault(key)
    return list(columns)


def primary_metric(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """The metric the items are ranked by: `wer` or `cer` when present, else the first with a known direction.

    Args:
        rows: result rows.

    Returns:
        The key, or None when no row has a ranked metric.
    """
    columns = metric_columns(rows)
    for key in (*_PRIMARY, *columns):
        if key in columns and key in LOWER_IS_BETTER:
            return key
    return None


def worst_first(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rows ordered worst first by the primary metric; rows without it (or NaN) last, ties in their order.

    Args:
        rows: result rows.

    Returns:
        A new list of the same rows.
    """
    key = primary_metric(rows)
    if key is None:
        return list(rows)
    sign = -1.0 if LOWER_IS_BETTER[key] else 1.0

    def rank(row: Mapping[str, Any]) -> tuple[bool, float]:
        value = row.get(key)
        if not isinstance(value, (int, float)) or math.isnan(value):
            return True, 0.0
        return False, sign * float(value)

    return sorted(rows, key=rank)


def write_report(
    path: Path,
    summary: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    testset: Mapping[str, TestRow],
    output: Path,
    embed: int,
) -> None:
    """Write `report.html`.

    Args:
        path: the file to write (replaced atomically).
        summary: the run's summary (`means`, `ground_truth`, `settings`, ...).
        rows: every row's results.
        testset: the test-set rows by id (for the reference and ground-truth audio).
        output: the output directory, against which relative `audio` paths are read.
        embed: how many items, worst first, get embedded audio and mel images.
    """
    columns = metric_columns(rows)
    key = primary_metric(rows)
    settings = summary.get("settings", {})
    source = settings.get("model") or settings.get("audio_dir") or ""
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>f5lite-eval: {_esc(source)}</title><style>{_STYLE}</style></head><body>",
        "<h1>f5lite-eval report</h1>",
        f"<p>Scored: <code>{_esc(source)}</code><br>Test set: <code>{_esc(settings.get('testset', ''))}</code> "
        f"({len(rows)} items)</p>",
        "<h2>Summary</h2>",
        _summary_table(summary, columns),
        _f0_note(rows),
        "<p>Ground truth: each row's <code>gt_audio</code> scored as if it were the output (the mel metrics compare "
        "with it, so it has none): the floor the model's numbers are read against.</p>",
        _vocoded_note(summary),
        _cloning_section(summary, rows, testset, output),
        f"<h2>Items, worst first{f' by {_esc(key)}' if key else ''}</h2>",
        f"<p>Audio and mel images for the first {min(embed, len(rows))} of {len(rows)} items.</p>",
        _items_table(worst_first(rows), columns, testset, output, embed),
        "<h2>Settings and versions</h2>",
        f"<pre>{_esc(json.dumps({k: v for k, v in summary.items() if k not in _NOT_SETTINGS}, indent=2))}</pre>",
        "</body></html>",
    ]
    write_text_atomic(path, "\n".join(parts) + "\n")


def _summary_table(summary: Mapping[str, Any], columns: Sequence[str]) -> str:
    means = summary.get("means") or {}
    floor = summary.get("ground_truth") or {}
    # The vocoded floor's column only when there is one, so a run without it reads as before.
    vocoded = summary.get("ground_truth_vocoded")
    floors = [floor] if vocoded is None else [floor, vocoded]
    vocoder = (summary.get("settings") or {}).get("floor_vocoder")
    extra = "" if vocoded is None else f"<th>ground truth, vocoded ({_esc(vocoder)})</th>"
    lines = [
        '<table id="summary"><thead><tr><th>metric</th><th>better</th><th>model</th><th>ground truth</th>'
        f"{extra}</tr></thead>",
        "<tbody>",
    ]
    # Only what has a mean: the duration errors are summed up apart, as medians (in the summary's JSON below).
    for key in (c for c in columns if c in means or any(c in f for f in floors)):
        better = "" if key not in LOWER_IS_BETTER else "lower" if LOWER_IS_BETTER[key] else "higher"
        shown = _count if key in SUMMED_KEYS else _number
        cells = "".join(f"<td class='num'>{shown(f.get(key))}</td>" for f in floors)
        lines.append(
            f"<tr><td>{_esc(key)}</td><td>{better}</td><td class='num'>{shown(means.get(key))}</td>{cells}</tr>"
        )
    counts = "".join(f"<td class='num'>{_count(f.get('count'))}</td>" for f in floors)
    lines.append(f"<tr><td>items</td><td></td><td class='num'>{_count(means.get('count'))}</td>{counts}</tr>")
    lines.append("</tbody></table>")
    return "\n".join(lines)


def _items_table(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[str], testset: Mapping[str, TestRow], output: Path, embed: int
) -> str:
    head = "".join(f"<th>{_esc(c)}</th>" for c in columns)
    lines = [f'<table id="items"><thead><tr><th>#</th><th>id</th>{head}<th>text</th><th>audio</th></tr></thead><tbody>']
    for rank, row in enumerate(rows, start=1):
        cells = "".join(_cell(row, c) for c in columns)
        text = f"<div>{_esc(row.get('gen_text', ''))}</div>"
        if isinstance(row.get("transcript"), str):
            text += f"<div class='heard'>heard: {_esc(row['transcript'])}</div>"
        media = _media(row, testset.get(str(row["id"])), output) if rank <= embed else ""
        lines.append(
            f"<tr class='item' id='item-{_esc(row['id'])}'><td>{rank}</td><td>{_esc(row['id'])}</td>{cells}"
            f"<td class='text'>{text}</td><td class='media'>{media}</td></tr>"
        )
    lines.append("</tbody></table>")
    return "\n".join(lines)


def _vocoded_note(summary: Mapping[str, Any]) -> str:
    if summary.get("ground_truth_vocoded") is None:
        return ""
    vocoder = (summary.get("settings") or {}).get("floor_vocoder")
    return (
        f"<p id='vocoded-floor'>Ground truth, vocoded: each <code>gt_audio</code> made a log-mel and decoded by "
        f"{_esc(vocoder)}, the path the model's speech takes, then scored (the mel metrics against the ground "
        "truth: what the vocoder alone loses): the floor a model using this vocoder can reach.</p>"
    )


def _f0_note(rows: Sequence[Mapping[str, Any]]) -> str:
    with_f0 = [row for row in rows if isinstance(row.get("f0_rmse"), (int, float))]
    if not with_f0:
        return ""
    few = sum(1 for row in with_f0 if _few_f0_pairs(row))
    pairs = sum(int(row["f0_pairs"]) for row in with_f0 if isinstance(row.get("f0_pairs"), (int, float)))
    note = f"{few} of {len(with_f0)} items rest on fewer than {F0_FEW_PAIRS} (marked few): their F0 error is noise."
    return (
        f"<p id='f0-pairs'>f0_rmse rests on {pairs} voiced frame pairs in all; "
        f"{note if few else f'every item on at least {F0_FEW_PAIRS}.'}</p>"
    )


def _few_f0_pairs(row: Mapping[str, Any]) -> bool:
    pairs = row.get("f0_pairs")
    return "f0_rmse" in row and isinstance(pairs, (int, float)) and pairs < F0_FEW_PAIRS


def _cell(row: Mapping[str, Any], column: str) -> str:
    if column in SUMMED_KEYS:
        return f"<td class='num'>{_count(row.get(column))}</td>"
    if column == "f0_rmse" and _few_f0_pairs(row):
        title = f"rests on {int(row['f0_pairs'])} voiced frame pairs: noise"
        return f"<td class='num few' title='{_esc(title)}'>{_number(row.get(column))} few</td>"
    return f"<td class='num'>{_number(row.get(column))}</td>"


def _media(row: Mapping[str, Any], test_row: TestRow | None, output: Path) -> str:
    audio = Path(str(row["audio"]))
    clips: list[tuple[str, Path]] = [("output", audio if audio.is_absolute() else output / audio)]
    if test_row is not None:
        clips.append(("reference", test_row.ref_audio))
        if test_row.gt_audio is not None:
            clips.append(("ground truth", test_row.gt_audio))
        vocoded = output / VOCODED_DIR / f"{row['id']}.wav"
        if "gt_vocoded" in row and vocoded.is_file():
            clips.append(("ground truth, vocoded", vocoded))
    figures = []
    for label, file in clips:
        wave = load_audio(file)
        mel = "" if label == "reference" else f"<img class='mel' alt='mel of {label}' src='{_png_uri(wave)}'>"
        figures.append(_player(label, wave, mel))
    return "".join(figures)


def _player(label: str, wave: Tensor, extra: str = "") -> str:
    return (
        f"<figure><figcaption>{_esc(label)}</figcaption><audio controls preload='none' src='{_flac_uri(wave)}'>"
        f"</audio>{extra}</figure>"
    )


def _cloning_section(
    summary: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    testset: Mapping[str, TestRow],
    output: Path,
) -> str:
    cloning = summary.get("cloning")
    if not cloning:
        return ""
    calibration = cloning["calibration"]
    note = (
        f"<p id='calibration'>Calibrated SIM: 0 is the mean cosine of two clips of two different voices of the test "
        f"set ({_number(calibration['between'])} over {calibration['between_pairs']} pairs), 1 that of two clips of "
        f"one voice ({_number(calibration['same'])} over {calibration['same_pairs']} pairs), measured on the "
        f"enrollment clips of its {len(calibration['voices'])} voices. Top-1: the share of clips nearest to their own "
        f"voice among all {cloning['enrolled_voices']} enrolled voices; EER: the verification equal error rate of the "
        "clips against every enrolled voice.</p>"
    )
    return "\n".join(
        [
            "<h2 id='cloning'>Cloning</h2>",
            note,
            _voices_table(summary, cloning),
            "<p>The reference, the output and the ground truth of each voice's first row.</p>",
            _voice_players(cloning["per_voice"], rows, testset, output),
        ]
    )


def _voices_table(summary: Mapping[str, Any], cloning: Mapping[str, Any]) -> str:
    # The vocoded floor's columns only when there is one, as in the summary table.
    sources = {"output": "model", "ground_truth": "ground truth"}
    if summary.get("ground_truth_vocoded") is not None:
        sources["ground_truth_vocoded"] = "ground truth, vocoded"
    overall = cloning["overall"]
    # The error rate's column only when it was scored (`wer`, or `cer` for Chinese).
    rates = [key for key in ("wer", "cer") if any(key in (overall.get(source) or {}) for source in sources)]
    columns = (*((key, key.upper()) for key in rates[:1]), *_CLONING_COLUMNS)
    heads = "".join(f"<th colspan='{len(columns)}'>{label}</th>" for label in sources.values())
    subheads = "".join(f"<th>{label}</th>" for _ in sources for _, label in columns)
    lines = [
        f"<table id='voices'><thead><tr><th rowspan='2'>voice</th><th rowspan='2'>split</th><th rowspan='2'>rows</th>"
        f"{heads}</tr><tr>{subheads}</tr></thead><tbody>"
    ]

    def row(kind: str, name: str, split: str, figures: Mapping[str, Any]) -> str:
        cells = "".join(
            f"<td class='num'>{_number((figures.get(source) or {}).get(key))}</td>"
            for source in sources
            for key, _ in columns
        )
        return (
            f"<tr class='{kind}'><td>{_esc(name)}</td><td>{_esc(split)}</td>"
            f"<td class='num'>{_count(figures.get('rows'))}</td>{cells}</tr>"
        )

    for voice, figures in cloning["per_voice"].items():
        lines.append(row("voice", voice, figures["split"], figures))
    for split, figures in cloning["by_split"].items():
        lines.append(row("split", f"{split} voices ({figures['voices']})", split, figures))
    lines.append(row("all", "all", "", overall))
    lines.append("</tbody></table>")
    return "\n".join(lines)


def _voice_players(
    per_voice: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    testset: Mapping[str, TestRow],
    output: Path,
) -> str:
    parts = []
    for voice in per_voice:
        first = next(row for row in rows if row.get("voice") == voice)
        test_row = testset.get(str(first["id"]))
        audio = Path(str(first["audio"]))
        clips: list[tuple[str, Path]] = [("output", audio if audio.is_absolute() else output / audio)]
        if test_row is not None:
            clips.insert(0, ("reference", test_row.ref_audio))
            if test_row.gt_audio is not None:
                clips.append(("ground truth", test_row.gt_audio))
        players = "".join(_player(label, load_audio(file)) for label, file in clips)
        parts.append(
            f"<div class='voice-clips' id='clips-{_esc(voice)}'><h3>{_esc(voice)} ({_esc(per_voice[voice]['split'])}), "
            f"row {_esc(first['id'])}</h3>{players}</div>"
        )
    return "\n".join(parts)


def _flac_uri(wave: Tensor) -> str:
    buffer = io.BytesIO()
    sf.write(buffer, wave.clamp(-1.0, 1.0).numpy(), SAMPLE_RATE, format="FLAC", subtype="PCM_16")
    return "data:audio/flac;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _png_uri(wave: Tensor) -> str:
    image = mel_image(log_mel(wave[None])[0])
    return "data:image/png;base64," + base64.b64encode(grey_png(image)).decode("ascii")


def _number(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return ""
    return "nan" if math.isnan(value) else f"{value:.3f}"


def _count(value: object) -> str:
    return str(int(value)) if isinstance(value, (int, float)) else ""


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)
