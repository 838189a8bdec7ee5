"""The schema of a whole training run, `TrainConfig`: every default lives in its sections, YAML files only compose.

Sections, each in a module of this package: `model` (`f5lite.config.model`), `data`, `optim`, `perf`, `ema`, `ckpt`,
`sample`, `logger`, `eval` (`evaluation`), `init` and `finetune` (`finetune`), `duration`, `distill`, `grpo`. Each
dataclass validates itself in `__post_init__`, which OmegaConf runs when the composed config is turned into objects
(`f5lite.config.compose_config`), so a bad value fails before any work starts, with a `ValueError` naming the key;
`TrainConfig` then checks what spans sections.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter

from omegaconf import MISSING

from f5lite.config.checks import check_choice
from f5lite.config.ckpt import PROMPT_PREFIX, CkptConfig
from f5lite.config.data import DataConfig
from f5lite.config.distill import DistillConfig
from f5lite.config.duration import DurationConfig
from f5lite.config.ema import EMAConfig
from f5lite.config.evaluation import TrainEvalConfig
from f5lite.config.finetune import FinetuneConfig, InitConfig
from f5lite.config.grpo import GrpoConfig
from f5lite.config.logger import LoggerConfig
from f5lite.config.model import ModelConfig
from f5lite.config.objective import OBJECTIVES, READERS, check_readers
from f5lite.config.optim import OptimConfig
from f5lite.config.perf import PerfConfig
from f5lite.config.sample import SampleConfig
from f5lite.metrics.items import METRIC_KEYS


@dataclass
class TrainConfig:
    """A whole training run. Composed by Hydra from `configs/train.yaml`, a recipe, and command-line overrides."""

    objective: str = "flow"
    """How the run trains (`f5lite.config.objective`): `flow` (flow matching; fine-tuning and LoRA from
    `init.weights`), `distill` (a few-step student of `distill.teacher`), `grpo` (RL of `init.weights` on
    `grpo.prompts`), `duration` (the duration predictor alone), `duration_grpo` (the predictor by RL). Recipes set
    it."""
    model: ModelConfig = MISSING
    """Backbone architecture; the `model` group picks the family."""
    data: DataConfig = field(default_factory=DataConfig)
    """Training data and batching."""
    optim: OptimConfig = field(default_factory=OptimConfig)
    """Optimizer and learning-rate schedule."""
    perf: PerfConfig = field(default_factory=PerfConfig)
    """Speed and memory optimizations."""
    ema: EMAConfig = field(default_factory=EMAConfig)
    """Weight averaging."""
    ckpt: CkptConfig = field(default_factory=CkptConfig)
    """Checkpointing and export."""
    sample: SampleConfig = field(default_factory=SampleConfig)
    """Sampler settings."""
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    """Metrics logging."""
    eval: TrainEvalConfig = field(default_factory=TrainEvalConfig)
    """Evaluation while training and checkpoint selection."""
    init: InitConfig = field(default_factory=InitConfig)
    """Pretrained weights to start from."""
    finetune: FinetuneConfig = field(default_factory=FinetuneConfig)
    """Fine-tuning options (LoRA)."""
    duration: DurationConfig = field(default_factory=DurationConfig)
    """The duration predictor; the `duration` group picks one (`none` by default)."""
    distill: DistillConfig = field(default_factory=DistillConfig)
    """Few-step distillation from a teacher (`objective=distill`)."""
    grpo: GrpoConfig = field(default_factory=GrpoConfig)
    """Online RL with speech rewards (`objective=grpo` and `duration_grpo`)."""
    run_name: str = "f5lite"
    """Name of the run; recipes set it."""
    run_dir: str = "runs/${run_name}"
    """Run directory. Deterministic (no timestamp), so running the same command again resumes the run."""
    seed: int = 666
    """Seed for weights init, data order and the training objective's randomness."""

    def __post_init__(self) -> None:
        if not self.run_name:
            raise ValueError("run_name='' is not valid; give the run a name")
        if not self.run_dir:
            raise ValueError("run_dir='' is not valid; give a directory")
        self._check_evaluation()
        check_choice("objective", self.objective, OBJECTIVES)
        check_readers(self.objective, *_objective_settings(self))
        if self.finetune.lora.rank and self.init.weights is None:
            raise ValueError("finetune.lora.rank is set but init.weights is not: LoRA adapts pretrained weights")
        if self.perf.memory_budget < 1.0 and self.model is not MISSING and self.model.dropout > 0:
            # The budget partitioner may recompute dropout with another mask: silently wrong gradients
            # (pytorch/pytorch#190758, reproduced on torch 2.14.1; tests/models/test_compile.py pins it).
            raise ValueError(
                f"perf.memory_budget={self.perf.memory_budget} with model.dropout={self.model.dropout} gives wrong "
                "gradients (pytorch/pytorch#190758); set model.dropout=0 or perf.memory_budget=1.0"
            )

        if self.perf.pack and self.model is not MISSING:
            self._check_packing()

    def _check_packing(self) -> None:
        """`perf.pack` is a DiT's, and changes nothing it computes only when padded keys are masked already."""
        if self.model.backbone != "dit":
            raise ValueError(f"perf.pack=true packs DiT backbones only; model.backbone={self.model.backbone!r}")
        if not self.model.attn_mask_enabled:
            raise ValueError(
                "perf.pack=true needs model.attn_mask_enabled=true: packed attention never sees padding, which "
                "this model's padded attention does (as F5-TTS's); set model.attn_mask_enabled=true too"
            )

    def _check_prompt_metric(self, key: str) -> None:
        """A `prompts/<key>` best metric must be a key that `eval.metrics` gives in `eval.language`."""
        ev = self.eval
        by = [name for name in ev.metrics if key in METRIC_KEYS[name]]
        error_rate = {"en": "wer", "zh": "cer"}[ev.language]
        if not by or (key in ("wer", "cer") and key != error_rate):
            given = sorted(
                k for name in ev.metrics for k in METRIC_KEYS[name] if k not in {"wer", "cer"} - {error_rate}
            )
            raise ValueError(
                f"ckpt.best_metric=prompts/{key} is not given by eval.metrics={list(ev.metrics)} with "
                f"eval.language={ev.language}; it gives: {', '.join(PROMPT_PREFIX + k for k in given) or 'nothing'}"
            )

    def _check_evaluation(self) -> None:
        """Checkpoint selection needs each checkpoint's own evaluation, and an evaluation that measures its metric."""
        ev, ckpt = self.eval, self.ckpt
        if not (ckpt.keep_best or ev.patience):
            return
        metric = ckpt.best_metric
        if metric.startswith(PROMPT_PREFIX):
            every, key, why = ev.sample_every, "eval.sample_every", "the prompts are spoken"
        else:
            every, key, why = ev.every, "eval.every", "the validation loss is computed"
        if not every:
            raise ValueError(f"ckpt.best_metric={metric} is never measured: {key}=0 ({why} every {key} updates)")
        if metric.startswith(PROMPT_PREFIX):
            self._check_prompt_metric(metric.removeprefix(PROMPT_PREFIX))
        if metric == "val/loss_online" and not ev.online:
            raise ValueError("ckpt.best_metric=val/loss_online needs eval.online=true")
        if ckpt.keep_best and ckpt.every % every:
            raise ValueError(
                f"ckpt.keep_best needs {key}={every} to divide ckpt.every={ckpt.every}, so that every checkpoint "
                f"has its own {metric}"
            )


def _objective_settings(cfg: TrainConfig) -> tuple[dict[str, object], dict[str, object]]:
    """The values and the defaults of the settings `check_readers` reads, by dotted key."""
    fresh = {"distill": DistillConfig(), "duration": DurationConfig(), "finetune": FinetuneConfig(),
             "grpo": GrpoConfig()}  # fmt: skip
    values = {key: attrgetter(key)(cfg) for key in READERS}
    defaults = {key: attrgetter(key.partition(".")[2])(fresh[key.partition(".")[0]]) for key in READERS}
    return values, defaults
