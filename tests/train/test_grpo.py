"""Online RL (`+recipe=grpo`) on the trainer as it is: advantages, the loss, exact resume, refusals, one real update.

The policy is a `debug_tiny` DiT trained for a few updates on the demo data (its export is what a user improves);
its prompts are the demo data's validation rows, the rewards the offline backends.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file
from support.scripts import load_script
from support.trainer_helpers import make

import f5lite
from f5lite.config import compose_config
from f5lite.metrics.asr import load_recognizer
from f5lite.models.cfm import CFM
from f5lite.paths import demo_dir
from f5lite.sampling import SamplerOptions, solve
from f5lite.sampling.sde import step_kl, step_log_prob, step_mean_std
from f5lite.storage.model_sources import load_source
from f5lite.storage.rundir import load_run_config
from f5lite.train import Trainer, TrainingStopped
from f5lite.train.grpo import Grpo, flow_terms, group_advantages, grpo_loss


def test_advantages_are_each_reward_against_its_own_group() -> None:
    rewards = torch.tensor([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0], [0.0, 0.0, 4.0]])
    advantages = group_advantages(rewards)
    spread = (2 / 3) ** 0.5  # population spread of 1, 2, 3
    assert torch.allclose(advantages[0], torch.tensor([-1.0, 0.0, 1.0]) / (spread + 1e-4))
    assert torch.equal(advantages[1], torch.zeros(3))  # a group that scored alike teaches nothing, and is no NaN
    assert advantages[2, 2] > 0 > advantages[2, 0]  # the better sample of a group is pushed up
    assert torch.allclose(advantages.mean(dim=1), torch.zeros(3), atol=1e-6)


def test_the_loss_is_the_policy_gradient_plus_the_kl_term() -> None:
    log_prob = torch.tensor([-1.0, -2.0, -0.5], requires_grad=True)
    kl = torch.tensor([0.0, 0.5, 2.0], requires_grad=True)
    advantages = torch.tensor([1.0, -1.0, 0.5])
    loss = grpo_loss(log_prob, advantages, kl, beta=0.1)
    # In value: the ratio is 1, so the loss is mean(-A + beta KL).
    assert torch.allclose(loss, (-advantages + 0.1 * kl.detach()).mean())
    loss.backward()
    assert log_prob.grad is not None and kl.grad is not None
    assert torch.allclose(log_prob.grad, -advantages / 3)  # descending raises the log-probability of A > 0
    assert torch.allclose(kl.grad, torch.full((3,), 0.1 / 3))


def test_grpo_moves_a_policy_towards_the_samples_its_reward_prefers() -> None:
    # A velocity field with one learnable offset, rewarded for a high mean of the sample: the chain of rollout,
    # group advantages, step log-probabilities and loss must raise the offset (a sign error anywhere lowers it).
    offset = torch.nn.Parameter(torch.zeros(()))
    optimizer = torch.optim.SGD([offset], lr=0.2)
    grid = torch.linspace(0, 1, 5)
    g = torch.Generator().manual_seed(0)
    mask = torch.ones(8, 4, dtype=torch.bool)
    for _ in range(20):
        x0 = torch.randn(8, 4, 2, generator=g)
        field = lambda t, x, dt=None, x0=x0: offset.detach() - x0  # noqa: E731
        states = solve(field, x0, grid, noise_level=0.7, generator=g, trajectory=True)
        advantages = group_advantages(states[-1].mean(dim=(1, 2))[None])[0]
        k = int(torch.randint(4, (), generator=g))
        t, dt = grid[k], grid[k + 1] - grid[k]
        mean, std = step_mean_std(states[k], offset - x0, t, dt, 0.7)
        log_prob = step_log_prob(states[k + 1], mean, std, mask)
        ref, _ = step_mean_std(states[k], -x0, t, dt, 0.7)
        loss = grpo_loss(log_prob, advantages, step_kl(mean, ref, std, mask), beta=0.0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert float(offset.detach()) > 0.3, float(offset.detach())


def test_the_flow_likelihood_moves_a_policy_towards_the_takes_its_reward_prefers() -> None:
    # The same, with each take's likelihood its flow-matching loss: takes from independent starts of a constant
    # learnable velocity, rewarded for a high mean; a sign error in the likelihood or the advantage lowers the offset.
    offset = torch.nn.Parameter(torch.zeros(()))
    optimizer = torch.optim.SGD([offset], lr=0.2)
    g = torch.Generator().manual_seed(0)
    span = torch.ones(8, 4, dtype=torch.bool)
    for _ in range(20):
        x1 = torch.randn(8, 4, 2, generator=g) + offset.detach()  # the ODE of `v = offset` from 8 starts
        advantages = group_advantages(x1.mean(dim=(1, 2))[None])[0]
        x0 = torch.randn(1, 4, 2, generator=g).expand(8, -1, -1)  # one noise and time for the group
        t = torch.rand((), generator=g).expand(8)
        log_prob, kl = flow_terms(lambda t, x: offset.expand_as(x), lambda t, x: torch.zeros_like(x), x1, x0, t, span)
        loss = grpo_loss(log_prob, advantages, kl, beta=0.0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert float(offset.detach()) > 0.3, float(offset.detach())


def test_the_flow_likelihood_is_minus_the_flow_matching_loss_over_the_generated_frames() -> None:
    g = torch.Generator().manual_seed(0)
    x0, x1 = torch.randn(2, 2, 5, 3, generator=g)
    span = torch.tensor([[False, True, True, True, False], [True] * 5])
    t = torch.tensor([0.3, 0.8])
    straight = lambda t, x: x1 - x0  # noqa: E731 - the velocity of the straight path from x0 to x1
    log_prob, kl = flow_terms(straight, straight, x1, x0, t, span)
    assert torch.equal(log_prob, torch.zeros(2)) and torch.equal(kl, torch.zeros(2))
    off = lambda t, x: x1 - x0 + 0.5  # noqa: E731
    log_prob, kl = flow_terms(off, straight, x1, x0, t, span)
    assert torch.allclose(log_prob, torch.full((2,), -0.25)) and torch.allclose(kl, torch.full((2,), 0.25))
    # The frames outside the span (the reference, the padding) do not count.
    outside = lambda t, x: x1 - x0 + 9.0 * (~span)[..., None]  # noqa: E731
    assert torch.equal(flow_terms(outside, straight, x1, x0, t, span)[0], torch.zeros(2))


# ----------------------------------------------------------------------------------------------- the trainer


@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trained debug_tiny model's export, without dropout (RL needs none)."""
    root = tmp_path_factory.mktemp("policy")
    make(root, "optim.max_updates=6", "model.dropout=0.0").fit()
    return root / "run" / "export"


def grpo_overrides(policy: Path, run: Path, *extra: str) -> list[str]:
    return [
        "+recipe=grpo", f"init.weights={policy}", f"data.dir={demo_dir()}", f"run_dir={run}",
        f"grpo.prompts={demo_dir() / 'val' / 'testset.txt'}", "grpo.group=2", "grpo.sample.steps=3", "grpo.train_steps=2",
        "grpo.rewards.wer=0", "optim.lr=1e-3", "eval.every=0", "logger.every=1", "ckpt.every=100", "perf.precision=no",
        *extra,
    ]  # fmt: skip


def weights(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in trainer.network.state_dict().items()}


@pytest.mark.heavy
def test_one_update_scores_a_group_per_prompt_and_moves_the_weights(policy: Path, tmp_path: Path) -> None:
    cfg = compose_config(grpo_overrides(policy, tmp_path / "run", "optim.max_updates=2", "grpo.prompts_per_update=2",
                                        "grpo.rewards.wer=1.0", "grpo.rewards.sim=0.5"))  # fmt: skip
    trainer = Trainer(cfg)
    loaded = load_source(policy)
    ran = load_run_config(trainer.run_dir)
    assert ran.model == loaded.model and ran.data.tokenizer == loaded.tokenizer
    start = weights(trainer)
    grpo = trainer.objective.grpo
    assert grpo is not None and grpo.rewards.names == ["wer", "sim"]
    assert all(torch.equal(start[k], v) for k, v in grpo.reference.state_dict().items())  # the starting weights
    trainer.fit()
    assert any(not torch.equal(start[k], v) for k, v in weights(trainer).items())
    # ... and the reference stays where it started.
    assert all(torch.equal(start[k], v) for k, v in grpo.reference.state_dict().items())
    lines = [json.loads(x) for x in (tmp_path / "run" / "logs" / "train.jsonl").read_text().splitlines()]
    assert [x["update"] for x in lines] == [1, 2]
    for x in lines:
        assert -1.0 <= x["reward_wer"] <= 0.0 and -1.0 <= x["reward_sim"] <= 1.0
        assert x["reward"] == pytest.approx(x["reward_wer"] + 0.5 * x["reward_sim"], abs=1e-5)
    assert (tmp_path / "run" / "export" / "model.safetensors").exists()
    assert load_source(tmp_path / "run" / "export").model == loaded.model


@pytest.mark.heavy
@pytest.mark.parametrize("likelihood", ["sde", "flow"])
def test_a_grpo_run_resumes_exactly(policy: Path, tmp_path: Path, likelihood: str) -> None:
    own = f"grpo.likelihood={likelihood}"
    straight = Trainer(compose_config(grpo_overrides(policy, tmp_path / "a", "optim.max_updates=4", own)))
    straight.fit()
    overrides = grpo_overrides(policy, tmp_path / "b", "optim.max_updates=4", "ckpt.every=2", own)
    Trainer(compose_config(overrides)).fit(until=2)
    resumed = Trainer(compose_config(overrides))
    assert resumed.update == 2
    resumed.fit()
    for (name, a), b in zip(weights(straight).items(), weights(resumed).values(), strict=True):
        assert torch.equal(a, b), name


@pytest.mark.heavy
def test_a_sigterm_during_a_rollout_saves_that_update_and_the_relaunch_ends_where_a_straight_run_does(
    policy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A preempted RL run: the launcher's SIGTERM arrives while update 2 is rolling out its takes.
    straight = Trainer(compose_config(grpo_overrides(policy, tmp_path / "a", "optim.max_updates=3")))
    straight.fit()
    real_rollout = Grpo.rollout
    calls: list[int] = []

    def rollout_then_sigterm(self: Grpo, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGTERM)
        return real_rollout(self, *args, **kwargs)

    monkeypatch.setattr(Grpo, "rollout", rollout_then_sigterm)
    overrides = grpo_overrides(policy, tmp_path / "b", "optim.max_updates=3")
    with pytest.raises(TrainingStopped) as stopped:
        Trainer(compose_config(overrides)).fit()
    assert stopped.value.code == 128 + signal.SIGTERM
    assert (tmp_path / "b" / "checkpoints" / "step-00000002").is_dir()
    assert not (tmp_path / "b" / "export").exists()
    monkeypatch.setattr(Grpo, "rollout", real_rollout)
    resumed = Trainer(compose_config(overrides))
    assert resumed.update == 2
    resumed.fit()
    for (name, a), b in zip(weights(straight).items(), weights(resumed).values(), strict=True):
        assert torch.equal(a, b), name


@pytest.mark.parametrize("likelihood", ["sde", "flow"])
def test_the_kl_term_is_nothing_at_the_start_and_grows_as_the_policy_leaves_it(
    policy: Path, tmp_path: Path, likelihood: str
) -> None:
    trainer = Trainer(compose_config(grpo_overrides(policy, tmp_path / "run", f"grpo.likelihood={likelihood}")))
    grpo = trainer.objective.grpo
    assert grpo is not None
    unused = torch.zeros(1, 1, 100), torch.zeros(1, 1, dtype=torch.long), torch.ones(1, dtype=torch.long)

    def loss(kl: float) -> float:
        grpo.settings = dataclasses.replace(grpo.settings, kl=kl)
        with torch.no_grad():  # the same rollouts and rewards each time: only the KL's weight differs
            return float(grpo(*unused, generator=torch.Generator().manual_seed(0)))

    assert loss(5.0) == loss(0.0)  # the policy is the reference
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for param in trainer.network.parameters():
            param.add_(0.02 * torch.randn(param.shape, generator=g))
    assert loss(5.0) > loss(0.0) + 1e-4


def test_positive_advantages_pull_towards_the_better_take_and_push_from_none(policy: Path, tmp_path: Path) -> None:
    # A group of 2 scored apart: advantages of +-d / (d + 1e-4), within 1 % of +-1 when the takes' rewards are 0.02
    # apart (d = 0.01) or more. At the starting weights the ratio is 1 and the KL 0, so the loss is -mean(A): 0 with
    # GRPO's signed advantages, about -1/2 when the worse take's advantage counts as 0.
    trainer = Trainer(compose_config(grpo_overrides(policy, tmp_path / "run", "grpo.likelihood=flow")))
    grpo = trainer.objective.grpo
    assert grpo is not None
    unused = torch.zeros(1, 1, 100), torch.zeros(1, 1, dtype=torch.long), torch.ones(1, dtype=torch.long)

    def loss(advantages: str) -> float:
        grpo.settings = dataclasses.replace(grpo.settings, advantages=advantages)
        with torch.no_grad():
            return float(grpo(*unused, generator=torch.Generator().manual_seed(0)))

    assert abs(loss("signed")) < 1e-5
    assert loss("positive") == pytest.approx(-0.5, abs=5e-3)


def test_the_data_weight_adds_the_flow_objective_on_the_training_batch(policy: Path, tmp_path: Path) -> None:
    trainer = Trainer(compose_config(grpo_overrides(policy, tmp_path / "run")))
    grpo = trainer.objective.grpo
    assert grpo is not None
    g = torch.Generator().manual_seed(3)
    batch = torch.randn(2, 40, 100, generator=g), torch.randint(0, 5, (2, 12), generator=g), torch.tensor([40, 31])

    def loss(data_weight: float, mel: torch.Tensor) -> tuple[float, torch.Generator]:
        grpo.settings = dataclasses.replace(grpo.settings, data_weight=data_weight)
        generator = torch.Generator().manual_seed(0)
        with torch.no_grad():
            return float(grpo(mel, *batch[1:], generator=generator)), generator

    rl_only, after = loss(0.0, batch[0])
    assert loss(0.0, 2 * batch[0])[0] == rl_only  # weight 0: the batch is not used
    with torch.no_grad():  # the batch's flow loss, drawn from where the rollouts left the generator
        data = float(CFM(trainer.network)(*batch, generator=after))
    assert loss(0.5, batch[0])[0] == pytest.approx(rl_only + 0.5 * data, rel=1e-5, abs=1e-6)


def test_a_group_s_takes_share_their_start_and_part_only_in_the_trained_steps(
    policy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Reward spread that no trained step caused is noise to the gradient: a group starts from one noise, and only the
    # steps the loss is computed on draw anything.
    seen, windows = recorded_rollouts(policy, tmp_path, monkeypatch, "grpo.likelihood=sde")
    (states,) = seen
    assert states.shape[:2] == (5, 6)
    for group in (slice(0, 3), slice(3, 6)):
        start = states[0, group]
        assert torch.equal(start, start[:1].expand_as(start))
        after = states[1, group]
        assert not torch.equal(after[0], after[1])  # the first step is stochastic ...
    assert not torch.equal(states[0, 0], states[0, 3])  # ... and each group has its own start
    assert windows == [2]  # ... and the rest are the ODE's (as `solve` is tested to take them)


def test_with_the_flow_likelihood_each_take_has_a_start_of_its_own_and_the_ode_draws_nothing_more(
    policy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen, windows = recorded_rollouts(policy, tmp_path, monkeypatch, "grpo.likelihood=flow")
    (states,) = seen
    starts = states[0].flatten(1)
    assert all(not torch.equal(starts[i], starts[j]) for i in range(6) for j in range(i))
    assert windows == [0]


def recorded_rollouts(
    policy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *extra: str
) -> tuple[list[torch.Tensor], list[object]]:
    """The states of the rollouts of one update (2 prompts, groups of 3, 4 steps, 2 trained) and their windows."""
    trainer = Trainer(compose_config(grpo_overrides(policy, tmp_path / "run", "grpo.prompts_per_update=2",
                                                    "grpo.group=3", "grpo.sample.steps=4", "grpo.train_steps=2", *extra)))  # fmt: skip
    grpo = trainer.objective.grpo
    assert grpo is not None
    seen: list[torch.Tensor] = []
    windows: list[object] = []
    rollout, solve_frames = grpo.rollout, f5lite.sampling.sampler.solve_frames

    def recording_rollout(*args: Any, **kwargs: Any) -> Any:
        takes = rollout(*args, **kwargs)
        seen.append(takes.states)
        return takes

    def recording_solve(*args: Any, **kwargs: Any) -> torch.Tensor:
        windows.append(kwargs["stochastic_steps"] if kwargs["noise_level"] > 0 else 0)
        return solve_frames(*args, **kwargs)

    monkeypatch.setattr(grpo, "rollout", recording_rollout)
    monkeypatch.setattr("f5lite.train.grpo.solve_frames", recording_solve)
    unused = torch.zeros(1, 1, 100), torch.zeros(1, 1, dtype=torch.long), torch.ones(1, dtype=torch.long)
    with torch.no_grad():
        grpo(*unused, generator=torch.Generator().manual_seed(0))
    return seen, windows


@pytest.mark.parametrize("likelihood", ["sde", "flow"])
def test_a_rollout_without_noise_is_what_the_sampler_gives_users_bit_for_bit(
    policy: Path, tmp_path: Path, likelihood: str
) -> None:
    # The takes RL scores are the sampler's: the rollout steps with the run's sampler settings (method, grid,
    # guidance, CFG-Zero*, zero-init steps), so at noise level 0 a take is `sample` from the take's start.
    options = SamplerOptions(steps=5, method="midpoint", schedule="uniform", sway=None, cfg_strength=1.5,
                             cfg_zero_init_steps=1, cfg_zero_star=True)  # fmt: skip
    cfg = compose_config(grpo_overrides(
        policy, tmp_path / "run", f"grpo.likelihood={likelihood}", "grpo.sample.steps=5", "grpo.sample.cfg_strength=1.5",
        "grpo.sample.method=midpoint", "grpo.sample.schedule=uniform", "grpo.sample.sway=null",
        "grpo.sample.cfg_zero_init_steps=1", "grpo.sample.cfg_zero_star=true",
    ))  # fmt: skip
    grpo = Trainer(cfg).objective.grpo
    assert grpo.options == options
    grpo.settings.noise_level = 0.0  # below what a run accepts (a step's density needs noise): the sampler's ODE
    takes = grpo.rollout(grpo.pieces[:2], torch.Generator().manual_seed(0))
    cond, ids, durations, lens = grpo.synthesizer.inputs([piece for piece in grpo.pieces[:2] for _ in range(2)])
    expected = f5lite.sample(grpo.transformer, cond, ids, durations, options, lens=lens, noise=takes.states[0])
    assert torch.equal(takes.frame.keep_reference(takes.states[-1]), expected)
    # Its starts are drawn as the sampler draws noise: zero past each take's duration.
    past = torch.arange(takes.states.shape[2])[None] >= takes.frame.durations[:, None]
    assert past.any() and not takes.states[0][past].any()


@pytest.mark.heavy
def test_grpo_spread_scores_takes_from_one_start_apart_from_takes_from_many(policy: Path, tmp_path: Path) -> None:
    # scripts/bench_speaks.py --start --spread: with (almost) no noise in the window, GRPO's takes of a prompt are one take
    # (they share their start), while the inference path's takes, one start each, part.
    bench = load_script("bench_speaks")
    code = bench.main([
        "--start", str(policy), "--corpus", str(demo_dir()), "--spread", "2", "--threads", "1", "--out-dir",
        str(tmp_path), "--set", f"grpo.prompts={demo_dir() / 'val' / 'testset.txt'}", "eval.asr=pocketsphinx",
        "grpo.group=3", "grpo.sample.steps=3", "grpo.train_steps=1", "grpo.noise_level=0.001",
    ])  # fmt: skip
    assert code == 0
    result = json.loads((tmp_path / "grpo_spread_cpu.json").read_text())
    assert result["group"] == 3 and len(result["prompts"]) == 2 and result["date"]
    for kind in ("independent", "window"):
        assert 0 <= result[kind]["best_of_group_wer"] <= result[kind]["wer"] <= 1
    assert result["window"]["reward_spread"] < 1e-3 < result["independent"]["reward_spread"]
    with pytest.raises(SystemExit, match="not an f5lite export"):  # a wrong path: one line, no traceback
        bench.main(["--start", str(tmp_path / "no_such_model"), "--spread", "2"])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["init.weights=null"], "objective=grpo needs init.weights"),
        (["objective=flow"], "grpo.prompts=.* is read only with objective=grpo or objective=duration_grpo"),
        (["grpo.rewards.sim=0"], "weighs nothing"),
        (["+grpo.rewards.pesq=1.0"], "grpo.rewards"),
        (["grpo.train_steps=4"], "grpo.train_steps"),
        (["grpo.likelihood=ppo"], "grpo.likelihood"),
        (["grpo.advantages=clipped"], "grpo.advantages"),
        (["grpo.data_weight=-1"], "grpo.data_weight"),
        (["model.dropout=0.1"], "objective=grpo needs model.dropout=0"),
        (["grpo.prompts=/no/such/prompts.txt"], "grpo.prompts: .*/no/such/prompts.txt"),
        (["eval.speaker=wavlm:/no/such/dir"], "/no/such/dir"),
    ],
)
def test_a_bad_grpo_setting_stops_the_run_before_it_starts(
    policy: Path, tmp_path: Path, extra: list[str], message: str
) -> None:
    with pytest.raises(ValueError, match=message) as err:
        Trainer(compose_config(grpo_overrides(policy, tmp_path / "run", *extra)))
    assert "\n" not in str(err.value)
    assert not (tmp_path / "run" / "config.yaml").exists()


def test_a_reward_backend_that_is_not_installed_is_refused_by_name(
    policy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pocketsphinx", None)  # `import pocketsphinx` now fails, as when not installed
    load_recognizer.cache_clear()  # backends load once per process: forget one an earlier test loaded
    with pytest.raises(ValueError, match=r"grpo.rewards=\{'wer': 1.0\}: .*pocketsphinx.*pip install") as err:
        Trainer(compose_config(grpo_overrides(policy, tmp_path / "run", "grpo.rewards.wer=1.0", "grpo.rewards.sim=0")))
    assert "\n" not in str(err.value)
    assert not (tmp_path / "run" / "config.yaml").exists()
    load_recognizer.cache_clear()


@pytest.mark.heavy
def test_two_ranks_each_score_their_own_groups_and_resume_exactly(policy: Path, tmp_path: Path) -> None:
    # Each rank draws its own prompts (the update's generator is seeded with the rank) and normalises its own groups;
    # a relaunch after losing the last checkpoint trains the same update again to the same weights.
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    run = tmp_path / "run"
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "f5lite.train",
               *grpo_overrides(policy, run, "optim.max_updates=4", "ckpt.every=2", "ckpt.keep_last=0")]  # fmt: skip
    first = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    last = run / "checkpoints" / "step-00000004"
    straight = load_file(last / "model.safetensors")
    shutil.rmtree(last)
    shutil.rmtree(run / "export")
    again = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "(update 2)" in again.stderr
    resumed = load_file(last / "model.safetensors")
    assert straight.keys() == resumed.keys()
    assert all(torch.equal(straight[k], resumed[k]) for k in straight)
    start = {k.removeprefix("transformer."): v for k, v in load_file(policy / "model.safetensors").items()}
    assert start.keys() == straight.keys()  # an export's keys are the checkpoint's under `transformer.`
    assert any(not torch.equal(start[k], straight[k]) for k in start)
