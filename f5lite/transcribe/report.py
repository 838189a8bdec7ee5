"""`report.json` and `report.html` of `f5lite-transcribe`: every source file, every clip, and why anything was left out.

Per source: its status ("transcribed", "no speech" when the VAD heard none, or "failed" with the one-line reason
of an unreadable file), its length, and every stretch of speech in order: the clips kept (file, times, transcript,
confidence) and those left out, by the slicer (too short) or by the filters, each with its reason. With
`--vocab-of`, the tokens the base vocabulary lacks. The HTML page shows the same, with a player for each kept clip
(linked, not embedded: the clips sit beside the page), for proofreading.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from f5lite.atomic import write_json_atomic, write_text_atomic
from f5lite.transcribe.source import Failure, SourceRecord
from f5lite.transcribe.vocab import VocabCheck
from f5lite.version import __version__

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin-bottom: 1.5em; }
th, td { border: 1px solid #ccc; padding: 4px 8px; vertical-align: top; text-align: left; }
th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.out td { color: #777; }
.failed { color: #a33; }
audio { height: 28px; width: 220px; }
"""


def build_report(
    in_dir: Path,
    out: Path,
    settings: Mapping[str, Any],
    records: Sequence[SourceRecord],
    failures: Sequence[Failure],
    vocab: VocabCheck | None,
) -> dict[str, Any]:
    """The report's content (what `report.json` holds).

    Args:
        in_dir: IN.
        out: OUT.
        settings: the run's settings (`TranscribeSettings.as_dict()`).
        records: every finished source.
        failures: the sources that could not be read in this run.
        vocab: the `--vocab-of` check, or None.

    Returns:
        JSON values: `totals`, `sources` (in IN's order) and `vocab`.
    """
    sources = [_source_entry(record) for record in records] + [
        {"source": f.key, "status": "failed", "message": f.message, "clips": [], "left_out": []} for f in failures
    ]
    sources.sort(key=lambda entry: entry["source"])
    kept = [clip for record in records for clip in record.kept]
    return {
        "tool": "f5lite-transcribe",
        "version": __version__,
        "in": str(in_dir),
        "out": str(out),
        "settings": dict(settings),
        "totals": {
            "sources": len(sources),
            "failed": len(failures),
            "no_speech": sum(entry["status"] == "no speech" for entry in sources),
            "hours": round(sum(record.duration for record in records) / 3600, 4),
            "clips_kept": len(kept),
            "kept_hours": round(sum(clip.end - clip.start for clip in kept) / 3600, 4),
            "left_out": sum(len(entry["left_out"]) for entry in sources),
        },
        "sources": sources,
        "vocab": None if vocab is None else _vocab_entry(vocab),
    }


def write_reports(out: Path, report: Mapping[str, Any], json_name: str, html_name: str) -> None:
    """Write the report as JSON and as an HTML page into OUT (each replaced atomically)."""
    write_json_atomic(out / json_name, report)
    write_text_atomic(out / html_name, _html(report))


def _source_entry(record: SourceRecord) -> dict[str, Any]:
    clips = [
        {
            "file": f"{record.clip_dir}/{clip.name}.wav",
            "start": round(clip.start, 3),
            "end": round(clip.end, 3),
            "text": clip.text,
            "confidence": clip.confidence,
            "speech_seconds": clip.speech_seconds,
        }
        for clip in record.kept
    ]
    left_out: list[dict[str, Any]] = [
        {"start": round(span.start, 3), "end": round(span.end, 3), "reason": span.reason, "text": None}
        for span in record.left_out
    ] + [
        {"start": round(clip.start, 3), "end": round(clip.end, 3), "reason": clip.reason, "text": clip.text}
        for clip in record.clips
        if clip.reason is not None
    ]
    left_out.sort(key=lambda entry: entry["start"])
    status = "no speech" if not record.clips and not record.left_out else "transcribed"
    return {
        "source": record.key,
        "status": status,
        "duration": round(record.duration, 3),
        "sample_rate": record.sample_rate,
        "channels": record.channels,
        "seconds_taken": record.seconds_taken,
        "clips": clips,
        "left_out": left_out,
    }


def _vocab_entry(vocab: VocabCheck) -> dict[str, Any]:
    return {
        "base": vocab.base,
        "size": len(vocab.tokens),
        "missing": [{"token": m.token, "count": m.count, "examples": list(m.examples)} for m in vocab.missing],
    }


def _html(report: Mapping[str, Any]) -> str:
    totals = report["totals"]
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>f5lite-transcribe: {_esc(report['in'])}</title><style>{_STYLE}</style></head><body>",
        "<h1>f5lite-transcribe report</h1>",
        f"<p>Recordings: <code>{_esc(report['in'])}</code><br>Clips: <code>{_esc(report['out'])}</code></p>",
        f"<p>{totals['sources']} source file(s), {totals['hours']:.2f} h; {totals['clips_kept']} clip(s) kept "
        f"({totals['kept_hours']:.2f} h); {totals['left_out']} stretch(es) left out; {totals['no_speech']} without "
        f"speech; {totals['failed']} failed.</p>",
    ]
    if report["vocab"] is not None:
        parts.append(_vocab_html(report["vocab"]))
    for entry in report["sources"]:
        parts.append(_source_html(entry))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _vocab_html(vocab: Mapping[str, Any]) -> str:
    head = f"<h2>Vocabulary</h2><p>Against <code>{_esc(vocab['base'])}</code>: "
    if not vocab["missing"]:
        return head + "every token of the transcripts is in it.</p>"
    rows = "".join(
        f"<tr><td><code>{_esc(repr(m['token']))}</code></td><td class=num>{m['count']}</td>"
        f"<td>{_esc(', '.join(m['examples']))}</td></tr>"
        for m in vocab["missing"]
    )
    return (
        head + f"{len(vocab['missing'])} token(s) missing, appended in <code>vocab.txt</code>.</p>"
        f"<table><tr><th>token</th><th>count</th><th>for example in</th></tr>{rows}</table>"
    )


def _source_html(entry: Mapping[str, Any]) -> str:
    title = f"<h2>{_esc(entry['source'])}</h2>"
    if entry["status"] == "failed":
        return title + f"<p class=failed>Not transcribed: {_esc(entry['message'])}</p>"
    lead = f"<p>{entry['duration']:.1f} s, {entry['sample_rate']} Hz, {entry['channels']} channel(s)"
    if entry["status"] == "no speech":
        return title + lead + ": no speech found, no clips.</p>"
    rows = sorted(
        [(clip["start"], _clip_row(clip)) for clip in entry["clips"]]
        + [(span["start"], _left_out_row(span)) for span in entry["left_out"]]
    )
    return (
        title + lead + f": {len(entry['clips'])} clip(s) kept, {len(entry['left_out'])} left out.</p>"
        "<table><tr><th>from (s)</th><th>to (s)</th><th>text</th><th>confidence</th><th>clip or reason</th></tr>"
        + "".join(row for _, row in rows)
        + "</table>"
    )


def _clip_row(clip: Mapping[str, Any]) -> str:
    confidence = "" if clip["confidence"] is None else f"{clip['confidence']:.2f}"
    src = _esc(clip["file"])
    return (
        f"<tr><td class=num>{clip['start']:.2f}</td><td class=num>{clip['end']:.2f}</td><td>{_esc(clip['text'])}</td>"
        f'<td class=num>{confidence}</td><td><audio controls preload=none src="{src}"></audio><br>{src}</td></tr>'
    )


def _left_out_row(span: Mapping[str, Any]) -> str:
    return (
        f"<tr class=out><td class=num>{span['start']:.2f}</td><td class=num>{span['end']:.2f}</td>"
        f"<td>{_esc(span['text'] or '')}</td><td></td><td>left out: {_esc(span['reason'])}</td></tr>"
    )


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)
