"""How well speech is sized: the relative error of estimated against true duration, rule against predictor.

For a test-set row with ground truth, the true generated length is the ground truth's mel frames; the estimate is
what `Synthesizer` would give the whole text (the reference's frames subtracted), by F5-TTS's byte-ratio rule and,
when there is one, by the duration predictor. The relative error is `|estimate - true| / true`; the median over the
rows is what the docs' benchmarks page and training validation report (`val/duration_error`,
`val/duration_error_rule`).
Lengths come from the audio files' headers, so nothing is decoded.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import soundfile as sf

from f5lite.audio import SAMPLE_RATE
from f5lite.audio.mel import frames_for_samples
from f5lite.data.testset import TestRow
from f5lite.infer.chunking import prepare_ref_text
from f5lite.infer.duration import DurationEstimator


@dataclass(frozen=True)
class DurationCase:
    """One row's lengths and texts.

    Attributes:
        id: the row's id.
        ref_frames: mel frames of the reference audio.
        ref_text: its transcript, as fed to the model (sentence-ended).
        gen_text: the text spoken.
        true_frames: mel frames of the ground truth.
    """

    id: str
    ref_frames: int
    ref_text: str
    gen_text: str
    true_frames: int


def duration_cases(rows: Sequence[TestRow], mel_type: str = "vocos") -> list[DurationCase]:
    """The rows that have ground truth, with their lengths in mel frames.

    Args:
        rows: test-set rows.
        mel_type: the mel convention the frames are counted in.

    Returns:
        One case per row with `gt_audio`, in order.

    Raises:
        ValueError: an audio file whose header cannot be read (one line naming it).
    """
    return [
        DurationCase(
            row.id,
            _frames(row.ref_audio, mel_type),
            prepare_ref_text(row.ref_text),
            row.gen_text,
            _frames(row.gt_audio, mel_type),
        )
        for row in rows
        if row.gt_audio is not None
    ]


def relative_errors(cases: Sequence[DurationCase], estimator: DurationEstimator) -> list[float]:
    """`|estimated - true| / true` generated frames of each case (speed 1)."""
    errors = []
    for case in cases:
        estimated = estimator.total_frames(case.ref_frames, case.ref_text, case.gen_text) - case.ref_frames
        errors.append(abs(estimated - case.true_frames) / case.true_frames)
    return errors


def duration_errors(cases: Sequence[DurationCase], predictor: DurationEstimator | None) -> dict[str, float]:
    """Median relative errors: `duration_error_rule`, and `duration_error` when a predictor is given.

    Args:
        cases: the rows to measure (none: an empty result).
        predictor: an estimator with a predictor, or None.
    """
    if not cases:
        return {}
    result = {"duration_error_rule": statistics.median(relative_errors(cases, DurationEstimator()))}
    if predictor is not None and predictor.name == "predictor":
        result["duration_error"] = statistics.median(relative_errors(cases, predictor))
    return result


def _frames(path: Path, mel_type: str) -> int:
    try:
        info = sf.info(str(path))
    except (sf.LibsndfileError, RuntimeError, OSError) as err:
        raise ValueError(f"cannot read the length of {path}: {err}") from None
    samples = round(info.frames * SAMPLE_RATE / info.samplerate)
    return frames_for_samples(samples, mel_type)
