"""The `grpo` section of a training run: online RL with speech rewards (`objective=grpo` and `duration_grpo`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from f5lite.config.checks import check_at_least, check_choice, check_range
from f5lite.sampling.options import SamplerOptions

REWARD_NAMES = ("wer", "sim", "mos")
"""The rewards `grpo.rewards` can weigh: each is a `f5lite.metrics` metric, scored with the `eval.*` backends."""
LIKELIHOODS = ("sde", "flow")
"""The ways `grpo.likelihood` can measure a take's log-probability (`f5lite.train.grpo`)."""
ADVANTAGE_SIGNS = ("signed", "positive")
"""The takes `grpo.advantages` lets move the model (`f5lite.train.grpo`)."""


@dataclass
class GrpoConfig:
    """Online RL of a trained model for what listeners hear (`f5lite.train.grpo`): GRPO on the sampler made an SDE.

    For each prompt a group of samples is drawn from the model, each is scored with the rewards, and the model is moved
    towards the samples that scored above their group's mean, held near its starting weights by a KL term.
    """

    prompts: str | None = None
    """`objective=grpo`'s (and `duration_grpo`'s) prompts: a test-set file (`id|ref_audio|ref_text|gen_text[|gt_audio]`, as `eval.prompts`)
    of training material, never the held-out rows. Needs `init.weights` (the model to improve), whose architecture,
    tokenizer and mel type the run takes."""
    group: int = 8
    """Samples per prompt (GRPO's group): the advantages are each sample's reward against its group's."""
    prompts_per_update: int = 1
    """Prompts each rank draws per update (each with its own group)."""
    sample: SamplerOptions = field(default_factory=lambda: SamplerOptions(steps=10, cfg_strength=0.0))
    """The rollouts' sampler settings (`grpo.sample.steps`, `.method`, `.schedule`, `.sway`, `.cfg_strength`,
    `.cfg_zero_init_steps`, `.cfg_zero_star`, `.speed`: each as `sample.*`): a take is what `sample` gives users with
    them, its first `train_steps` steps made stochastic (`likelihood=sde`). Guidance is off by default
    (FlowTTS-GRPO: the conditional velocity is the policy, at half the passes); a strength > 0 makes the guided
    velocity the policy."""
    likelihood: str = "sde"
    """How a take's probability under the model is measured (`f5lite.train.grpo`): `sde`, the exact densities of
    the rollout's stochastic steps (Flow-GRPO); `flow`, the flow-matching loss of the finished take (its evidence
    bound; Advantage Weighted Matching), the takes drawn by the ODE from a start each."""
    train_steps: int = 2
    """What the loss is computed on, each costing a forward and backward pass of the whole group. `sde`: the
    rollout's first steps, the only stochastic ones (the rest are the ODE's); a group's takes share their start, so
    they differ only by these steps' draws, which the gradient can credit (Flow-GRPO-Fast, MixGRPO). `flow`: the
    draws of a time and a noise per group at which the takes' flow-matching losses are taken."""
    noise_level: float = 0.7
    """`a` of the SDE's noise scale `a (1 - t)` (`f5lite.sampling.sde`): how far the group's samples spread
    (`likelihood=sde` only)."""
    kl: float = 0.04
    """Weight of the term that holds the model near its starting weights, per element: the KL divergence of a step
    from the starting weights' (`sde`, Flow-GRPO's beta), or the squared difference of their velocities (`flow`)."""
    advantages: str = "signed"
    """Which takes move the model: `signed` (GRPO's: towards each take above its group's mean, away from each below),
    or `positive` (towards the takes above, each by its advantage, the others not at all: reward-weighted regression on
    the model's own better takes; with `likelihood=flow` its loss is bounded below, where pushing away is not)."""
    data_weight: float = 0.0
    """Weight of the flow objective on the run's training batches, added to the RL loss (InstructGPT's PPO-ptx): it
    holds the model to the data as `grpo.kl` holds it to the starting weights. 0: the batches are not used."""
    rewards: dict[str, float] = field(default_factory=lambda: {"wer": 1.0, "sim": 1.0})
    """Weight of each reward (`wer`, `sim`, `mos`); the reward is their weighted sum, each term higher = better:
    `wer` counts as `-min(WER, 1)` (CER for `eval.language=zh`), `sim` as the speaker cosine to the prompt's voice,
    `mos` as the predicted MOS. Backends: `eval.asr`, `eval.speaker`, `eval.mos`, all offline by default."""

    def __post_init__(self) -> None:
        check_at_least("grpo.group", self.group, 2)
        check_at_least("grpo.prompts_per_update", self.prompts_per_update, 1)
        check_choice("grpo.likelihood", self.likelihood, LIKELIHOODS)
        check_range("grpo.train_steps", self.train_steps, 1, self.sample.steps - self.sample.cfg_zero_init_steps)
        check_range("grpo.noise_level", self.noise_level, 1e-3, 10.0)
        check_at_least("grpo.kl", self.kl, 0.0)
        check_choice("grpo.advantages", self.advantages, ADVANTAGE_SIGNS)
        check_at_least("grpo.data_weight", self.data_weight, 0.0)
        for name, weight in self.rewards.items():
            check_choice("grpo.rewards", name, REWARD_NAMES)
            check_at_least(f"grpo.rewards.{name}", weight, 0.0)
        if not any(self.rewards.values()):
            raise ValueError(f"grpo.rewards={dict(self.rewards)} weighs nothing; give a weight > 0, e.g. {{wer: 1.0}}")
