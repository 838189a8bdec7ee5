"""The vocoded floor: the ground truth through log-mel and the vocoder, which vocoder is chosen, its results in a row,
the summary and the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from support.eval_cli_assets import eval_rows

from f5lite.audio import SAMPLE_RATE, load_audio, log_mel
from f5lite.audio.vocoder import GriffinLimVocoder
from f5lite.eval.floors import VOCODED_DIR, planned_floor_vocoder, resolve_floor_vocoder, vocode
from f5lite.eval.report import write_report
from f5lite.eval.run import build_summary, metric_results, score_row
from f5lite.metrics.items import EvalItem


class Loudness:
    """A stand-in metric with no backend: the clip's RMS as `sim`, the length as `mos` (any keys summarize does)."""

    name = "sim"

    def score(self, item: EvalItem) -> dict[str, float | str]:
        return {"sim": float(item.audio.pow(2).mean().sqrt()), "mos": item.audio.numel() / item.sample_rate}


def test_vocode_is_the_log_mel_decoded_by_the_vocoder() -> None:
    wave = load_audio(eval_rows()[0].gt_audio)  # type: ignore[arg-type]
    vocoder = GriffinLimVocoder()
    vocoded = vocode(wave, vocoder)
    assert vocoded.dtype == torch.float32 and vocoded.dim() == 1 and torch.isfinite(vocoded).all()
    assert abs(vocoded.numel() - wave.numel()) <= 256  # (frames - 1) hops of 256 samples
    assert torch.equal(vocoded, vocoder.decode(log_mel(wave[None]))[0])
    # What Griffin-Lim keeps is the magnitude: the log-mels agree far better than with another clip's.
    other = load_audio(eval_rows()[1].gt_audio)  # type: ignore[arg-type]
    frames = min(log_mel(wave[None]).shape[1], log_mel(vocoded[None]).shape[1], log_mel(other[None]).shape[1])
    same = (log_mel(wave[None])[:, :frames] - log_mel(vocoded[None])[:, :frames]).abs().mean()
    apart = (log_mel(wave[None])[:, :frames] - log_mel(other[None])[:, :frames]).abs().mean()
    assert same < 0.5 * apart, (same, apart)
    with pytest.raises(ValueError, match="non-empty 1-D waveform"):
        vocode(torch.zeros(2, 100), vocoder)


@pytest.mark.parametrize(
    ("setting", "model_vocoder", "planned"),
    [
        ("auto", "griffin_lim", "griffin_lim"),
        ("auto", "vocos", "vocos"),
        ("auto", None, None),  # audio_dir: no model, no vocoder of its own
        ("none", "vocos", None),
        ("griffin_lim", None, "griffin_lim"),
        ("vocos", "griffin_lim", "vocos"),
    ],
)
def test_which_vocoder_the_floor_uses(setting: str, model_vocoder: str | None, planned: str | None) -> None:
    assert planned_floor_vocoder(setting, model_vocoder) == planned


def test_the_model_s_own_vocoder_is_reused_and_a_bad_setting_refused() -> None:
    own = GriffinLimVocoder(mel_kind="bigvgan")
    assert resolve_floor_vocoder("griffin_lim", own, None, torch.device("cpu")) is own
    built = resolve_floor_vocoder("griffin_lim", None, None, torch.device("cpu"))
    assert isinstance(built, GriffinLimVocoder) and built.mel_kind == "vocos"
    assert resolve_floor_vocoder(None, own, None, torch.device("cpu")) is None
    with pytest.raises(ValueError, match=r"^floor_vocoder='hifigan' is not valid; choose one of: auto, none, "):
        planned_floor_vocoder("hifigan", None)


def test_a_row_s_vocoded_floor_is_written_scored_summarized_and_reported(tmp_path: Path) -> None:
    rows = eval_rows(with_gt=2)
    metrics = [Loudness()]
    vocoder = GriffinLimVocoder()
    results = [score_row(metrics, row, row.ref_audio, str(row.ref_audio), None, floor_vocoder=vocoder, output=tmp_path)
               for row in rows]  # fmt: skip
    for row, result in zip(rows, results, strict=True):
        if row.gt_audio is None:
            assert "gt" not in result and "gt_vocoded" not in result
            continue
        written = tmp_path / VOCODED_DIR / f"{row.id}.wav"
        vocoded = load_audio(written)
        assert result["gt_vocoded"] == Loudness().score(EvalItem(row.id, row.gen_text, vocoded, SAMPLE_RATE))
        assert result["gt_vocoded"]["mos"] == pytest.approx(result["gt"]["mos"], abs=256 / SAMPLE_RATE)
        assert "gt_vocoded" not in metric_results(result)
    settings = {"floor_vocoder": "griffin_lim"}
    summary = build_summary(results, settings, 1.0, resumed=0)
    vocoded_rows = [r["gt_vocoded"] for r in results if "gt_vocoded" in r]
    assert summary["ground_truth_vocoded"]["count"] == len(vocoded_rows) == 2
    assert summary["ground_truth_vocoded"]["sim"] == pytest.approx(sum(r["sim"] for r in vocoded_rows) / 2)
    assert summary["means"].keys() == {"sim", "mos", "count"}
    json.dumps(summary)

    page = tmp_path / "report.html"
    write_report(page, summary, results, {row.id: row for row in rows}, tmp_path, embed=3)
    text = page.read_text()
    assert "<th>ground truth, vocoded (griffin_lim)</th>" in text and "id='vocoded-floor'" in text
    body = text[text.index('<table id="summary">') : text.index("</table>")]
    floor = summary["ground_truth_vocoded"]
    assert f"<td class='num'>{floor['sim']:.3f}</td></tr>" in body
    assert text.count("<figcaption>ground truth, vocoded</figcaption>") == 2
    # Without the floor the table keeps its three figure columns.
    del summary["ground_truth_vocoded"]
    write_report(page, summary, results, {row.id: row for row in rows}, tmp_path, embed=0)
    assert "vocoded" not in page.read_text().split('<table id="items">')[0]


def test_the_vocoded_floor_needs_the_output_directory() -> None:
    row = eval_rows(with_gt=1)[0]
    with pytest.raises(ValueError, match="needs the output directory"):
        score_row([Loudness()], row, row.ref_audio, "x", None, floor_vocoder=GriffinLimVocoder())
