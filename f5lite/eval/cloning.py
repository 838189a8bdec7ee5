"""Cloning in `f5lite-eval`: the test set's voices checked against the enrollment list, and the `cloning` summary.

With `voices=` (an enrollment list, `f5lite.metrics.voices`) every row with a `voice` gets, next to `sim`, its
calibrated similarity, the voice it is identified as and whether that is right (`f5lite.metrics.cloning`), and so do
its ground truth (`gt`) and vocoded ground truth (`gt_vocoded`), the floors. `summary.json` then holds `cloning`:
the calibration, and per source (`output`, `ground_truth`, `ground_truth_vocoded`) the rows, the mean error rate,
raw and calibrated similarity, the top-1 accuracy and the verification EER, over all rows (`overall`), per voice
(`per_voice`, with the voice's split) and per split (`by_split`: `held_out` voices against `train` ones).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from f5lite.data.testset import TestRow
from f5lite.metrics.cloning import Calibration, equal_error_rate, verification_trials
from f5lite.metrics.voices import Enrollment

SOURCES = {"output": None, "ground_truth": "gt", "ground_truth_vocoded": "gt_vocoded"}
"""Each scored source of `cloning` and the key of a result row that holds its results (None: the row itself)."""
MEANS = ("wer", "cer", "sim", "sim_calibrated")
"""The result keys whose means each source's figures give (`wer` or `cer`, whichever was scored)."""


def check_testset_voices(rows: Sequence[TestRow], enrollment: Enrollment, testset: str | Path) -> list[str]:
    """The voices the test set's rows name, checked against the enrollment list.

    Args:
        rows: every row of the test set (not only those a `limit` keeps, so that the calibration does not move with
            it).
        enrollment: the enrollment list.
        testset: the test set's file, for the messages.

    Returns:
        The voices, in the order they first appear.

    Raises:
        ValueError: no row has a voice, or a row's voice is not enrolled (naming the row).
    """
    voices: dict[str, None] = {}
    for row in rows:
        if row.voice is None:
            continue
        if row.voice not in enrollment.clips:
            raise ValueError(
                f"test set {testset}: row {row.id!r} is in voice {row.voice!r}, which the enrollment list "
                f"{enrollment.file} does not have"
            )
        voices.setdefault(row.voice)
    if not voices:
        raise ValueError(f"voices= is given but no row of test set {testset} has a voice (its sixth column, voice)")
    return list(voices)


def cloning_summary(rows: Sequence[Mapping[str, Any]], enrollment: Enrollment, calibration: Calibration) -> dict:
    """The `cloning` section of `summary.json`.

    Args:
        rows: every row's results; those with `speaker_top1` (and a `voice`) were scored for cloning.
        enrollment: the enrollment list (for each voice's split).
        calibration: the test set's calibration.

    Returns:
        `voices_file`, `enrolled_voices` (how many voices identification chooses among), `calibration` (`same`,
        `between`, `voices`, `same_pairs`, `between_pairs`), `overall` (each source's figures, see
        `source_figures`), `per_voice` (voice to `split`, `rows` and each source's figures) and `by_split` (split to
        `voices`, `rows` and each source's figures).
    """
    scored = [row for row in rows if "speaker_top1" in row and "voice" in row]
    voices = list(dict.fromkeys(str(row["voice"]) for row in scored))
    per_voice = {
        voice: {"split": enrollment.splits[voice], **_figures([r for r in scored if r["voice"] == voice])}
        for voice in voices
    }
    by_split = {}
    for split in ("held_out", "train"):
        chosen = [voice for voice in voices if enrollment.splits[voice] == split]
        if chosen:
            figures = _figures([row for row in scored if row["voice"] in chosen])
            by_split[split] = {"voices": len(chosen), **figures}
    return {
        "voices_file": str(enrollment.file),
        "enrolled_voices": len(enrollment.clips),
        "calibration": {**asdict(calibration), "voices": list(calibration.voices)},
        "overall": _figures(scored),
        "per_voice": per_voice,
        "by_split": by_split,
    }


def source_figures(scored: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, float] | None:
    """One source's cloning figures over some clips.

    Args:
        scored: each clip's voice and its results (with `speaker_correct`, `speaker_scores`, and `sim`,
            `sim_calibrated`, `wer` or `cer` when scored).

    Returns:
        `rows`, the means of `MEANS` that were scored (NaN left out), `top1` (the share identified as their own
        voice) and `eer` (the verification EER of their trials against every enrolled voice); None without clips.
    """
    if not scored:
        return None
    figures: dict[str, float] = {"rows": len(scored)}
    for key in MEANS:
        values = [float(r[key]) for _, r in scored if isinstance(r.get(key), (int, float)) and not math.isnan(r[key])]
        if values:
            figures[key] = sum(values) / len(values)
    figures["top1"] = sum(1.0 for _, r in scored if r["speaker_correct"]) / len(scored)
    figures["eer"] = equal_error_rate(*verification_trials([(voice, r["speaker_scores"]) for voice, r in scored]))
    return figures


def _figures(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """`rows` (the output rows) and each source's `source_figures` over the rows that have that source scored."""
    found: dict[str, Any] = {"rows": len(rows)}
    for source, key in SOURCES.items():
        clips = [(str(row["voice"]), row if key is None else row.get(key) or {}) for row in rows]
        found[source] = source_figures([(voice, clip) for voice, clip in clips if "speaker_top1" in clip])
    return found
