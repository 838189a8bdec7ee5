"""Online RL of a trained flow model with speech rewards: GRPO on the model's own takes (`grpo.*`).

`objective=grpo`: the training loop runs as it is, with `Grpo` as the backbone's loss module (checkpoints, exact
resume, EMA, validation, prompts and export unchanged); the prompts are its data, and the training batches it is handed count only with
`grpo.data_weight` (step 5).

One update, on each rank:
1. Draw `grpo.prompts_per_update` prompts of `grpo.prompts` (a test-set file of training material) with the
   update's generator (`f5lite.train.seeding`: a resumed run draws the same), and lay each out as the inference path
   does (`Synthesizer.plan`: the reference, its text + the prompt's text, the duration rule).
2. Roll out a group of `grpo.group` takes per prompt through the sampler (`f5lite.sampling.sampler.solve_frames`,
   with the rollouts' sampler settings `grpo.sample.*`: steps, method, grid, guidance, CFG-Zero*), from starts drawn as `sample`
   draws its noise. The model is the policy as it is (F5R-TTS's Gaussian output head would change the network and its
   checkpoints); `grpo.likelihood` says how a take's probability under it is measured, which sets how it is drawn:
   - `sde`: the first `grpo.train_steps` steps are stepped as the SDE of `f5lite.sampling.sde` (the ODE's marginals,
     exact Gaussian step densities: Flow-GRPO, FlowTTS-GRPO), the rest as the sampler's ODE, from one start per group,
     so a group's takes differ only by the draws of the steps that are trained (DanceGRPO's shared start,
     Flow-GRPO-Fast's and MixGRPO's stochastic window).
   - `flow`: the ODE sampler's takes, each from its own start; a take's log-probability is its flow-matching loss
     (`flow_terms`, an evidence bound). A step's log-probability regresses the model on the next, noisy state, this
     on the clean take: the same policy gradient at less variance by Advantage Weighted Matching's analysis, and the
     takes are those the sampler gives users, bit for bit (`docs/guides/rl.md` has both measured).
   No guidance by default (`grpo.sample.cfg_strength=0`, as FlowTTS-GRPO: the conditional velocity is the policy, at half
   the passes); a strength > 0 makes the guided velocity the policy.
3. Vocode each take as inference does and score it (`f5lite.train.rewards`); each take's advantage is its reward
   against its own group's mean and spread (`group_advantages`), so the advantages are per prompt and per rank, and
   the ranks share nothing but the gradient all-reduce.
4. The loss is GRPO's, `-A * ratio + grpo.kl * KL`, on `grpo.train_steps` log-probabilities per take: the rollout's
   stochastic steps (`sde`), or draws of a time and a noise per group (`flow`). The ratio is that of the
   probability under the network being trained to the rollout's (one update per rollout, so it is 1 and its
   gradient the policy gradient: PPO's clip never acts and is left out); the KL term holds the network near the
   starting weights (`reference`, frozen, not a submodule: in no optimizer): the KL divergence of a step from
   theirs (`sde`), or the squared difference of the two velocities (`flow`). With `grpo.advantages=positive` the
   advantages below 0 count as 0: only the better takes pull (reward-weighted regression), none pushes.
5. With `grpo.data_weight > 0`, the flow objective on the training batch is added at that weight (InstructGPT's
   PPO-ptx): what holds the model to the data, where the KL term holds it to the starting weights.

Unlike the flow objective's, an update syncs with the host: the prompts are picked there, and the clips are scored
there (the scores are Python numbers; PocketSphinx runs on the CPU).

The reference is the starting weights, built again from `init.weights` at every launch, so a resumed run has it
without a checkpoint holding it. The rewards of each update are kept for the trainer's log (`take_window`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from accelerate import Accelerator
from torch import Tensor, nn

from f5lite.config import TrainConfig
from f5lite.config.grpo import GrpoConfig
from f5lite.data.testset import read_testset
from f5lite.infer.plan import Piece
from f5lite.infer.synthesizer import Synthesizer
from f5lite.models import build_backbone_from_config
from f5lite.models.cfm import CFM
from f5lite.sampling.backbone import Backbone
from f5lite.sampling.guidance import velocity_field
from f5lite.sampling.ode import VelocityField
from f5lite.sampling.sampler import SamplerFrames, initial_noise, sampler_frames, sampler_grid, solve_frames
from f5lite.sampling.sde import masked_mean, step_kl, step_log_prob, step_mean_std
from f5lite.storage.model_sources import LoadedSource, load_source
from f5lite.text import TextEncoder
from f5lite.train.evaluation import load_run_vocoder
from f5lite.train.network import FlowFamily, flow_evaluation, flow_network
from f5lite.train.objective import MakeEvaluation, Network, Prepared
from f5lite.train.rewards import Rewards

ADVANTAGE_EPS = 1e-4
"""Added to a group's reward spread: a group whose samples all scored alike gets advantages 0, not NaN."""


def load_policy(weights: str) -> LoadedSource:
    """Read `init.weights`, the model RL starts from (on the CPU, float32).

    Raises:
        ValueError: an unreadable model.
    """
    try:
        return load_source(weights)
    except ValueError as err:
        raise ValueError(f"init.weights (the model grpo improves): {err}") from None


def adopt_policy(cfg: TrainConfig, policy: LoadedSource) -> TrainConfig:
    """The run's config with the starting model's architecture, tokenizer and mel type (its dropout the run's own).

    Raises:
        ValueError: `model.dropout > 0`: a step's log-probability must be the one the loss differentiates, which
            a random dropout mask would change.
    """
    if cfg.model.dropout > 0:
        raise ValueError(
            f"objective=grpo needs model.dropout=0 (got {cfg.model.dropout}): a step's probability must not depend "
            "on a dropout mask"
        )
    model = dataclasses.replace(policy.model, dropout=cfg.model.dropout)
    data = dataclasses.replace(cfg.data, tokenizer=policy.tokenizer, mel_type=policy.mel_type)
    return dataclasses.replace(cfg, model=model, data=data)


def group_advantages(rewards: Tensor, eps: float = ADVANTAGE_EPS) -> Tensor:
    """GRPO's advantages: each reward against its group's mean, in units of the group's spread.

    Args:
        rewards: `[prompts, group]`.
        eps: added to the spread.

    Returns:
        `[prompts, group]`, each row of mean 0.
    """
    mean = rewards.mean(dim=1, keepdim=True)
    spread = rewards.std(dim=1, keepdim=True, unbiased=False)
    return (rewards - mean) / (spread + eps)


def grpo_loss(log_prob: Tensor, advantages: Tensor, kl: Tensor, beta: float) -> Tensor:
    """GRPO's loss for one update per rollout: `mean(-A * exp(logp - sg(logp)) + beta * KL)`.

    The ratio is 1 in value; its gradient is `A * grad logp`, the policy gradient.

    Args:
        log_prob: each sample's step log-probability `[b]`, with gradient.
        advantages: `[b]`.
        kl: each sample's KL to the reference `[b]`, with gradient.
        beta: the KL's weight.

    Returns:
        0-d float32.
    """
    ratio = torch.exp(log_prob - log_prob.detach())
    return (-advantages * ratio + beta * kl).mean()


def flow_terms(
    policy: VelocityField, reference: VelocityField, x1: Tensor, x0: Tensor, t: Tensor, span: Tensor
) -> tuple[Tensor, Tensor]:
    """A take's log-probability as the flow-matching loss measures it, and the distance from the reference.

    The flow-matching loss at a time and a noise is, up to constants, an evidence bound of the take's
    log-probability, with the clean take as its target where a step's log-probability has the next, noisy state:
    the same policy gradient at less variance (Advantage Weighted Matching's analysis).

    Args:
        policy: the velocity field being trained, `(t [b], x) -> v`.
        reference: the starting weights' field (called without gradient).
        x1: the finished takes `[b, n, d]`.
        x0: the noise `[b, n, d]`.
        t: the time of each take `[b]`, in `[0, 1]`.
        span: `[b, n]` bool, the frames that count (the generated ones).

    Returns:
        Each take's `-(flow-matching loss)` and the squared difference of the two fields' velocities, both float32
        `[b]`, per element.
    """
    x = (1 - t[:, None, None]) * x0 + t[:, None, None] * x1
    v = policy(t, x).float()
    with torch.no_grad():
        v_ref = reference(t, x).float()
    return -masked_mean((v - (x1 - x0).float()) ** 2, span), masked_mean((v - v_ref) ** 2, span)


@dataclasses.dataclass(frozen=True)
class Takes:
    """One update's rollouts: `b = prompts * group` takes, each group's together."""

    frame: SamplerFrames
    """The sampler's frame layout of the takes."""
    ids: Tensor
    """Token ids `[b, nt]` (reference text + the prompt's)."""
    states: Tensor
    """The rollout's states `[k + 1, b, n, d]`: the start, then after each step (`likelihood=flow`: the start and the
    last, `[2, b, n, d]`)."""
    terms: Tensor
    """Each take's reward terms `[b, len(Rewards.names)]`, on the CPU."""


class Grpo(nn.Module):
    """The GRPO loss around a network, called as the flow objective is: `(x1, text, lens, generator)`.

    Args:
        transformer: the network being trained.
        reference: the starting weights (a backbone of the same architecture), on the training device.
        synthesizer: lays out prompts and vocodes (around `transformer`).
        rewards: the loaded reward backends.
        settings: the run's `grpo` section.

    Raises:
        ValueError: `grpo.prompts` unreadable, or a prompt too long to be one piece.
    """

    def __init__(
        self, transformer: nn.Module, reference: nn.Module, synthesizer: Synthesizer, rewards: Rewards,
        settings: GrpoConfig,
    ) -> None:  # fmt: skip
        super().__init__()
        if not isinstance(transformer, Backbone) or not isinstance(reference, Backbone):
            raise TypeError("GRPO trains a flow Backbone against a Backbone reference")
        self.transformer = transformer
        self._reference = (reference.eval().requires_grad_(False),)  # a tuple: not a submodule
        self.synthesizer = synthesizer
        self.rewards = rewards
        self.settings = settings
        self.options = settings.sample
        self.grid = sampler_grid(self.options)
        self.pieces = load_prompts(settings.prompts or "", synthesizer, self.options.speed)
        self._data = (CFM(transformer),)  # a tuple: the transformer is a submodule once, as `transformer`
        self._window: list[Tensor] = []

    @property
    def reference(self) -> Backbone:
        """The starting weights."""
        return self._reference[0]

    def forward(self, x1: Tensor, text: Tensor, lens: Tensor, *, generator: torch.Generator) -> Tensor:
        """The loss of one update's rollouts, and of the training batch with `grpo.data_weight > 0`.

        Args:
            x1: the batch's mel `[b, n, d]` (used only with `grpo.data_weight > 0`).
            text: its ids `[b, nt]`.
            lens: its valid frames `[b]`.
            generator: the update's randomness, on the training device.

        Returns:
            The loss, a 0-d float32 tensor.
        """
        s = self.settings
        device = generator.device
        picked = torch.randint(len(self.pieces), (s.prompts_per_update,), generator=generator, device=device)
        takes = self.rollout([self.pieces[i] for i in picked.tolist()], generator)
        frame, ids, states, terms = takes.frame, takes.ids, takes.states, takes.terms
        grid = self.grid.to(device)
        total = self.rewards.total(terms)
        self._window.append(torch.cat((total[:, None], terms), dim=1).mean(dim=0))
        advantages = group_advantages(total.view(s.prompts_per_update, s.group)).view(-1).to(device)
        if s.advantages == "positive":
            advantages = advantages.clamp(min=0.0)
        # The fields embed the text once for all the trained steps (the policy's with gradient, in one graph).
        policy = self._field(self.transformer, frame, ids)
        with torch.no_grad():
            reference = self._field(self.reference, frame, ids)
        span = frame.generated()
        if s.likelihood == "flow":
            done = frame.keep_reference(states[-1])
            losses = [
                self._flow_loss(policy, reference, span, done, advantages, generator) for _ in range(s.train_steps)
            ]
        else:
            losses = [
                self._step_loss(policy, reference, span, states, grid, k, advantages) for k in range(s.train_steps)
            ]
        loss = torch.stack(losses).mean()
        if s.data_weight > 0:
            loss = loss + s.data_weight * self._data[0](x1, text, lens, generator=generator)
        return loss

    @torch.no_grad()
    def rollout(self, prompts: Sequence[Piece], generator: torch.Generator) -> Takes:
        """A group of `grpo.group` takes of each prompt, scored (drawn as `grpo.likelihood` needs: module docstring).

        Args:
            prompts: the prompts, laid out.
            generator: the draws' generator, on the training device.

        Returns:
            The takes, prompt by prompt (`[prompts * group, ...]`, each group's takes together).
        """
        s = self.settings
        pieces = [piece for piece in prompts for _ in range(s.group)]
        cond, ids, durations, ref_lens = self.synthesizer.inputs(pieces)
        frame = sampler_frames(self.transformer, cond, ids, durations, ref_lens)
        # One start per group (as DanceGRPO): the start is no step of the policy, so takes that differ in it would
        # differ in reward by luck no step can be credited with (`scripts/bench_speaks.py --spread` measures how much).
        # With `likelihood=flow` the takes are the ODE's, so each needs a start of its own to differ at all.
        flow = s.likelihood == "flow"
        starts = frame.durations if flow else frame.durations[:: s.group]
        x0 = initial_noise(starts, frame.cond.shape[-1], generator=generator, dtype=cond.dtype)
        x0 = x0.repeat_interleave(1 if flow else s.group, dim=0)
        states = solve_frames(
            self.transformer, frame, ids, x0, self.options, noise_level=0.0 if flow else s.noise_level,
            stochastic_steps=s.train_steps, generator=generator, trajectory=not flow,
        )  # fmt: skip
        states = torch.stack((x0, states)) if flow else states
        with torch.autocast(frame.cond.device.type, enabled=False):  # the vocoder and reward models run as at inference
            waves = self.synthesizer.decode(frame.keep_reference(states[-1]), pieces)
            terms = self.rewards.terms(waves, [p.text for p in pieces], [p.reference.wave for p in pieces])
        return Takes(frame, ids, states, terms)

    def _field(self, model: Backbone, frame: SamplerFrames, ids: Tensor) -> VelocityField:
        """`model`'s velocity as the rollouts step it (the rollout's guidance and CFG-Zero*)."""
        return velocity_field(model, frame.step_cond, ids, frame.mask, self.options.cfg_strength,
                              self.options.cfg_zero_star)  # fmt: skip

    def _step_loss(
        self, policy: VelocityField, reference: VelocityField, span: Tensor, states: Tensor, grid: Tensor, k: int,
        advantages: Tensor,
    ) -> Tensor:  # fmt: skip
        """GRPO's loss on step `k` of the rollout (`states[k]` to `states[k + 1]`), over the generated frames `span`."""
        s = self.settings
        t, dt = grid[k], grid[k + 1] - grid[k]
        x = states[k]
        mean, std = step_mean_std(x, policy(t, x), t, dt, s.noise_level)
        with torch.no_grad():
            mean_ref, _ = step_mean_std(x, reference(t, x), t, dt, s.noise_level)
        log_prob = step_log_prob(states[k + 1], mean, std, span)
        return grpo_loss(log_prob, advantages, step_kl(mean, mean_ref, std, span), s.kl)

    def _flow_loss(
        self, policy: VelocityField, reference: VelocityField, span: Tensor, x1: Tensor, advantages: Tensor,
        generator: torch.Generator,
    ) -> Tensor:  # fmt: skip
        """GRPO's loss with `flow_terms` at one time and noise per group, shared by its takes.

        Shared, the part of the gradient common to a group cancels (its advantages sum to 0), leaving what tells its
        takes apart.
        """
        s = self.settings
        prompts, (_, n, d) = x1.shape[0] // s.group, x1.shape
        t = torch.rand((prompts,), device=x1.device, generator=generator).repeat_interleave(s.group)
        x0 = torch.randn((prompts, n, d), device=x1.device, generator=generator).repeat_interleave(s.group, dim=0)
        log_prob, kl = flow_terms(policy, reference, x1, x0, t, span)
        return grpo_loss(log_prob, advantages, kl, s.kl)

    def take_window(self) -> dict[str, float]:
        """The mean reward and terms of the updates since the last call (the trainer's log), then forget them."""
        window, self._window = self._window, []
        return self.rewards.window(window)


class GrpoObjective(FlowFamily):
    """`objective=grpo` (module docstring).

    Args:
        network: the backbone and its `Grpo`.
        acc: the run's accelerator.
        evaluation: what is measured while training (`flow_evaluation`).
    """

    def __init__(self, network: Network, acc: Accelerator, evaluation: MakeEvaluation) -> None:
        super().__init__(network, acc, evaluation)
        assert isinstance(network.module, Grpo)
        self.grpo = network.module

    def window(self) -> dict[str, float]:
        """The mean reward and its terms (`Grpo.take_window`)."""
        return self.grpo.take_window()


def prepare_grpo(cfg: TrainConfig) -> Prepared:
    """`objective=grpo`'s entry: the starting model's architecture, tokenizer and mel type taken.

    Raises:
        ValueError: an unreadable `init.weights`, or `model.dropout > 0`.
    """
    assert cfg.init.weights is not None  # `objective.NEEDS`
    adopted = adopt_policy(cfg, load_policy(cfg.init.weights))
    return Prepared(adopted, functools.partial(build_grpo, adopted))


def build_grpo(
    cfg: TrainConfig,
    encoder: TextEncoder,
    acc: Accelerator,
    reduce: Callable[[Tensor], Tensor] | None,
    log_dir: Path,
) -> GrpoObjective:
    """`objective=grpo`'s objective (`prepare_grpo` binds the config): its vocoder, rewards, reference and prompts.

    Raises:
        ValueError: the vocoder, a reward backend or the prompts cannot be loaded.
    """
    vocoder = load_run_vocoder(cfg.sample, acc.device)
    rewards = Rewards(cfg.grpo.rewards, cfg.eval, acc.device)

    def make_grpo(backbone: nn.Module) -> Grpo:
        """The loss around the run's network; its reference is a copy of the starting weights (before any resume)."""
        reference = build_backbone_from_config(cfg.model, encoder.num_embeds)
        reference.load_state_dict(backbone.state_dict())
        synthesizer = Synthesizer(backbone, encoder, vocoder, cfg.data.mel_type)
        return Grpo(backbone, reference.to(acc.device), synthesizer, rewards, cfg.grpo)

    network = flow_network(cfg, encoder, acc, make_grpo)
    return GrpoObjective(network, acc, flow_evaluation(cfg, encoder, acc, log_dir, network))


def load_prompts(path: str, synthesizer: Synthesizer, speed: float = 1.0) -> list[Piece]:
    """Read `grpo.prompts` and lay out each row as one piece (reference, text and length as inference does at `speed`).

    Raises:
        ValueError: the file or a reference clip cannot be read, or a row's text would be cut into several pieces.
    """
    try:
        rows = read_testset(path)
    except (ValueError, OSError) as err:
        raise ValueError(f"grpo.prompts: {err}") from None
    pieces = []
    for row in rows:
        try:
            plan = synthesizer.plan(synthesizer.reference(str(row.ref_audio), row.ref_text), row.gen_text, speed)
        except (ValueError, OSError) as err:
            raise ValueError(f"grpo.prompts row {row.id}: {err}") from None
        if len(plan.pieces) != 1:
            raise ValueError(f"grpo.prompts row {row.id}: gen_text is too long to be said in one piece; shorten it")
        pieces.append(plan.pieces[0])
    if not pieces:
        raise ValueError(f"grpo.prompts: {path} has no rows")
    return pieces
