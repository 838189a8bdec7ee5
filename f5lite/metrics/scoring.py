"""The speech metrics: build them once from their names and backend settings, score items, average the results.

| metric | result keys | needs | backend setting |
| --- | --- | --- | --- |
| `wer` | `wer` (en) or `cer` (zh), `transcript` | `gen_text` | `asr` |
| `sim` | `sim` | `ref_audio` | `speaker` |
| `mos` | `mos`, sub-scores `mos_*` | | `mos` |
| `mel` | `mel_l1`, `mcd`, `f0_rmse`, `f0_pairs` | `gt_audio` | none |

A metric whose item lacks what it needs returns {}. Backends are loaded once per process and shared.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Protocol

from f5lite.metrics.asr import Recognizer, load_recognizer
from f5lite.metrics.backend import EVAL_EXTRA, require
from f5lite.metrics.items import METRIC_NAMES, EvalItem, MetricSettings
from f5lite.metrics.melmetrics import check_available, mel_distances
from f5lite.metrics.mos import QualityPredictor, load_quality_predictor
from f5lite.metrics.speaker import SpeakerEncoder, cosine_similarity, load_speaker_encoder
from f5lite.metrics.textnorm import check_language, error_rate

LOWER_IS_BETTER: dict[str, bool] = {
    "wer": True,
    "cer": True,
    "mel_l1": True,
    "mcd": True,
    "f0_rmse": True,
    "sim": False,
    "sim_calibrated": False,  # f5lite-eval's cloning metrics (`f5lite.metrics.cloning`), with voices=
    "mos": False,
    "mos_sig": False,
    "mos_bak": False,
    "mos_p808": False,
}
"""For every numeric result key but the counts of `SUMMED_KEYS`: True when a lower value is better."""

SUMMED_KEYS = frozenset({"f0_pairs"})
"""Counts that a summary adds up rather than averages: `f0_pairs`, the voiced frame pairs `f0_rmse` rests on."""


class Metric(Protocol):
    """One metric with its backend loaded."""

    name: str

    def score(self, item: EvalItem) -> dict[str, float | str]:
        """Result keys for one item; {} when the item lacks what this metric needs."""
        ...


class Intelligibility:
    """`wer`: transcribe the audio, score the transcript against `gen_text` (WER for en, CER for zh)."""

    name = "wer"

    def __init__(self, recognizer: Recognizer, language: str) -> None:
        require("jiwer", EVAL_EXTRA, "the wer metric")
        self.recognizer = recognizer
        self.language = language

    def score(self, item: EvalItem) -> dict[str, float | str]:
        """{"wer" or "cer": error rate, "transcript": what the recogniser heard}."""
        transcript = self.recognizer.transcribe(item.audio, item.sample_rate)
        key = "wer" if self.language == "en" else "cer"
        return {key: error_rate(item.gen_text, transcript, self.language), "transcript": transcript}


class SpeakerSimilarity:
    """`sim`: cosine of the speaker embeddings of the audio and the voice prompt."""

    name = "sim"

    def __init__(self, encoder: SpeakerEncoder) -> None:
        self.encoder = encoder

    def score(self, item: EvalItem) -> dict[str, float | str]:
        """{"sim": cosine in [-1, 1]}, or {} without `ref_audio`."""
        if item.ref_audio is None:
            return {}
        audio = self.encoder.embed(item.audio, item.sample_rate)
        reference = self.encoder.embed(item.ref_audio, item.ref_sample_rate)
        return {"sim": cosine_similarity(audio, reference)}


class Quality:
    """`mos`: a learned MOS predictor's scores of the audio alone."""

    name = "mos"

    def __init__(self, predictor: QualityPredictor) -> None:
        self.predictor = predictor

    def score(self, item: EvalItem) -> dict[str, float | str]:
        """{"mos": 1..5, plus the backend's "mos_*" sub-scores}."""
        return dict(self.predictor.predict(item.audio, item.sample_rate))


class MelDistances:
    """`mel`: log-mel L1, MCD and F0 error against the ground truth after DTW (`f5lite.metrics.melmetrics`)."""

    name = "mel"

    def __init__(self) -> None:
        check_available()

    def score(self, item: EvalItem) -> dict[str, float | str]:
        """{"mel_l1", "mcd", "f0_rmse"}, or {} without `gt_audio`."""
        if item.gt_audio is None:
            return {}
        return dict(mel_distances(item.audio, item.sample_rate, item.gt_audio, item.gt_sample_rate))


def build_metrics(names: Sequence[str], settings: MetricSettings) -> list[Metric]:
    """Build the named metrics, loading every backend now (cached per process).

    A bad name, backend, model directory or a missing package fails here, before anything is synthesised.

    Args:
        names: metric names from `METRIC_NAMES`, each at most once.
        settings: the backends and the language.

    Returns:
        The metrics, in the order named.

    Raises:
        ValueError: an unknown or repeated metric name, an unknown language or backend, a missing model
            directory (one line naming it).
        ImportError: a package the metric or its backend needs is not installed (one line with the install hint).
    """
    for name in names:
        if name not in METRIC_NAMES:
            raise ValueError(f"unknown metric {name!r}; choose from: {', '.join(METRIC_NAMES)}")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"metric {repeated[0]!r} is listed more than once")
    check_language(settings.language)
    metrics: list[Metric] = []
    for name in names:
        if name == "wer":
            recognizer = load_recognizer(settings.asr, settings.language, settings.device)
            metrics.append(Intelligibility(recognizer, settings.language))
        elif name == "sim":
            metrics.append(SpeakerSimilarity(load_speaker_encoder(settings.speaker, settings.device)))
        elif name == "mos":
            metrics.append(Quality(load_quality_predictor(settings.mos, settings.device)))
        else:
            metrics.append(MelDistances())
    return metrics


def score_item(metrics: Sequence[Metric], item: EvalItem) -> dict[str, float | str]:
    """All metrics' result keys for one item, merged."""
    result: dict[str, float | str] = {}
    for metric in metrics:
        result.update(metric.score(item))
    return result


def summarize(rows: Sequence[Mapping[str, float | str]]) -> dict[str, float]:
    """Mean of every numeric key over the rows that have it (NaN left out), plus `count`, the number of rows.

    A key whose values are all NaN is left out; text keys (`transcript`) are ignored; the counts of `SUMMED_KEYS`
    are totals, not means.
    """
    values: dict[str, list[float]] = {}
    for row in rows:
        for key, value in row.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                values.setdefault(key, [])
                if not math.isnan(value):
                    values[key].append(float(value))
    summary = {key: sum(found) / (1 if key in SUMMED_KEYS else len(found)) for key, found in values.items() if found}
    summary["count"] = float(len(rows))
    return summary
