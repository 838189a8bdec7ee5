"""The duration predictor: its shapes and padding, the same-speaker pairs and loss it trains on, what a short training
learns, and the frame arithmetic of `predicted_duration` and `fixed_duration`."""

from __future__ import annotations

import math
import random
import statistics

import pytest
import torch
import torch.nn.functional as F

from f5lite.models.duration import ABSOLUTE_WEIGHT, DurationPredictor, duration_loss, same_speaker_pairs
from f5lite.sampling import estimate_duration, fixed_duration, predicted_duration
from f5lite.text.encode import pad_ids

FRAME_RATE = 24000 / 256


def tiny_predictor(num_embeds: int = 10, seed: int = 0, **sizes: int) -> DurationPredictor:
    """A small predictor with seeded weights, in eval mode."""
    torch.manual_seed(seed)
    return DurationPredictor(num_embeds, **{"dim": 16, "depth": 2, "kernel_size": 3, **sizes}).eval()


# ---------------------------------------------------------------------------------------------------------- model


def test_output_is_one_float32_log_frames_per_text() -> None:
    """A batch of padded ids gives `[b]` float32, finite."""
    ids, _ = pad_ids([[1, 2, 3], [4], [5, 6, 7, 8, 9]])
    out = tiny_predictor()(ids)
    assert out.shape == (3,) and out.dtype == torch.float32
    assert torch.isfinite(out).all()


def test_a_bf16_predictor_still_sums_in_float32() -> None:
    """The per-token values and their log-sum-exp come back float32 whatever the weights' dtype."""
    ids, _ = pad_ids([[1, 2, 3], [4, 5]])
    model = tiny_predictor().to(torch.bfloat16)
    assert model.token_log_durations(ids).dtype == torch.float32
    assert model(ids).dtype == torch.float32


def test_padding_does_not_change_a_text_s_result() -> None:
    """A text alone and the same text padded next to a longer one get the same log-frames."""
    model = tiny_predictor(depth=3, kernel_size=5)
    short, long = [1, 2, 3], [4, 5, 6, 7, 8, 9, 1, 2, 3, 4]
    with torch.no_grad():
        alone_short = model(torch.tensor([short]))
        alone_long = model(torch.tensor([long]))
        ids, _ = pad_ids([short, long])
        together = model(ids)
    assert torch.allclose(together[0], alone_short[0], atol=1e-5, rtol=0)
    assert torch.allclose(together[1], alone_long[0], atol=1e-5, rtol=0)


def test_padding_positions_have_no_duration() -> None:
    """The padding's per-token value is so negative that its exp is 0, and real tokens' values are finite."""
    model = tiny_predictor()
    ids, _ = pad_ids([[1, 2], [3, 4, 5, 6]])
    with torch.no_grad():
        tokens = model.token_log_durations(ids)
    assert tokens.shape == ids.shape
    assert torch.isfinite(tokens[ids != -1]).all()
    assert (tokens[ids == -1].exp() == 0).all()


def test_log_frames_is_the_log_sum_exp_of_the_real_tokens() -> None:
    """forward = log(sum of exp(token log-durations)) over the real tokens only."""
    model = tiny_predictor()
    rows = [[1, 2, 3], [4, 5, 6, 7, 8], [9]]
    ids, lengths = pad_ids(rows)
    with torch.no_grad():
        tokens = model.token_log_durations(ids)
        out = model(ids)
    for i, n in enumerate(lengths.tolist()):
        expected = math.log(sum(math.exp(v) for v in tokens[i, :n].tolist()))
        assert out[i].item() == pytest.approx(expected, abs=1e-5)


def test_a_text_twice_as_long_lasts_about_twice_as_long() -> None:
    """Even untrained, repeating a long text doubles its frames up to the two ends (log-frames + log 2)."""
    model = tiny_predictor()
    pattern = [1, 7, 3, 9, 2, 2, 5, 8, 0, 4]
    once, twice = pattern * 20, pattern * 40
    with torch.no_grad():
        out = model(pad_ids([once, twice])[0])
    assert (out[1] - out[0]).item() == pytest.approx(math.log(2), abs=0.02)


@pytest.mark.parametrize(
    ("sizes", "name"),
    [
        ({"kernel_size": 4}, "kernel_size"),
        ({"kernel_size": 0}, "kernel_size"),
        ({"depth": 0}, "depth"),
        ({"dim": 0}, "dim"),
        ({"text_num_embeds": 0}, "text_num_embeds"),
    ],
)
def test_bad_sizes_are_refused_naming_the_argument(sizes: dict[str, int], name: str) -> None:
    """Every bad constructor argument gives a one-line ValueError that names it."""
    arguments = {"text_num_embeds": 10, "dim": 8, "depth": 1, "kernel_size": 3, **sizes}
    with pytest.raises(ValueError, match=rf"^{name}=") as info:
        DurationPredictor(**arguments)
    assert "\n" not in str(info.value)


# ---------------------------------------------------------------------------------------------------------- pairs


def pairs_of(speakers: list[str | None]) -> list[tuple[int, int]]:
    """`same_speaker_pairs` as (a, b) tuples, after checking both lists are equally long."""
    first, second = same_speaker_pairs(speakers)
    assert len(first) == len(second)
    return list(zip(first, second, strict=True))


def test_pairs_join_only_rows_of_one_speaker() -> None:
    """Two speakers with two rows each: each row is paired with its mate, both ways."""
    assert sorted(pairs_of(["a", "b", "a", "b"])) == [(0, 2), (1, 3), (2, 0), (3, 1)]


def test_three_rows_of_one_speaker_pair_cyclically() -> None:
    """Each row is paired with the next one of its speaker, the last with the first."""
    assert sorted(pairs_of(["x", "x", "x"])) == [(0, 1), (1, 2), (2, 0)]


def test_unknown_speakers_and_singletons_are_left_out() -> None:
    """None is no speaker (two Nones are not a pair) and a speaker alone in the batch has no pair."""
    assert sorted(pairs_of(["a", None, "b", None, "a", "c"])) == [(0, 4), (4, 0)]
    assert pairs_of([None, None, None]) == []
    assert pairs_of(["a", "b", "c"]) == []
    assert pairs_of([]) == []


def test_pairs_hold_for_any_batch() -> None:
    """On random batches: same speaker, never a row with itself, every row of a shared speaker used once each way."""
    rng = random.Random(3)
    for _ in range(50):
        speakers = [rng.choice(["a", "b", "c", "d", None]) for _ in range(rng.randint(0, 12))]
        pairs = pairs_of(speakers)
        assert all(speakers[a] == speakers[b] and speakers[a] is not None and a != b for a, b in pairs)
        shared = [i for i, s in enumerate(speakers) if s is not None and speakers.count(s) > 1]
        assert sorted(a for a, _ in pairs) == shared
        assert sorted(b for _, b in pairs) == shared


# ---------------------------------------------------------------------------------------------------------- loss


def test_without_pairs_the_loss_is_the_weighted_absolute_error() -> None:
    """No two rows share a speaker: ABSOLUTE_WEIGHT * mse(log_frames, log(frames))."""
    log_frames = torch.tensor([4.0, 5.5, 3.0])
    frames = torch.tensor([50, 300, 20])
    loss = duration_loss(log_frames, frames, ["a", None, "b"])
    expected = ABSOLUTE_WEIGHT * F.mse_loss(log_frames, frames.float().log())
    assert loss.dtype == torch.float32 and loss.dim() == 0
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)
    assert 0 < ABSOLUTE_WEIGHT < 1


def test_the_pair_term_is_the_log_ratio_error_computed_by_hand() -> None:
    """Three rows of one speaker (pairs 0-1, 1-2, 2-0) and one other: the pair term is added in full."""
    log_frames = [4.0, 5.0, 3.5, 6.0]
    frames = [60, 100, 40, 500]
    target = [math.log(f) for f in frames]
    absolute = sum((p - t) ** 2 for p, t in zip(log_frames, target, strict=True)) / 4
    pairs = [(0, 1), (1, 2), (2, 0)]
    ratio = sum(((log_frames[a] - log_frames[b]) - (target[a] - target[b])) ** 2 for a, b in pairs) / len(pairs)
    loss = duration_loss(torch.tensor(log_frames), torch.tensor(frames), ["s", "s", "s", "t"])
    assert loss.item() == pytest.approx(ABSOLUTE_WEIGHT * absolute + ratio, rel=1e-5)


def test_a_speaker_s_own_rate_costs_only_the_absolute_term() -> None:
    """Shifting one speaker's log-frames by a constant leaves the pair term as it was."""
    log_frames = torch.tensor([4.0, 5.0, 3.5, 6.0])
    frames = torch.tensor([60, 100, 40, 500])
    speakers = ["s", "s", "s", "t"]
    shifted = log_frames + torch.tensor([0.7, 0.7, 0.7, -0.3])
    target = frames.float().log()
    pair_before = duration_loss(log_frames, frames, speakers) - ABSOLUTE_WEIGHT * F.mse_loss(log_frames, target)
    pair_after = duration_loss(shifted, frames, speakers) - ABSOLUTE_WEIGHT * F.mse_loss(shifted, target)
    assert pair_before.item() > 0.01
    assert pair_after.item() == pytest.approx(pair_before.item(), abs=1e-5)


def test_the_loss_is_zero_when_the_prediction_is_exact() -> None:
    """log_frames == log(frames) gives 0, with or without pairs."""
    frames = torch.tensor([60, 100, 40, 500])
    for speakers in (["s", "s", "s", "t"], [None] * 4):
        assert duration_loss(frames.float().log(), frames, speakers).item() == pytest.approx(0.0, abs=1e-10)


def test_the_gradient_reaches_the_predictor() -> None:
    """backward() through the loss gives finite, non-zero gradients to every parameter."""
    model = tiny_predictor().train()
    ids, _ = pad_ids([[1, 2, 3], [4, 5], [6, 7, 8, 9], [1]])
    loss = duration_loss(model(ids), torch.tensor([30, 20, 45, 9]), ["a", "a", "b", None])
    loss.backward()
    for name, parameter in model.named_parameters():
        if name.startswith("embed"):
            continue  # only the rows of the ids used get a gradient; checked below
        assert parameter.grad is not None and torch.isfinite(parameter.grad).all(), name
        assert parameter.grad.abs().sum() > 0, name
    used = model.embed.weight.grad[torch.tensor([1, 2, 3, 4, 5, 6, 7, 8, 9]) + 1]
    assert (used.abs().sum(dim=-1) > 0).all()


# ---------------------------------------------------------------------------------------------------------- training

NUM_TOKENS = 8
RATES = {"slow": 1.6, "plain": 1.0, "quick": 0.7, "brisk": 0.55}


def synthetic_utterances(rng: random.Random, count: int) -> list[tuple[list[int], str, int]]:
    """(token ids, speaker, frames): token k lasts 2(k+1) frames at the speaker's rate.

    Each text mixes short tokens (0-3) and long ones (4-7) in its own proportion, so that the byte count (one byte a
    token) says little about its length.
    """
    items = []
    for _ in range(count):
        share_long = rng.random()
        tokens = [
            rng.randrange(4, 8) if rng.random() < share_long else rng.randrange(0, 4) for _ in range(rng.randint(4, 24))
        ]
        speaker = rng.choice(list(RATES))
        items.append((tokens, speaker, round(RATES[speaker] * sum(2 * (k + 1) for k in tokens))))
    return items


def as_text(tokens: list[int]) -> str:
    """Token k as the letter chr(97 + k): one UTF-8 byte a token."""
    return "".join(chr(ord("a") + k) for k in tokens)


def test_a_short_training_beats_the_byte_rule_on_held_out_texts() -> None:
    """150 AdamW steps learn per-token lengths: same-speaker ratio errors far below the byte-ratio rule's."""
    torch.set_num_threads(1)  # tiny ops: threads only add overhead (the conftest fixture restores the count)
    rng = random.Random(0)
    train, held_out = synthetic_utterances(rng, 512), synthetic_utterances(rng, 64)
    torch.manual_seed(0)
    model = DurationPredictor(NUM_TOKENS, dim=32, depth=1, kernel_size=3)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(150):
        batch = rng.sample(train, 32)
        ids, _ = pad_ids([tokens for tokens, _, _ in batch])
        loss = duration_loss(model(ids), torch.tensor([f for _, _, f in batch]), [s for _, s, _ in batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        logs = model(pad_ids([tokens for tokens, _, _ in held_out])[0]).tolist()
    learned, rule = [], []
    for i, (ref_tokens, ref_speaker, ref_frames) in enumerate(held_out):
        for j, (gen_tokens, gen_speaker, gen_frames) in enumerate(held_out):
            if i == j or ref_speaker != gen_speaker:
                continue
            by_model = predicted_duration(ref_frames, logs[i], logs[j]) - ref_frames
            by_bytes = estimate_duration(ref_frames, as_text(ref_tokens), as_text(gen_tokens)) - ref_frames
            learned.append(abs(by_model - gen_frames) / gen_frames)
            rule.append(abs(by_bytes - gen_frames) / gen_frames)
    assert len(learned) > 200
    assert statistics.median(rule) > 0.15  # the data is built so that bytes are a poor proxy
    assert statistics.median(learned) < 0.05
    assert statistics.median(learned) < statistics.median(rule) / 4


# ---------------------------------------------------------------------------------------------------------- sampling


def test_predicted_duration_scales_the_reference_by_the_predicted_ratio() -> None:
    """ref + round(ref * exp(gen - ref_log) / speed), at least one generated frame."""
    assert predicted_duration(90, 1.0, 1.0 + math.log(2)) == 90 + 180
    assert predicted_duration(100, math.log(50), math.log(75)) == 100 + 150
    assert predicted_duration(10, 0.0, math.log(1.26)) == 10 + 13  # 12.6 rounds up: rounded, not truncated
    assert predicted_duration(10, 0.0, math.log(1.24)) == 10 + 12
    assert predicted_duration(100, 3.0, -20.0) == 101  # never less than one generated frame


def test_speed_divides_the_generated_part_only() -> None:
    """speed=2 halves the generated frames and speed=0.5 doubles them; the reference's frames stay."""
    assert predicted_duration(90, 1.0, 1.0 + math.log(2), speed=2.0) == 90 + 90
    assert predicted_duration(90, 1.0, 1.0 + math.log(2), speed=0.5) == 90 + 360
    assert predicted_duration(400, 2.0, 2.5, speed=2.0) - 400 == round((predicted_duration(400, 2.0, 2.5) - 400) / 2)


@pytest.mark.parametrize(
    ("arguments", "pattern"),
    [
        ((0, 1.0, 2.0, 1.0), r"^ref_frames=0 is not valid"),
        ((-5, 1.0, 2.0, 1.0), r"^ref_frames=-5 is not valid"),
        ((100, 1.0, 2.0, 0.0), r"^speed=0\.0 is not valid"),
        ((100, 1.0, 2.0, -1.0), r"^speed=-1\.0 is not valid"),
        ((100, 1.0, 2.0, math.nan), r"^speed=nan is not valid"),
        ((100, math.nan, 2.0, 1.0), r"non-finite"),
        ((100, 1.0, math.inf, 1.0), r"non-finite"),
        ((100, -math.inf, 2.0, 1.0), r"non-finite"),
    ],
)
def test_predicted_duration_refuses_bad_input(arguments: tuple[float, float, float, float], pattern: str) -> None:
    """A reference of no frames, a speed <= 0 or NaN, a non-finite estimate: one-line ValueError."""
    ref_frames, ref_log, gen_log, speed = arguments
    with pytest.raises(ValueError, match=pattern) as info:
        predicted_duration(int(ref_frames), ref_log, gen_log, speed)
    assert "\n" not in str(info.value)


def test_fixed_duration_rounds_seconds_to_frames() -> None:
    """ref + round(seconds * frame_rate), at least one generated frame."""
    assert fixed_duration(100, 1.0, FRAME_RATE) == 100 + 94  # 93.75 frames
    assert fixed_duration(100, 2.0, FRAME_RATE) == 100 + 188  # 187.5: Python rounds half to even
    assert fixed_duration(50, 0.5, 100.0) == 50 + 50
    assert fixed_duration(50, 0.123, 100.0) == 50 + 12
    assert fixed_duration(100, 0.001, FRAME_RATE) == 101


@pytest.mark.parametrize("seconds", [0.0, -1.0, math.nan, math.inf])
def test_fixed_duration_refuses_no_or_unbounded_seconds(seconds: float) -> None:
    """seconds <= 0, NaN or infinite: one-line ValueError naming the value."""
    with pytest.raises(ValueError, match=r"^duration=.* seconds is not valid") as info:
        fixed_duration(100, seconds, FRAME_RATE)
    assert "\n" not in str(info.value)
