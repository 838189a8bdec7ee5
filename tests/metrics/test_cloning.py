"""The cloning metrics on hand-made embeddings and scores: calibration, identification, verification EER.

Each clip embedding is built from orthonormal directions, `a_v * voice_v + b * own_clip + c * shared`, so that two
clips of one voice have cosine `a_v**2 + c**2` and two clips of two voices `c**2`, whatever the other clips are.
"""

from __future__ import annotations

import math

import pytest
import torch

from f5lite.metrics.cloning import (
    Calibration,
    calibrate_voices,
    centroid,
    cloning_results,
    equal_error_rate,
    identify,
    speaker_scores,
    verification_trials,
)

DIM = 32
SHARED = 0
"""The direction every clip shares (index into the basis); voices and clips take the next ones."""


def clips(voice: int, count: int, within: float, between: float, first_clip: int) -> torch.Tensor:
    """`count` clips of voice number `voice`: cosine `within` between two of them, `between` with other voices'.

    Each clip is scaled by its own length, so that only directions count.
    """
    basis = torch.eye(DIM, dtype=torch.float64)
    a, c = math.sqrt(within - between), math.sqrt(between)
    b = math.sqrt(1 - a * a - c * c)
    rows = [a * basis[1 + voice] + b * basis[8 + first_clip + k] + c * basis[SHARED] for k in range(count)]
    return torch.stack(rows) * torch.arange(1, count + 1, dtype=torch.float64)[:, None]


def three_voices() -> dict[str, torch.Tensor]:
    """Three voices of three clips: 0.75 within a voice, 0.25 between two."""
    return {name: clips(i, 3, 0.75, 0.25, 3 * i) for i, name in enumerate(("ann", "bob", "cid"))}


def test_calibration_on_hand_made_embeddings() -> None:
    calibration = calibrate_voices(three_voices())
    assert calibration.same == pytest.approx(0.75) and calibration.between == pytest.approx(0.25)
    assert calibration.voices == ("ann", "bob", "cid")
    assert calibration.same_pairs == 3 * 3 and calibration.between_pairs == 3 * 9
    # 0 at the different-voice mean, 1 at the same-voice mean; 0.65 is 80% of the way (swapped means give 20%).
    assert calibration.calibrate(0.25) == pytest.approx(0.0)
    assert calibration.calibrate(0.75) == pytest.approx(1.0)
    assert calibration.calibrate(0.65) == pytest.approx(0.8)
    assert calibration.calibrate(0.95) == pytest.approx(1.4)  # beyond the same-voice mean: allowed


def test_calibration_pools_the_pairs_of_every_voice() -> None:
    # ann: 3 clips (3 pairs at 0.75); bob: 2 clips (1 pair at 0.5). Pooled: 2.75 / 4, not the voices' mean 0.625.
    embeddings = {"ann": clips(0, 3, 0.75, 0.25, 0), "bob": clips(1, 2, 0.5, 0.25, 3)}
    calibration = calibrate_voices(embeddings)
    assert calibration.same == pytest.approx(2.75 / 4) and calibration.same_pairs == 4
    assert calibration.between == pytest.approx(0.25) and calibration.between_pairs == 6


def test_calibration_refuses_what_it_cannot_scale() -> None:
    # Each voice's two clips are orthogonal, and each clip of one is a clip of the other: 0 within, 0.5 between.
    two = torch.eye(2, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"no more alike \(mean cosine 0.0000\) than two voices \(0.5000\)"):
        calibrate_voices({"ann": two, "bob": two})
    with pytest.raises(ValueError, match="at least two voices"):
        calibrate_voices({"ann": clips(0, 3, 0.75, 0.25, 0)})
    with pytest.raises(ValueError, match="voice 'bob' has 1 clip"):
        calibrate_voices({"ann": clips(0, 2, 0.75, 0.25, 0), "bob": clips(1, 1, 0.75, 0.25, 2)})


def test_centroid_is_the_unit_mean_of_unit_clips() -> None:
    voice = clips(0, 3, 0.75, 0.25, 0)
    expected = voice / voice.norm(dim=1, keepdim=True)
    expected = expected.mean(dim=0)
    assert torch.allclose(centroid(voice), expected / expected.norm())
    assert float(centroid(voice).norm()) == pytest.approx(1.0)


def test_identification_is_among_every_enrolled_voice_not_the_row_s_own() -> None:
    voices = three_voices()
    centroids = {name: centroid(embeddings) for name, embeddings in voices.items()}
    calibration = calibrate_voices(voices)
    basis = torch.eye(DIM, dtype=torch.float64)
    # Meant to be ann, but nearer bob: what a "compare with its own voice only" identification would call right.
    output = 0.3 * basis[1] + 0.9 * basis[2] + 0.3 * basis[SHARED]
    result = cloning_results(output, "ann", centroids, calibration, sim=0.65)
    assert result["speaker_top1"] == "bob" and result["speaker_correct"] is False
    assert list(result["speaker_scores"]) == ["ann", "bob", "cid"]
    assert result["speaker_scores"]["bob"] > result["speaker_scores"]["ann"] > result["speaker_scores"]["cid"]
    assert result["sim_calibrated"] == pytest.approx(0.8)
    right = cloning_results(output, "bob", centroids, calibration, sim=None)
    assert right["speaker_top1"] == "bob" and right["speaker_correct"] is True and "sim_calibrated" not in right
    with pytest.raises(ValueError, match="voice 'dan' is not in the enrollment list"):
        cloning_results(output, "dan", centroids, calibration, sim=None)


def test_speaker_scores_are_cosines_and_ties_go_to_the_first() -> None:
    centroids = {"x": torch.tensor([1.0, 0.0]), "y": torch.tensor([0.0, 1.0]), "z": torch.tensor([0.6, 0.8])}
    scores = speaker_scores(torch.tensor([3.0, 4.0]), centroids)
    assert scores == pytest.approx({"x": 0.6, "y": 0.8, "z": 1.0})
    assert identify(scores) == "z" and identify({"p": 0.5, "q": 0.5}) == "p"


def eer(target: list[float], nontarget: list[float]) -> float:
    return equal_error_rate(torch.tensor(target), torch.tensor(nontarget))


def test_eer_on_hand_made_scores() -> None:
    assert eer([0.8, 0.9], [0.1, 0.2]) == 0.0  # perfectly separated
    assert eer([0.5, 0.5], [0.5, 0.5]) == pytest.approx(0.5)  # indistinguishable
    assert eer([0.1, 0.2, 0.3], [0.1, 0.2, 0.3]) == pytest.approx(0.5)  # the same distribution
    assert eer([0.1], [0.9]) == 1.0  # reversed
    # At 0.6 one of four non-targets (0.7) is accepted and one of four targets (0.4) rejected: the rates cross there.
    assert eer([0.4, 0.6, 0.8, 0.9], [0.1, 0.3, 0.5, 0.7]) == pytest.approx(0.25)
    # Between thresholds 0.5 (FA 1/2, FR 0) and 0.6 (FA 0, FR 1/3) the lines cross at 1/2 * (1 - 3/5) = 1/5.
    assert eer([0.5, 0.6, 0.9], [0.1, 0.5]) == pytest.approx(0.2)


def test_eer_refuses_a_missing_side_or_nan() -> None:
    with pytest.raises(ValueError, match="needs target and non-target trials, got 0 and 1"):
        eer([], [0.5])
    with pytest.raises(ValueError, match="NaN"):
        eer([float("nan")], [0.5])


def test_verification_trials_pair_each_clip_with_every_voice() -> None:
    scored = [("ann", {"ann": 0.9, "bob": 0.4}), ("bob", {"ann": 0.7, "bob": 0.6})]
    target, nontarget = verification_trials(scored)
    assert target.tolist() == [0.9, 0.6] and nontarget.tolist() == [0.4, 0.7]


def test_calibration_is_frozen() -> None:
    calibration = Calibration(0.8, 0.2, ("a", "b"), 2, 4)
    with pytest.raises(AttributeError):
        calibration.same = 0.1  # type: ignore[misc]
