"""RL of the duration predictor (`+recipe=duration_grpo`): its lengths, its loss on hand-made rewards, the KL term,
refusals, and real updates that resume exactly.

The flow model is a `debug_tiny` DiT trained for a few updates on the demo data; the predictor RL starts from is a
`+recipe=duration_small` export of the same data; the prompts are the demo data's validation rows.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch
from support.trainer_helpers import make

from f5lite.config import compose_config
from f5lite.infer.duration import DurationEstimator
from f5lite.infer.plan import WINDOW_FRAMES
from f5lite.paths import demo_dir
from f5lite.storage.duration_files import LoadedDuration, load_duration
from f5lite.train.duration.grpo import DurationGrpo, log_lengths
from f5lite.train.seeding import seed_step
from f5lite.train.trainer import Trainer


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A trained debug_tiny model's export, and a duration predictor's export of the same vocab."""
    root = tmp_path_factory.mktemp("models")
    make(root, "optim.max_updates=4", "model.dropout=0.0", "perf.precision=no").fit()
    predictor = root / "predictor"
    Trainer(compose_config(["+recipe=duration_small", f"run_dir={predictor}", "optim.max_updates=30",
                                "eval.every=0", "perf.precision=no"])).fit()  # fmt: skip
    return root / "run" / "export", predictor / "export"


def overrides(models: tuple[Path, Path], run: Path, *extra: str) -> list[str]:
    flow, predictor = models
    return [
        "+recipe=duration_grpo", f"init.weights={flow}", f"duration.init={predictor}", f"data.dir={demo_dir()}",
        f"run_dir={run}", f"grpo.prompts={demo_dir() / 'val' / 'testset.txt'}", "grpo.group=2", "grpo.sample.steps=2",
        "grpo.rewards.wer=0", "eval.every=0", "logger.every=1", "ckpt.every=100", "perf.precision=no", *extra,
    ]  # fmt: skip


def objective(run: Trainer) -> DurationGrpo:
    grpo = run.net.module
    assert isinstance(grpo, DurationGrpo)
    return grpo


def update(run: Trainer, generator: torch.Generator) -> None:
    """One update of the loop's own, its rollouts drawn with `generator`."""
    run.optimizer_step(run.objective.backward(run.model, None, generator, 1))  # type: ignore[arg-type]


def shifts(grpo: DurationGrpo) -> torch.Tensor:
    """The policy's log-length less the starting predictor's, of each prompt."""
    with torch.no_grad():
        return log_lengths(grpo.predictor, grpo.encoder, grpo.pieces) - log_lengths(
            grpo.reference, grpo.encoder, grpo.pieces
        )


def test_the_policy_s_mean_length_is_the_length_inference_gives(models: tuple[Path, Path], tmp_path: Path) -> None:
    grpo = objective(Trainer(compose_config(overrides(models, tmp_path / "run"))))
    estimator = DurationEstimator(LoadedDuration(grpo.predictor, grpo.encoder, 0))
    with torch.no_grad():
        means = log_lengths(grpo.predictor, grpo.encoder, grpo.pieces).exp().tolist()
    for piece, mean in zip(grpo.pieces, means, strict=True):
        ref = piece.reference.mel.shape[0]
        assert estimator.total_frames(ref, piece.reference.text, piece.text) - ref == max(1, round(mean))
    assert torch.equal(shifts(grpo), torch.zeros(len(grpo.pieces)))  # the run starts at duration.init's weights


def hand_made(grpo: DurationGrpo, best: float) -> None:
    """Reward each take for how near its log-length is to `best` above the start's (no flow model, no scoring)."""
    with torch.no_grad():
        means = log_lengths(grpo.reference, grpo.encoder, grpo.pieces).tolist()
    start = {id(p): v for p, v in zip(grpo.pieces, means, strict=True)}

    def rollout(prompts: list, drawn: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        target = torch.tensor([start[id(p)] + best for p in prompts])[:, None]
        return (-((drawn.cpu() - target) ** 2)).reshape(-1, 1)

    grpo.rollout = rollout  # type: ignore[method-assign]


@pytest.mark.parametrize("best", [0.2, -0.2])
def test_the_loss_moves_the_lengths_towards_those_the_reward_prefers(
    models: tuple[Path, Path], tmp_path: Path, best: float
) -> None:
    run = Trainer(compose_config(overrides(models, tmp_path / "run", "grpo.kl=0", "grpo.group=8",
                                               "duration.lr=3e-3")))  # fmt: skip
    grpo = objective(run)
    # One prompt: the length is a ratio to the reference's, so one rate for every prompt is no length it can learn.
    grpo.pieces = grpo.pieces[:1]
    hand_made(grpo, best)
    for step in range(15):
        update(run, seed_step(0, step, 0, 0, torch.device("cpu")))
    assert float(shifts(grpo)[0]) * best / abs(best) > 0.05  # well on its way, in the rewarded direction
    window = grpo.take_window()
    assert set(window) == {"reward", "reward_sim", "length_shift"} and grpo.take_window() == {}


def test_the_kl_term_is_nothing_at_the_start_and_pulls_a_policy_that_left_back(
    models: tuple[Path, Path], tmp_path: Path
) -> None:
    run = Trainer(compose_config(overrides(models, tmp_path / "run", "grpo.kl=1.0", "duration.lr=1e-3")))
    grpo = objective(run)
    grpo.pieces = grpo.pieces[:1]  # the term holds the prompts an update draws
    grpo.rollout = lambda prompts, drawn, generator: torch.zeros(drawn.numel(), 1)  # type: ignore[method-assign]
    generator = lambda: seed_step(0, 0, 0, 0, torch.device("cpu"))  # noqa: E731
    assert float(grpo(generator()).detach()) == 0.0  # rewards alike: advantages 0, and the policy is the reference
    with torch.no_grad():  # each token's own change: a change alike for all would cancel in the length ratio
        embed = run.network.embed.weight
        embed.add_(1.0 * torch.randn(embed.shape, generator=torch.Generator().manual_seed(0)))
    left = abs(float(shifts(grpo)[0]))
    assert left > 0.01
    assert float(grpo(generator()).detach()) > 0.0
    for _ in range(20):
        update(run, generator())
    assert abs(float(shifts(grpo)[0])) < 0.5 * left


def test_a_group_s_takes_share_their_start_and_differ_in_length(
    models: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import f5lite.infer.synthesizer as module  # the takes are spoken by Synthesizer.generate

    grpo = objective(Trainer(compose_config(overrides(models, tmp_path / "run", "grpo.prompts_per_update=2"))))
    seen: list[tuple[torch.Tensor, torch.Tensor]] = []
    real = module.sample

    def recording(*args: Any, noise: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        seen.append((noise, args[3]))  # the starts, and the takes' lengths
        return real(*args, noise=noise, **kwargs)

    monkeypatch.setattr(module, "sample", recording)
    grpo(seed_step(0, 0, 0, 0, torch.device("cpu")))
    ((noise, durations),) = seen
    assert torch.equal(noise[0], noise[1]) and torch.equal(noise[2], noise[3]) and not torch.equal(noise[0], noise[2])
    assert durations[0] != durations[1] and durations[2] != durations[3]


def test_a_length_drawn_past_the_window_is_spoken_at_the_window(
    models: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import f5lite.infer.synthesizer as module  # the takes are spoken by Synthesizer.generate

    grpo = objective(Trainer(compose_config(overrides(models, tmp_path / "run"))))
    seen: list[torch.Tensor] = []

    class StopError(Exception):
        pass

    def recording(*args: Any, **kwargs: Any) -> torch.Tensor:
        seen.append(args[3])  # the takes' lengths, reference included
        raise StopError  # the lengths are what is checked: nothing is spoken

    monkeypatch.setattr(module, "sample", recording)
    drawn = torch.tensor([[math.log(10**6), 1e4]])  # a policy gone far: minutes, and more than a float holds
    with pytest.raises(StopError):
        grpo.rollout(grpo.pieces[:1], drawn, seed_step(0, 0, 0, 0, torch.device("cpu")))
    assert seen[0].tolist() == [WINDOW_FRAMES, WINDOW_FRAMES]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["duration.init=null"], "objective=duration_grpo needs duration.init$"),
        (["init.weights=null", "grpo.prompts=null"], "objective=duration_grpo needs grpo.prompts and init.weights$"),
        (["duration.spread=0"], "duration.spread"),
        (["objective=flow"], "is read only with objective=grpo or objective=duration_grpo, not with objective=flow"),
        (["duration.train=grpo"], "duration.train=grpo was removed; use objective=duration_grpo"),
        (["duration.init=/no/such/predictor"], "duration.init: .*/no/such/predictor"),
        (["init.weights=/no/such/model"], "init.weights: .*/no/such/model"),
        (["grpo.prompts=/no/such/prompts.txt"], "grpo.prompts: .*/no/such/prompts.txt"),
    ],
)
def test_a_bad_setting_stops_the_run_before_it_starts(
    models: tuple[Path, Path], tmp_path: Path, extra: list[str], message: str
) -> None:
    with pytest.raises(ValueError, match=message) as err:
        Trainer(compose_config(overrides(models, tmp_path / "run", *extra)))
    assert "\n" not in str(err.value)
    assert not (tmp_path / "run" / "config.yaml").exists()


@pytest.mark.heavy
def test_real_updates_score_takes_resume_exactly_and_export_a_predictor(
    models: tuple[Path, Path], tmp_path: Path
) -> None:
    Trainer(compose_config(overrides(models, tmp_path / "a", "optim.max_updates=3"))).fit()
    lines = [json.loads(x) for x in (tmp_path / "a" / "logs" / "train.jsonl").read_text().splitlines()]
    assert [x["update"] for x in lines] == [1, 2, 3]
    for x in lines:
        assert -1.0 <= x["reward_sim"] <= 1.0 and x["reward"] == pytest.approx(x["reward_sim"], abs=1e-6)
    assert lines[0]["length_shift"] == 0.0 and lines[-1]["length_shift"] != 0.0
    staged = overrides(models, tmp_path / "b", "optim.max_updates=3", "ckpt.every=1")
    Trainer(compose_config(staged)).fit(until=1)
    resumed = Trainer(compose_config(staged))
    assert resumed.update == 1
    resumed.fit()
    a, b = load_duration(tmp_path / "a" / "export"), load_duration(tmp_path / "b" / "export")
    assert a.trained_updates == b.trained_updates == 3
    for key, value in a.predictor.state_dict().items():
        assert torch.equal(value, b.predictor.state_dict()[key]), key
    start = load_duration(models[1]).predictor.state_dict()
    assert any(not torch.equal(start[k], v) for k, v in a.predictor.state_dict().items())
