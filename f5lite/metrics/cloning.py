"""Voice cloning metrics: speaker similarity calibrated on the test set's voices, identification and verification.

A raw speaker similarity (the cosine of two embeddings) has no fixed scale: 0.8 is excellent with one encoder and
poor with another, and depends on how alike the corpus's voices are. It is read against two means measured on the
enrollment clips (`f5lite.metrics.voices`) of the voices the test set speaks in:

- `same`: the mean cosine over every pair of two different clips of one voice (pooled over the voices);
- `between`: the mean cosine over every pair of clips of two different voices;

and `calibrated = (sim - between) / (same - between)`: 0 is as alike as two different voices of the test set, 1 as
alike as two recordings of one voice (above 1 is possible, and so is below 0).

Identification asks whether the output sounds like its voice rather than another: the output's embedding is compared
with the centroid of every enrolled voice (the L2-normalised mean of its clips' unit embeddings), train and held-out
alike, and the top-1 voice is the nearest. Verification pools the trials (output, enrolled voice): a target trial
when the voice is the row's, a non-target one otherwise, and reports the equal error rate of thresholding their
cosines (`equal_error_rate`).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from f5lite.audio import SAMPLE_RATE, load_audio
from f5lite.metrics.speaker import SpeakerEncoder
from f5lite.metrics.voices import Enrollment


@dataclass(frozen=True)
class Calibration:
    """The two means a speaker similarity is read against.

    Attributes:
        same: mean cosine of two different clips of one voice.
        between: mean cosine of two clips of two different voices; below `same`.
        voices: the voices they were measured on.
        same_pairs: how many same-voice pairs `same` averages.
        between_pairs: how many different-voice pairs `between` averages.
    """

    same: float
    between: float
    voices: tuple[str, ...]
    same_pairs: int
    between_pairs: int

    def calibrate(self, sim: float) -> float:
        """`sim` on the scale where `between` is 0 and `same` is 1."""
        return (sim - self.between) / (self.same - self.between)


def unit_rows(embeddings: Tensor) -> Tensor:
    """`embeddings` `[n, dim]` (or `[dim]`) scaled to unit length along the last dimension, in float64."""
    return F.normalize(embeddings.double(), dim=-1)


def centroid(embeddings: Tensor) -> Tensor:
    """A voice's centroid: the L2-normalised mean of its clips' unit embeddings.

    The clips are made unit length first, so that no clip weighs more for having a longer embedding (cosines ignore
    the length anyway).

    Args:
        embeddings: `[clips, dim]`, at least one clip.

    Returns:
        `[dim]` float64, unit length.
    """
    return F.normalize(unit_rows(embeddings).mean(dim=0), dim=0)


def calibrate_voices(embeddings: Mapping[str, Tensor]) -> Calibration:
    """The same-voice and different-voice means over the clips of some voices.

    Args:
        embeddings: each voice's clip embeddings `[clips, dim]`; at least two voices, each with at least two clips.

    Returns:
        The calibration.

    Raises:
        ValueError: fewer than two voices, a voice with fewer than two clips, or `same` not above `between` (the
            encoder does not tell these voices apart, so no scale can be drawn).
    """
    if len(embeddings) < 2:
        raise ValueError(f"speaker calibration needs at least two voices, got {len(embeddings)}: {list(embeddings)}")
    units = {voice: unit_rows(clips) for voice, clips in embeddings.items()}
    same_sum, same_pairs = 0.0, 0
    for voice, clips in units.items():
        count = clips.shape[0]
        if count < 2:
            raise ValueError(f"speaker calibration: voice {voice!r} has {count} clip; it needs two to form a pair")
        # The Gram matrix's diagonal is each clip with itself; each pair of two clips is in it twice.
        gram = clips @ clips.T
        same_sum += float(gram.sum() - gram.diagonal().sum()) / 2
        same_pairs += count * (count - 1) // 2
    between_sum, between_pairs = 0.0, 0
    for first, second in itertools.combinations(units.values(), 2):
        between_sum += float((first @ second.T).sum())
        between_pairs += first.shape[0] * second.shape[0]
    same, between = same_sum / same_pairs, between_sum / between_pairs
    if same <= between:
        raise ValueError(
            f"speaker calibration: two clips of one voice are no more alike (mean cosine {same:.4f}) than two voices "
            f"({between:.4f}) over {', '.join(units)}; the speaker encoder does not tell them apart"
        )
    return Calibration(same, between, tuple(units), same_pairs, between_pairs)


def speaker_scores(embedding: Tensor, centroids: Mapping[str, Tensor]) -> dict[str, float]:
    """The cosine of one embedding with every voice's centroid.

    Args:
        embedding: `[dim]`.
        centroids: each voice's centroid `[dim]` (unit length, as `centroid` makes them).

    Returns:
        Voice to cosine, in the order of `centroids`.
    """
    if not centroids:
        raise ValueError("speaker identification needs at least one enrolled voice")
    names = list(centroids)
    stacked = torch.stack([centroids[name].double() for name in names])
    cosines = unit_rows(stacked) @ unit_rows(embedding)
    return {name: float(cosine) for name, cosine in zip(names, cosines, strict=True)}


def identify(scores: Mapping[str, float]) -> str:
    """The top-1 voice: the one with the highest score (the first of a tie, in the order of `scores`)."""
    return max(scores, key=lambda name: scores[name])


def cloning_results(
    embedding: Tensor,
    voice: str,
    centroids: Mapping[str, Tensor],
    calibration: Calibration,
    sim: float | None,
) -> dict[str, Any]:
    """One clip's cloning results: its calibrated similarity and which enrolled voice it is identified as.

    Args:
        embedding: `[dim]` the clip's speaker embedding (the output, or a ground truth scored as one).
        voice: the voice it should be in.
        centroids: every enrolled voice's centroid `[dim]`, among which it is identified.
        calibration: the test set's calibration.
        sim: its raw similarity to the row's reference (the `sim` metric), or None when there is none.

    Returns:
        `speaker_top1` (the voice it is identified as), `speaker_correct` (whether that is `voice`),
        `speaker_scores` (its cosine with every centroid, for the verification trials) and, with `sim`,
        `sim_calibrated`.

    Raises:
        ValueError: `voice` is not enrolled.
    """
    if voice not in centroids:
        raise ValueError(f"voice {voice!r} is not in the enrollment list")
    scores = speaker_scores(embedding, centroids)
    top1 = identify(scores)
    result: dict[str, Any] = {"speaker_top1": top1, "speaker_correct": top1 == voice, "speaker_scores": scores}
    if sim is not None:
        result["sim_calibrated"] = calibration.calibrate(sim)
    return result


def verification_trials(scored: Sequence[tuple[str, Mapping[str, float]]]) -> tuple[Tensor, Tensor]:
    """The target and non-target scores of clips scored against every enrolled voice.

    Args:
        scored: each clip's voice and its `speaker_scores` (cosine with every enrolled voice).

    Returns:
        `[clips]` target scores (each clip with its own voice) and `[clips * (voices - 1)]` non-target scores (each
        clip with every other voice), float64.
    """
    target = [scores[voice] for voice, scores in scored]
    nontarget = [score for voice, scores in scored for name, score in scores.items() if name != voice]
    return torch.tensor(target, dtype=torch.float64), torch.tensor(nontarget, dtype=torch.float64)


def equal_error_rate(target: Tensor, nontarget: Tensor) -> float:
    """The equal error rate of accepting a trial when its score is at least a threshold.

    At a threshold t the false-accept rate is the share of non-target scores >= t and the false-reject rate the
    share of target scores < t. Both are step functions of t; they are evaluated at every score that occurs (and
    above the highest, where nothing is accepted), and between the last threshold where false accepts exceed false
    rejects and the first where they do not, both are interpolated linearly: the EER is their common value where
    the two lines cross. Perfectly separated scores give 0, identical distributions 0.5, reversed ones 1.

    Args:
        target: `[n]` scores of trials that should be accepted, at least one.
        nontarget: `[m]` scores of trials that should be rejected, at least one.

    Returns:
        The EER in [0, 1].

    Raises:
        ValueError: no target or no non-target trial, or a NaN score.
    """
    target, nontarget = target.double().flatten(), nontarget.double().flatten()
    if target.numel() == 0 or nontarget.numel() == 0:
        raise ValueError(f"an EER needs target and non-target trials, got {target.numel()} and {nontarget.numel()}")
    if bool(torch.isnan(target).any() or torch.isnan(nontarget).any()):
        raise ValueError("an EER cannot rest on NaN scores")
    beyond = torch.tensor([float("inf")], dtype=torch.float64)
    thresholds = torch.cat([torch.unique(torch.cat([target, nontarget])), beyond])
    # searchsorted(..., left) counts the scores below each threshold.
    false_accept = 1 - torch.searchsorted(nontarget.sort().values, thresholds).double() / nontarget.numel()
    false_reject = torch.searchsorted(target.sort().values, thresholds).double() / target.numel()
    gap = false_accept - false_reject  # 1 at the lowest threshold (all accepted), -1 above the highest
    after = int(torch.nonzero(gap <= 0)[0])
    before = after - 1
    share = float(gap[before] / (gap[before] - gap[after]))
    return float(false_accept[before] + share * (false_accept[after] - false_accept[before]))


def embed_clips(encoder: SpeakerEncoder, enrollment: Enrollment) -> dict[str, Tensor]:
    """The speaker embedding of every enrollment clip.

    Args:
        encoder: the speaker encoder (the `sim` metric's).
        enrollment: the voices and their clips.

    Returns:
        Each voice's clip embeddings `[clips, dim]`.
    """
    return {
        voice: torch.stack([encoder.embed(load_audio(clip), SAMPLE_RATE) for clip in clips])
        for voice, clips in enrollment.clips.items()
    }


@dataclass(frozen=True)
class CloningScorer:
    """Scores clips for cloning: the speaker encoder, every enrolled voice's centroid, the test set's calibration.

    Attributes:
        encoder: the speaker encoder.
        centroids: every enrolled voice's centroid `[dim]`.
        calibration: the calibration on the test set's voices.
    """

    encoder: SpeakerEncoder
    centroids: dict[str, Tensor]
    calibration: Calibration

    @classmethod
    def enroll(cls, encoder: SpeakerEncoder, enrollment: Enrollment, voices: Sequence[str]) -> CloningScorer:
        """Embed every enrollment clip, and calibrate on the clips of `voices`.

        Args:
            encoder: the speaker encoder.
            enrollment: the enrollment list.
            voices: the test set's voices (enrolled ones), on which the calibration is measured.

        Raises:
            ValueError: a voice of `voices` is not enrolled, or the calibration fails (see `calibrate_voices`).
        """
        missing = [voice for voice in voices if voice not in enrollment.clips]
        if missing:
            raise ValueError(f"voice {missing[0]!r} is not in the enrollment list {enrollment.file}")
        clips = embed_clips(encoder, enrollment)
        centroids = {voice: centroid(embeddings) for voice, embeddings in clips.items()}
        return cls(encoder, centroids, calibrate_voices({voice: clips[voice] for voice in voices}))

    def score(self, audio: Tensor, sample_rate: int, voice: str, sim: float | None) -> dict[str, Any]:
        """`cloning_results` of one clip `[samples]` that should be in `voice`, with its raw `sim` (or None)."""
        return cloning_results(self.encoder.embed(audio, sample_rate), voice, self.centroids, self.calibration, sim)
