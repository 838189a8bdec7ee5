"""RL of the duration predictor (`objective=duration_grpo`): the length it picks, rewarded by what is said in it.

DMOSpeech 2's idea on f5lite's parts: the flow model is left as it is and only the predictor learns, from the word
error and voice of the speech its lengths give. The predictor is made a policy over each prompt's length: the log of
the generated frames is drawn from a Gaussian around its estimate (`log_lengths`: the reference's frames at the
reference's rate, as `f5lite.sampling.predicted_duration` sizes speech at inference) with a fixed spread
`duration.spread`. A Gaussian over one number has an exact log-probability and an exact KL divergence, so nothing
here is an estimate.

One update, on each rank (the training loop keeps checkpoints, exact resume and the export, as for
`objective=duration`, `f5lite.train.duration.alone`):
1. Draw `grpo.prompts_per_update` prompts of `grpo.prompts` with the update's generator, laid out as inference does.
2. Draw `grpo.group` lengths per prompt; the frozen flow model of `init.weights` speaks each, from one start (noise)
   per group, with the inference sampler (`grpo.sample.*`),
   so a group's takes differ only by their length.
3. Vocode and score the takes (`grpo.rewards`); each take's advantage is its reward against its group's
   (`group_advantages`; `grpo.advantages=positive` keeps only those above 0).
4. GRPO's loss on each length's log-probability, plus `grpo.kl` times the KL divergence from the starting predictor
   (`duration.init`), for two Gaussians of one spread `(mu - mu_ref)^2 / (2 spread^2)`.

`grpo.likelihood`, `grpo.train_steps`, `grpo.noise_level` and `grpo.data_weight` are the flow model's and are not
read here. The flow model's takes are drawn without gradient; only the predictor's two passes (reference
transcript, prompt text) are differentiated.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from accelerate import Accelerator
from torch import Tensor, nn

from f5lite.audio import Vocoder
from f5lite.audio.mel import samples_for_frames
from f5lite.config import TrainConfig
from f5lite.config.grpo import GrpoConfig
from f5lite.data.collate import Batch
from f5lite.infer.plan import WINDOW_FRAMES, Piece
from f5lite.infer.synthesizer import Synthesizer
from f5lite.models.duration import DurationPredictor
from f5lite.sampling import effective_durations
from f5lite.sampling.sampler import initial_noise
from f5lite.text import TextEncoder
from f5lite.text.vocab import vocab_hash
from f5lite.train.duration.predictor import (
    PredictorObjective,
    predictor_evaluation,
    predictor_network,
    start_predictor,
)
from f5lite.train.duration.training import load_start
from f5lite.train.evaluation import load_run_vocoder
from f5lite.train.grpo import group_advantages, grpo_loss, load_prompts
from f5lite.train.objective import MakeEvaluation, Network, Prepared
from f5lite.train.rewards import Rewards


def log_lengths(predictor: DurationPredictor, encoder: TextEncoder, pieces: Sequence[Piece]) -> Tensor:
    """The log of the generated frames the predictor gives each piece (its mean length at inference, unrounded).

    Args:
        predictor: the predictor.
        encoder: its text encoder.
        pieces: the prompts, laid out.

    Returns:
        `[len(pieces)]` float32: `log(ref_frames) + log_frames(text) - log_frames(reference transcript)`.
    """
    device = next(predictor.parameters()).device
    # Stripped, as `DurationEstimator` does: the predictor learned from transcripts, not sentence-ended references.
    texts = [t for piece in pieces for t in (piece.reference.text.strip(), piece.text.strip())]
    log_frames = predictor(encoder.encode(texts).ids.to(device)).view(-1, 2)
    ref_frames = torch.tensor([float(piece.reference.mel.shape[0]) for piece in pieces], device=device)
    return ref_frames.log() + log_frames[:, 1] - log_frames[:, 0]


class DurationGrpo(nn.Module):
    """The GRPO loss of a duration predictor (module docstring), called with the update's generator.

    Args:
        predictor: the predictor being trained (its starting weights loaded).
        reference: the starting predictor, frozen, which the KL term holds the policy near.
        encoder: the text encoder of both predictors' ids.
        synthesizer: the frozen flow model that speaks, and its vocoder.
        rewards: the loaded reward backends.
        settings: the run's `grpo` section.
        spread: `duration.spread`, the standard deviation of the log-length drawn around the predictor's estimate.

    Raises:
        ValueError: `grpo.prompts` cannot be laid out.
    """

    def __init__(
        self, predictor: DurationPredictor, reference: DurationPredictor, encoder: TextEncoder,
        synthesizer: Synthesizer, rewards: Rewards, settings: GrpoConfig, spread: float,
    ) -> None:  # fmt: skip
        super().__init__()
        self.predictor = predictor
        self._reference = (reference,)  # a tuple: not a submodule (frozen, in no optimizer or all-reduce)
        self.encoder = encoder
        self.synthesizer = synthesizer
        self.rewards = rewards
        self.settings = settings
        self.spread = spread
        self.options = settings.sample
        self.pieces = load_prompts(settings.prompts or "", synthesizer, self.options.speed)
        self._window: list[Tensor] = []

    @property
    def reference(self) -> DurationPredictor:
        """The starting predictor."""
        return self._reference[0]

    def forward(self, generator: torch.Generator) -> Tensor:
        """Roll out one update's groups; their loss.

        The whole update runs in float32, whatever `perf.precision` says: the predictor's log of a sum over tokens,
        and the flow model's takes, which are scored as inference makes them.

        Args:
            generator: the update's randomness, on the predictor's device.

        Returns:
            The loss, a 0-d float32 tensor.
        """
        with torch.autocast(generator.device.type, enabled=False):
            return self._loss(generator)

    def _loss(self, generator: torch.Generator) -> Tensor:
        s = self.settings
        device = generator.device
        picked = torch.randint(len(self.pieces), (s.prompts_per_update,), generator=generator, device=device)
        prompts = [self.pieces[i] for i in picked.tolist()]
        mean = log_lengths(self.predictor, self.encoder, prompts)
        with torch.no_grad():
            mean_ref = log_lengths(self.reference, self.encoder, prompts)
        noise = torch.randn((len(prompts), s.group), device=device, generator=generator)
        drawn = mean.detach()[:, None] + self.spread * noise
        terms = self.rollout(prompts, drawn, generator)
        total = self.rewards.total(terms)
        shift = (mean - mean_ref).detach().mean().cpu()
        self._window.append(torch.cat((torch.cat((total[:, None], terms), dim=1).mean(dim=0), shift[None])))
        advantages = group_advantages(total.view(len(prompts), s.group)).view(-1).to(device)
        if s.advantages == "positive":
            advantages = advantages.clamp(min=0.0)
        variance = self.spread**2
        log_prob = (-((drawn - mean[:, None]) ** 2) / (2 * variance)).view(-1)
        kl = ((mean - mean_ref) ** 2 / (2 * variance)).repeat_interleave(s.group)
        return grpo_loss(log_prob, advantages, kl, s.kl)

    def rollout(self, prompts: Sequence[Piece], drawn: Tensor, generator: torch.Generator) -> Tensor:
        """Speak each prompt at each of its drawn lengths and score the takes.

        Args:
            prompts: the prompts, laid out.
            drawn: the log generated frames of each take `[prompts, group]`.
            generator: the starts' generator, on the training device.

        Returns:
            Each take's reward terms `[prompts * group, len(Rewards.names)]`, on the CPU, each group's together.
        """
        synth = self.synthesizer
        pieces = [
            self._sized(piece, float(log_frames))
            for piece, row in zip(prompts, drawn, strict=True)
            for log_frames in row
        ]
        _, ids, durations, lens = synth.inputs(pieces)
        frames = effective_durations(durations, ids, lens)
        # One start per group, drawn as the sampler draws its noise: a group's takes then differ by their length
        # alone (as the flow model's GRPO does); the longest take's frames of it are every take's.
        longest = frames.view(len(prompts), -1).max(dim=1).values
        starts = initial_noise(longest, pieces[0].reference.mel.shape[1], generator=generator)
        waves = synth.generate(pieces, self.options, noise=starts.repeat_interleave(drawn.shape[1], 0))
        return self.rewards.terms(waves, [p.text for p in pieces], [p.reference.wave for p in pieces])

    def _sized(self, piece: Piece, log_frames: float) -> Piece:
        """`piece` to be spoken in `exp(log_frames)` generated frames, within the bounds inference plans with.

        At least one frame and the model's lower bound, then at most the window (`WINDOW_FRAMES`): the prompt's plan
        left its lower bound within it. A draw past the window is spoken at the window (the take's log-probability is still the draw's, as an action
        clipped to its range is in RL); it is capped before `exp`, which a policy gone far would overflow.
        """
        ref = piece.reference.mel.shape[0]
        total = ref + max(1, round(math.exp(min(log_frames, math.log(WINDOW_FRAMES)))))
        ids = self.synthesizer.encoder.encode([piece.reference.text + piece.text]).ids
        total = min(int(effective_durations(torch.tensor([total]), ids, torch.tensor([ref]))[0]), WINDOW_FRAMES)
        return dataclasses.replace(
            piece, frames=total, samples=samples_for_frames(total - ref, self.synthesizer.mel_type)
        )

    def take_window(self) -> dict[str, float]:
        """The means of the updates since the last call (the run's log), then forget them.

        `reward`, its terms, and `length_shift`: the policy's mean log-length less the starting predictor's (+0.05 is
        speech about 5 % longer).
        """
        window, self._window = self._window, []
        return self.rewards.window(window, "length_shift")


def load_speaker(weights: str, vocoder: Vocoder, encoder: TextEncoder, device: torch.device) -> Synthesizer:
    """The flow model that speaks the rollouts (`init.weights`), frozen, in float32, with the run's vocoder.

    Args:
        weights: `init.weights`.
        vocoder: the run's vocoder (`sample.vocoder`).
        encoder: the run's text encoder (its data's vocab, which must be the model's).
        device: the training device.

    Raises:
        ValueError: the model cannot be loaded, or it reads other text ids than the data (one line).
    """
    try:
        synth = Synthesizer.from_pretrained(
            weights,
            vocoder,
            device=device,
            dtype="fp32",
            compile=False,
            duration="rule",
            threads=torch.get_num_threads() if device.type == "cpu" else None,
        )  # fmt: skip  (the run's threads are left as they are)
    except (ValueError, OSError) as err:
        raise ValueError(f"init.weights: {err}") from None
    synth.backbone.eval().requires_grad_(False)
    if synth.encoder.tokenizer != encoder.tokenizer or vocab_hash(synth.encoder.vocab) != vocab_hash(encoder.vocab):
        raise ValueError(
            f"init.weights ({weights}) reads other text ids than data.dir: give the data and data.tokenizer "
            "it was trained with"
        )
    return synth


class DurationGrpoObjective(PredictorObjective):
    """`objective=duration_grpo` (module docstring): the training batches are not read, the prompts are.

    Args:
        network: the predictor, its loss module a `DurationGrpo`.
        acc: the run's accelerator.
        evaluation: what is measured while training (`predictor_evaluation`).
    """

    def __init__(self, network: Network, acc: Accelerator, evaluation: MakeEvaluation) -> None:
        super().__init__(network, acc, evaluation)
        assert isinstance(network.module, DurationGrpo)
        self.grpo = network.module

    def backward(self, model: nn.Module, batch: Batch, generator: torch.Generator, count: int) -> Tensor:
        """See `Objective.backward`: one update's rollouts, drawn with the update's generator."""
        loss = model(generator)
        self.acc.backward(loss / count)
        return loss.detach()

    def window(self) -> dict[str, float]:
        """The mean rewards, their terms and `length_shift` (`DurationGrpo.take_window`)."""
        return self.grpo.take_window()


def build_duration_grpo(
    cfg: TrainConfig,
    encoder: TextEncoder,
    acc: Accelerator,
    reduce: Callable[[Tensor], Tensor] | None,
    log_dir: Path,
) -> DurationGrpoObjective:
    """`objective=duration_grpo`'s objective (`prepare_duration_grpo` binds the config).

    The predictor starts from `duration.init`, which the KL term holds; the flow model that speaks is `init.weights`.

    Raises:
        ValueError: `duration.init`, `init.weights`, the vocoder, a reward backend or the prompts cannot be used (one
            line).
    """
    assert cfg.duration.init is not None and cfg.init.weights is not None  # `objective.NEEDS`
    reference = load_start(cfg.duration.init, encoder, acc.device)
    predictor = start_predictor(cfg.duration, cfg.seed, encoder, acc.device, start=reference)
    speaker = load_speaker(cfg.init.weights, load_run_vocoder(cfg.sample, acc.device), encoder, acc.device)
    rewards = Rewards(cfg.grpo.rewards, cfg.eval, acc.device)
    module = DurationGrpo(predictor, reference, encoder, speaker, rewards, cfg.grpo, cfg.duration.spread)
    network = predictor_network(cfg.duration, cfg.optim, predictor, module)
    return DurationGrpoObjective(network, acc, predictor_evaluation(cfg.data, cfg.eval, predictor, encoder))


def prepare_duration_grpo(cfg: TrainConfig) -> Prepared:
    """`objective=duration_grpo`'s entry: batches without audio (they are not read; the prompts are)."""
    return Prepared(cfg, functools.partial(build_duration_grpo, cfg), reads_audio=False)
