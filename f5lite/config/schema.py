"""Typed schemas for a training run: every default lives here, YAML files only compose and override.

Sections: `model` (see `f5lite.config.model`), `data`, `optim`, `perf`, `ema`, `ckpt`, `sample`, `logger`, `eval`,
`init`, `finetune`, `duration`. Each dataclass validates itself in `__post_init__`, which OmegaConf runs when the
composed config is turned into objects (`f5lite.config.compose_config`), so a bad value fails before any work starts,
with a `ValueError` naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from operator import attrgetter

from omegaconf import MISSING

from f5lite.audio.mel import MEL_KINDS
from f5lite.audio.vocoder import DEFAULT_VOCOS_REPO, VOCODER_NAMES
from f5lite.config.checks import check_at_least, check_choice, check_range
from f5lite.config.model import ModelConfig
from f5lite.config.objective import OBJECTIVES, READERS, REMOVED, check_readers
from f5lite.metrics.items import LANGUAGES, METRIC_KEYS, METRIC_NAMES
from f5lite.models.ac import AC_MODES
from f5lite.models.attention import SDPA_BACKENDS
from f5lite.models.compile import COMPILE_MODES, COMPILE_SCOPES
from f5lite.models.dropout import DROPOUT_KERNELS
from f5lite.models.dtypes import WEIGHT_DTYPES
from f5lite.sampling.options import SamplerOptions
from f5lite.text.tokenizers import check_tokenizer_name

# Choices whose meaning lives in the trainer (which imports this module); every other list is imported from the
# module that implements the choice.
PRECISION_AUTO = "auto"
"""The `perf.precision` value the trainer resolves at start: bf16 where the device computes it natively, else `no`."""
PRECISIONS = (PRECISION_AUTO, "no", "bf16", "fp16")
"""`perf.precision`: `auto`, or one of accelerate's mixed-precision names (`no` is float32)."""
EMA_DEVICES = ("same", "cpu")
"""`ema.device`."""
LOGGERS = ("none", "tensorboard", "wandb")
"""`logger.backend`."""
DURATION_TRAINING = ("none", "alongside")
"""`duration.train`."""
LORA_EXPORTS = ("merged", "adapter")
"""`finetune.lora.export`."""
BEST_VAL_METRICS = ("val/loss", "val/loss_online")
"""`ckpt.best_metric` values measured by the validation loss."""
PROMPT_PREFIX = "prompts/"
"""Prefix of `ckpt.best_metric` values measured on the fixed prompts (`prompts/wer`, ...)."""


@dataclass
class SourceConfig:
    """One source of a weighted mixture (`data.sources`)."""

    dir: str = MISSING
    """A data source, as `data.dir` takes it."""
    weight: float = 1.0
    """Relative share of this source's utterances in the batches."""

    def __post_init__(self) -> None:
        if not self.weight > 0:
            raise ValueError(f"data.sources[].weight={self.weight!r} is not valid; it must be > 0")


@dataclass
class DataConfig:
    """Where the training data is and how it is batched."""

    dir: str | None = None
    """The training data: a directory made by `f5lite-prepare` (cuts.jsonl.gz, vocab.txt), a Shar directory
    (`f5lite-prepare --shar`), a Lhotse CutSet file (`*.jsonl.gz`, e.g. from `lhotse prepare`), an earlier f5lite
    directory (manifest.jsonl), or an F5-TTS prepared directory (raw.arrow; needs the `f5tts` extra). Relative to the
    launch directory. `${f5lite.demo_dir:}` is the shipped demo dataset. Give this or `sources`."""
    sources: list[SourceConfig] = field(default_factory=list)
    """A weighted mixture instead of `dir`, e.g. a new language with 20 % of the base one replayed:
    `[{dir: data/new, weight: 0.8}, {dir: data/base, weight: 0.2}]`. An epoch ends when a source runs out."""
    vocab: str | None = None
    """The run's `vocab.txt`; default: the one next to `dir` (or the first source). Ids stored at preparation are
    used when this vocab extends the data's own; other data is tokenized while loading."""
    tokenizer: str = "char"
    """Text tokenizer: `char`, `pinyin` (F5-TTS's released models; needs the `zh` extra), `byte`, or `ipa`: IPA
    phonemes from espeak-ng (needs the `ipa` extra and espeak-ng), English (en-us) as `ipa`, any other language
    espeak-ng speaks as `ipa:<its code>` (`ipa:de`, `ipa:es`, `ipa:en-gb`; `espeak-ng --voices` lists them)."""
    mel_type: str = "vocos"
    """Mel front end: `vocos` (every released F5-TTS model) or `bigvgan`."""
    frames_per_gpu: int = 38400
    """Frame budget of one batch on one GPU (38400 frames ~ 410 s of audio at 24 kHz, hop 256)."""
    max_samples: int = 64
    """Most utterances in one batch, whatever the frame budget."""
    window: int = 10000
    """Cuts the batching sorts by length and packs together, read lazily from the shuffled stream (a shuffle buffer
    of the same size runs ahead, so about twice this many cuts are in memory, never the whole set): larger, less
    padding. A small one (a couple of batches' worth) gives batches of mixed lengths."""
    fill_efficiency: float = 0.99
    """A batch that the frame budget has filled takes a shorter utterance into its leftover budget only while its
    padding efficiency (real frames / batch size x longest utterance) stays at least this: fewer, fuller batches
    for a little padding; 1 pads nothing for it."""
    quadratic_duration: float | None = None
    """Make the budget grow faster than length, as attention's cost does (as Lhotse's `quadratic_duration`, in
    seconds: an utterance of this length counts double), so that batches of long clips fit memory; null: linear."""
    num_workers: int = 4
    """DataLoader worker processes."""
    pad_multiple: int = 1
    """Pad each batch's mel and text lengths up to a multiple of this, so compiled code sees few distinct shapes
    (the frame budget counts the padding); 1 pads only to the longest item."""
    max_skip_ratio: float = 0.05
    """Stop training when more than this share of utterance reads fails (files that broke after `f5lite-prepare`
    checked them); each failure is logged and replaced by the nearest-length utterance. 0 stops at the first."""

    def __post_init__(self) -> None:
        if self.dir is not None and self.sources:
            raise ValueError("data.dir and data.sources are both set; give one of them")
        check_tokenizer_name(self.tokenizer, "data.tokenizer")
        check_choice("data.mel_type", self.mel_type, MEL_KINDS)
        check_at_least("data.frames_per_gpu", self.frames_per_gpu, 1)
        check_at_least("data.max_samples", self.max_samples, 1)
        check_at_least("data.window", self.window, 1)
        if not 0 < self.fill_efficiency <= 1:
            raise ValueError(f"data.fill_efficiency={self.fill_efficiency!r} is not valid; it must be in (0, 1]")
        if self.quadratic_duration is not None and not self.quadratic_duration > 0:
            raise ValueError(f"data.quadratic_duration={self.quadratic_duration!r} is not valid; it must be > 0")
        check_at_least("data.num_workers", self.num_workers, 0)
        check_at_least("data.pad_multiple", self.pad_multiple, 1)
        check_range("data.max_skip_ratio", self.max_skip_ratio, 0.0, 1.0)


@dataclass
class OptimConfig:
    """AdamW with linear warm-up then linear decay, counted in optimizer updates."""

    lr: float = 7.5e-5
    """Peak learning rate."""
    betas: list[float] = field(default_factory=lambda: [0.9, 0.999])
    """AdamW betas."""
    weight_decay: float = 0.01
    """AdamW decoupled weight decay."""
    eps: float = 1e-8
    """AdamW epsilon."""
    warmup_updates: int = 20000
    """Optimizer updates of linear warm-up (whatever the number of processes)."""
    max_updates: int = 1_250_000
    """Optimizer updates of the whole run (F5-TTS v1 Base was released at 1.25M)."""
    grad_accum: int = 1
    """Batches accumulated per optimizer update."""
    max_grad_norm: float = 1.0
    """Gradient clipping norm; 0 turns clipping off."""
    max_bad_updates: int = 5
    """Stop the run after this many updates in a row with a non-finite loss or gradient (each one is skipped:
    no optimizer, schedule or EMA step). Checked when metrics are fetched, every `logger.every` updates."""

    def __post_init__(self) -> None:
        if not self.lr > 0:
            raise ValueError(f"optim.lr={self.lr!r} is not valid; it must be > 0")
        if len(self.betas) != 2 or not all(0.0 <= b < 1.0 for b in self.betas):
            raise ValueError(f"optim.betas={list(self.betas)!r} is not valid; it must be two numbers in [0, 1)")
        check_at_least("optim.weight_decay", self.weight_decay, 0.0)
        if not self.eps > 0:
            raise ValueError(f"optim.eps={self.eps!r} is not valid; it must be > 0")
        check_at_least("optim.warmup_updates", self.warmup_updates, 0)
        check_at_least("optim.max_updates", self.max_updates, 1)
        check_at_least("optim.grad_accum", self.grad_accum, 1)
        check_at_least("optim.max_grad_norm", self.max_grad_norm, 0.0)
        check_at_least("optim.max_bad_updates", self.max_bad_updates, 1)


@dataclass
class ACConfig:
    """Activation checkpointing of the backbone's blocks."""

    mode: str = "none"
    """`none`; `full`: recompute whole blocks (every `every_n`-th one); `selective`: op-level, keeps matmul and
    attention outputs and recomputes the cheap ops."""
    every_n: int = 1
    """With `mode=full`, checkpoint blocks 0, n, 2n, ... (1 = every block)."""

    def __post_init__(self) -> None:
        check_choice("perf.ac.mode", self.mode, AC_MODES)
        check_at_least("perf.ac.every_n", self.every_n, 1)


@dataclass
class PerfConfig:
    """Speed and memory optimizations, applied from outside the model; each one switchable from the command line."""

    precision: str = PRECISION_AUTO
    """Mixed precision: `auto`, `no` (fp32), `bf16`, or `fp16` (the only one that uses a gradient scaler). `auto` is
    resolved once, when the trainer starts, and logged in one line: `bf16` on a CUDA GPU that supports it and on a
    CPU that computes bf16 natively (AVX-512 BF16 or AMX, and no `ONEDNN_MAX_CPU_ISA` below it; ARM BF16), `no`
    elsewhere, where bf16 would be emulated (on an AVX2 CPU 5 to 10x slower than fp32 per update). A training run's
    directory records the resolved value. An explicit `bf16` on a CPU that emulates it runs, with a one-line warning."""
    compile: bool = False
    """Compile each backbone block in place with torch.compile (no `_orig_mod.` keys)."""
    compile_mode: str = "default"
    """torch.compile mode: `default` or `max-autotune-no-cudagraphs` (CUDA graphs modes record one graph per
    batch shape, which variable-length speech batches turn into a memory leak)."""
    compile_scope: str = "blocks"
    """What `perf.compile=true` compiles: `blocks` (each block, one graph they share) or `model` (the blocks, and
    each other module of the backbone that runs in every step, each in place: the time, text and input embeddings,
    the output norm and projection). Values other than `blocks` need `perf.compile=true`."""
    compile_dynamic: bool | None = None
    """torch.compile `dynamic`: null marks a length dynamic after it first changes, true starts dynamic. `false`
    (one graph per shape) is refused: batches vary in size as well as length, so the shapes are unbounded and
    compilation would hit torch's recompile limit mid-run."""
    sdpa_backend: str = "auto"
    """Attention kernel: `auto` (PyTorch picks), `flash`, `efficient`, `cudnn` or `math`."""
    tf32: bool = True
    """Allow TF32 matmuls and convolutions on Ampere and newer GPUs (faster float32 work, 10-bit mantissa)."""
    pin_memory: bool = True
    """Pin batch memory so host-to-GPU copies run asynchronously (ignored without CUDA)."""
    fp8: bool = False
    """FP8 training (torchao's float8 training, one dynamic scale per tensor) of the Linear layers inside the blocks
    whose widths are multiples of 16; parameters, optimizer state, EMA and exports keep their dtypes and keys. Needs
    a CUDA GPU of compute capability 8.9 or newer (Ada, Hopper, Blackwell), `perf.precision=bf16` and the `fp8`
    extra (`pip install 'f5lite[fp8]'`); checked before any work. Use it with `perf.compile=true`, as torchao
    advises: the compiler fuses the casts to FP8 into the surrounding kernels, which run uncompiled as passes of
    their own."""
    ac: ACConfig = field(default_factory=ACConfig)
    """Activation checkpointing."""
    memory_budget: float = 1.0
    """Compiler activation memory budget in [0, 1]: 1 keeps what the partitioner would save, lower values make the
    compiled backward recompute more to save memory. Values below 1 need `perf.compile=true`."""
    pack: bool = False
    """Pack each batch's utterances into one sequence with per-utterance attention (DiT only), so the blocks do no
    work on padding. It computes what the padded batch computes with its keys masked, so it needs
    `model.attn_mask_enabled=true`; on a CUDA GPU in bf16/fp16 attention runs varlen flash attention."""
    dropout: str = "auto"
    """Dropout kernel in training: `bits` (four 16-bit masks from one 64-bit random draw, a fifth of torch's cost
    on a CPU; p rounded to 1/65536), `torch` (`nn.Dropout`), or `auto` (`bits` on a CPU without compile)."""

    def __post_init__(self) -> None:
        check_choice("perf.precision", self.precision, PRECISIONS)
        check_choice("perf.compile_mode", self.compile_mode, COMPILE_MODES)
        check_choice("perf.compile_scope", self.compile_scope, COMPILE_SCOPES)
        check_choice("perf.sdpa_backend", self.sdpa_backend, SDPA_BACKENDS)
        check_range("perf.memory_budget", self.memory_budget, 0.0, 1.0)
        check_choice("perf.dropout", self.dropout, DROPOUT_KERNELS)
        if self.dropout == "bits" and self.compile:
            raise ValueError(
                "perf.dropout=bits with perf.compile=true: compiled blocks fuse torch's dropout into their kernels, "
                "which is cheaper; set perf.dropout=auto or torch"
            )
        if self.compile_dynamic is False:
            raise ValueError(
                "perf.compile_dynamic=false is not supported: batch sizes and lengths vary, so per-shape graphs would "
                "exceed torch.compile's recompile limit mid-run; leave it null (dynamic after the first change) or true"
            )
        if self.memory_budget < 1.0 and not self.compile:
            raise ValueError(
                f"perf.memory_budget={self.memory_budget!r} has no effect without perf.compile=true; "
                "set perf.compile=true or leave perf.memory_budget=1.0"
            )
        if self.compile_scope != "blocks" and not self.compile:
            raise ValueError(
                f"perf.compile_scope={self.compile_scope} needs perf.compile=true; set it or leave "
                "perf.compile_scope=blocks"
            )
        if self.precision == PRECISION_AUTO:
            return  # the checks of a resolved precision, last: the trainer's value meets them when it replaces `auto`
        if self.fp8 and self.precision != "bf16":
            # torchao's float8 training is made and tested for bf16 autocast; fp16's loss scaling on top of FP8's
            # own per-tensor scales is not, and fp32 would cast every FP8 result back up for nothing.
            raise ValueError(
                f"perf.fp8=true needs perf.precision=bf16 (torchao's fp8 training runs under bf16 autocast), "
                f"not {self.precision}"
            )


@dataclass
class EMAConfig:
    """Exponential moving average of the weights (the weights F5-TTS releases and infers with)."""

    decay: float = 0.9999
    """Largest decay; it warms up from 0 as in F5-TTS (ema_pytorch's inverse-gamma schedule)."""
    update_every: int = 10
    """Update the EMA every N optimizer updates."""
    update_after: int = 100
    """Copy the weights instead of averaging for the first N optimizer updates."""
    device: str = "same"
    """`same` (the model's device) or `cpu` (keeps the EMA copy off the GPU)."""

    def __post_init__(self) -> None:
        check_range("ema.decay", self.decay, 0.0, 1.0)
        check_at_least("ema.update_every", self.update_every, 1)
        check_at_least("ema.update_after", self.update_after, 0)
        check_choice("ema.device", self.device, EMA_DEVICES)


@dataclass
class CkptConfig:
    """Training checkpoints (written atomically; resumed exactly) and the final model export.

    On the command line `ckpt.async=BOOL` is accepted as a spelling of `ckpt.async_save` (`async` is a Python keyword
    and cannot be a dataclass field).
    """

    every: int = 5000
    """Save a training checkpoint every N optimizer updates."""
    keep_last: int = 3
    """How many training checkpoints to keep; 0 keeps all."""
    keep_best: int = 0
    """Also keep the K checkpoints with the best `best_metric` (besides the last ones); `f5lite-export --best`
    exports the best. Needs every checkpoint to be evaluated: `eval.every` (or `eval.sample_every` for a prompt
    metric) must divide `ckpt.every`."""
    best_metric: str = "val/loss"
    """What `keep_best` and `eval.patience` rank by: `val/loss` (EMA weights), `val/loss_online`, or a metric of
    the fixed prompts, `prompts/<key>` (`prompts/wer`, `prompts/cer`, `prompts/sim`, `prompts/mos`,
    `prompts/mel_l1`, `prompts/mcd`, `prompts/f0_rmse`); lower is better except for sim and mos."""
    async_save: bool = False
    """Write checkpoints in the background so training does not stall on disk I/O."""
    export_dtype: str = "fp32"
    """Dtype of the model weights exported at the end of training: `fp32`, `bf16` or `fp16`."""
    stop_timeout_s: float = 25.0
    """After SIGTERM/SIGINT, seconds the checkpoint of the last update may take; past it the run exits without it
    (the previous checkpoint is intact). Keep it below the launcher's grace period (torchrun and SLURM: 30 s)."""
    stop_check_every: int = 5
    """With several ranks, agree every N updates whether any rank was asked to stop (one tiny all-reduce); a single
    process checks after every update at no cost."""

    def __post_init__(self) -> None:
        check_at_least("ckpt.every", self.every, 1)
        if not self.stop_timeout_s > 0:
            raise ValueError(f"ckpt.stop_timeout_s={self.stop_timeout_s!r} is not valid; it must be > 0")
        check_at_least("ckpt.stop_check_every", self.stop_check_every, 1)
        check_at_least("ckpt.keep_last", self.keep_last, 0)
        check_at_least("ckpt.keep_best", self.keep_best, 0)
        if not (self.best_metric in BEST_VAL_METRICS or self.best_metric.startswith(PROMPT_PREFIX)):
            choices = ", ".join((*BEST_VAL_METRICS, f"{PROMPT_PREFIX}<metric>"))
            raise ValueError(f"ckpt.best_metric={self.best_metric!r} is not valid; choose one of: {choices}")
        check_choice("ckpt.export_dtype", self.export_dtype, WEIGHT_DTYPES)


@dataclass(frozen=True)
class SampleConfig(SamplerOptions):
    """Sampler settings used for training samples and by `f5lite-infer`.

    The sampler's own settings (`steps`, `method`, `schedule`, `sway`, `cfg_strength`, `cfg_zero_init_steps`,
    `cfg_zero_star`, `speed`) are inherited from `SamplerOptions`, where each is documented and checked: one
    definition for the config, the Python API and the command line. This section adds what is not a sampler setting.
    `speed` sets the duration of what `Synthesizer` speaks (`f5lite-infer`, the fixed prompts of `eval.*`); a training
    sample continues its utterance for the utterance's true duration, so `speed` does not change it.
    Frozen like its base: `compose_config` merges overrides before the objects are made.
    """

    seed: int | None = None
    """Seed of the initial noise; `null` draws a random one (training samples then use the run's `seed`)."""
    vocoder: str = "vocos"
    """Vocoder: `vocos` or `griffin_lim` (no weights, works offline)."""
    vocoder_source: str = DEFAULT_VOCOS_REPO
    """Vocos weights: a local directory with config.yaml and pytorch_model.bin, or a Hugging Face hub id."""

    def __post_init__(self) -> None:
        try:
            super().__post_init__()
        except ValueError as err:  # the sampler's messages start with the field's name
            raise ValueError(f"sample.{err}") from None
        check_choice("sample.vocoder", self.vocoder, VOCODER_NAMES)
        if self.vocoder == "griffin_lim" and self.vocoder_source != DEFAULT_VOCOS_REPO:
            raise ValueError("vocoder_path is for vocos; the griffinlim vocoder has no weights")

    def sampler_options(self) -> SamplerOptions:
        """The sampler settings of this section, as the plain value `sample` and `Synthesizer` take."""
        return SamplerOptions(**{f.name: getattr(self, f.name) for f in fields(SamplerOptions)})


@dataclass
class LoggerConfig:
    """Metrics logging and training samples."""

    backend: str = "none"
    """`none` (progress bar only), `tensorboard` (files in `RUN_DIR/logs`; needs the `tensorboard` extra) or
    `wandb` (offline, into `RUN_DIR/logs`, when no API key is configured). Every backend also appends the scalars to
    `RUN_DIR/logs/train.jsonl`."""
    project: str = "f5lite"
    """Project name at the logging backend."""
    every: int = 100
    """Log (and fetch the loss from the device) every N optimizer updates."""
    sample_every: int = 0
    """Every N optimizer updates, synthesize one utterance of the current batch with the EMA weights and log its
    mel-spectrogram image and audio; 0 turns samples off."""

    def __post_init__(self) -> None:
        check_choice("logger.backend", self.backend, LOGGERS)
        check_at_least("logger.every", self.every, 1)
        check_at_least("logger.sample_every", self.sample_every, 0)


@dataclass
class TrainEvalConfig:
    """Evaluation while training: a deterministic validation loss and speech metrics on fixed prompts (rank 0)."""

    val_dir: str | None = None
    """Held-out data, in any form `data.dir` takes; default `DATA_DIR/val` when it exists (written by
    `f5lite-prepare --val-count N`). Its text is tokenized with the run's vocab."""
    every: int = 1000
    """Compute the validation loss every N optimizer updates (when there is validation data); 0 turns it off."""
    max_utterances: int = 256
    """Use at most this many validation utterances (a fixed subset, the same in every evaluation)."""
    time_bins: int = 4
    """Also report the loss per flow-time bin (`val/loss_t0.00-0.25`, ...): small t is mostly noise, large t
    fine detail, so the bins move differently as training goes."""
    online: bool = False
    """Also compute the validation loss of the online (non-EMA) weights, `val/loss_online`."""
    seed: int = 0
    """Seed of the fixed draws (noise, time, span) of every validation utterance and of the prompts' noise; the
    same across runs, so their numbers are comparable."""
    prompts: str | None = None
    """A test-set file (`id|ref_audio|ref_text|gen_text|gt_audio`, see `f5lite-eval`) spoken every
    `sample_every` updates; default the validation data's `testset.txt` when it exists."""
    sample_every: int = 0
    """Synthesize the prompts with the EMA weights through `Synthesizer` (the configured sampler and vocoder),
    score and log them every N optimizer updates; 0 turns it off."""
    max_prompts: int = 8
    """Speak at most this many rows of the prompts file (its first ones)."""
    metrics: list[str] = field(default_factory=lambda: list(METRIC_NAMES))
    """Metrics of the prompts: `wer` (ASR), `sim` (speaker similarity to the reference), `mos` (predicted quality),
    `mel` (against the ground truth). Need the `eval` extra: pip install 'f5lite[eval]'."""
    asr: str = "pocketsphinx"
    """ASR of `wer`: `pocketsphinx` (offline, English, rough), `whisper:<dir or hub id>`,
    `faster-whisper:<dir or size>`, `paraformer:<dir>` (see the benchmarks page of the docs for real numbers)."""
    speaker: str = "resemblyzer"
    """Speaker encoder of `sim`: `resemblyzer` (offline) or `wavlm:<dir or hub id>`."""
    mos: str = "dnsmos"
    """Quality predictor of `mos`: `dnsmos` (offline)."""
    language: str = "en"
    """Language of the prompts: `en` scores WER, `zh` CER."""
    patience: int = 0
    """Stop training early after this many evaluations of `ckpt.best_metric` without a new best (then save and
    export as at the end); 0 never stops early."""

    def __post_init__(self) -> None:
        check_at_least("eval.every", self.every, 0)
        check_at_least("eval.max_utterances", self.max_utterances, 1)
        check_at_least("eval.time_bins", self.time_bins, 1)
        check_at_least("eval.sample_every", self.sample_every, 0)
        check_at_least("eval.max_prompts", self.max_prompts, 1)
        for name in self.metrics:
            check_choice("eval.metrics", name, METRIC_NAMES)
        check_choice("eval.language", self.language, LANGUAGES)
        check_at_least("eval.patience", self.patience, 0)


@dataclass
class DurationConfig:
    """The duration predictor (`f5lite.models.duration`): how many frames a text takes to say, learned.

    Picked as a group: `duration=small` trains one alongside the flow model; `+recipe=duration_small` trains one alone.
    """

    train: str = "none"
    """`none`, or `alongside`: with `objective=flow`, one predictor update on every flow update's batches (its own
    optimizer; checkpointed and exported with the model). `objective=duration` trains a predictor alone."""
    dim: int = 64
    """Width of the token embedding and of the blocks."""
    depth: int = 3
    """Convolution blocks."""
    kernel_size: int = 5
    """Tokens each block's depthwise convolution sees (odd)."""
    lr: float = 2.0e-3
    """Peak learning rate of the predictor's AdamW (betas, eps and weight decay are `optim`'s); the warm-up and the
    linear decay follow `optim.warmup_updates` and `optim.max_updates`."""
    init: str | None = None
    """The predictor to start from, with `objective=duration` (fine-tuning one) or `duration_grpo` (which needs one,
    and holds the policy near it by `grpo.kl`): a predictor directory (an `alone` run's export) or an export that holds
    one, of the data's vocab. null: `alone` starts from fresh weights."""
    spread: float = 0.1
    """`objective=duration_grpo` only: the standard deviation of the log-length the policy draws around the predictor's
    estimate (0.1: a group's takes mostly within 10 % of it)."""

    def __post_init__(self) -> None:
        if self.train in REMOVED:
            raise ValueError(f"duration.train={self.train} was removed; use objective={REMOVED[self.train]}")
        check_choice("duration.train", self.train, DURATION_TRAINING)
        check_at_least("duration.dim", self.dim, 1)
        check_at_least("duration.depth", self.depth, 1)
        if self.kernel_size < 1 or self.kernel_size % 2 == 0:
            raise ValueError(f"duration.kernel_size={self.kernel_size!r} is not valid; it must be an odd number >= 1")
        if not self.lr > 0:
            raise ValueError(f"duration.lr={self.lr!r} is not valid; it must be > 0")
        check_range("duration.spread", self.spread, 1e-3, 1.0)


@dataclass
class DistillConfig:
    """Few-step distillation (`f5lite.train.distill`).

    A student learns to take in one step of size `d`, guided by `w` as an input, what a frozen teacher takes in two
    guided Euler steps of `d / 2` (ZipVoice-Distill).
    """

    teacher: str | None = None
    """`objective=distill`'s teacher: an f5lite export or training run directory (`teacher=DIR` on the command line). Its architecture
    becomes `model` and its weights the student's start (`init.weights`). A distilled student (the first stage's
    export) makes the run the second stage: the student starts from it, embeddings included, and the teacher is an
    average of the student (`teacher_decay`), starting at that export and stepping itself."""
    steps: list[int] = field(default_factory=lambda: [2, 4, 8])
    """Step counts the student is trained for: each sample takes one step of a grid of one of these counts (with
    `sample.schedule` and `sample.sway`, as the sampler builds it)."""
    guidance: list[float] = field(default_factory=lambda: [1.0, 3.0])
    """The range the guidance scale `w` of each sample is drawn from (uniformly)."""
    student_steps: int = 4
    """The steps the exported student samples with unless told otherwise."""
    student_guidance: float = 2.0
    """The guidance scale the exported student samples with unless told otherwise."""
    teacher_dtype: str = "auto"
    """The teacher's dtype: `auto` (bf16 on a GPU that computes it, else fp32), `fp32`, `bf16`, `fp16`. The first
    stage's frozen teacher is cast to it; the second stage's keeps float32 weights (it is an average) and computes
    in it under autocast."""
    teacher_decay: float = 0.9999
    """Second stage only: after every applied optimizer update the teacher takes `1 - teacher_decay` of the way to
    the student (a constant decay from the first update, no warm-up: ZipVoice-Distill's 0.9999)."""

    def __post_init__(self) -> None:
        if not self.steps or any(not isinstance(n, int) or n < 1 for n in self.steps):
            raise ValueError(f"distill.steps={list(self.steps)!r} is not valid; give step counts >= 1, e.g. [2, 4, 8]")
        if len(self.guidance) != 2 or not 0 <= self.guidance[0] <= self.guidance[1]:
            raise ValueError(
                f"distill.guidance={list(self.guidance)!r} is not valid; give [low, high], 0 <= low <= high"
            )
        check_at_least("distill.student_steps", self.student_steps, 1)
        check_range("distill.student_guidance", self.student_guidance, 0.0, 100.0)
        check_choice("distill.teacher_dtype", self.teacher_dtype, ("auto", *WEIGHT_DTYPES))
        check_range("distill.teacher_decay", self.teacher_decay, 0.0, 1.0)


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
    steps: int = 10
    """Sampler steps of a rollout (`sample.schedule` and `sample.sway` build the grid, as the sampler does)."""
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
    cfg_strength: float = 0.0
    """Guidance of the rollouts: 0 (FlowTTS-GRPO: the conditional velocity is the policy, half the passes), or a
    strength whose guided velocity (two passes) is the policy."""
    rewards: dict[str, float] = field(default_factory=lambda: {"wer": 1.0, "sim": 1.0})
    """Weight of each reward (`wer`, `sim`, `mos`); the reward is their weighted sum, each term higher = better:
    `wer` counts as `-min(WER, 1)` (CER for `eval.language=zh`), `sim` as the speaker cosine to the prompt's voice,
    `mos` as the predicted MOS. Backends: `eval.asr`, `eval.speaker`, `eval.mos`, all offline by default."""

    def __post_init__(self) -> None:
        check_at_least("grpo.group", self.group, 2)
        check_at_least("grpo.prompts_per_update", self.prompts_per_update, 1)
        check_at_least("grpo.steps", self.steps, 1)
        check_choice("grpo.likelihood", self.likelihood, LIKELIHOODS)
        check_range("grpo.train_steps", self.train_steps, 1, self.steps)
        check_range("grpo.noise_level", self.noise_level, 1e-3, 10.0)
        check_at_least("grpo.kl", self.kl, 0.0)
        check_choice("grpo.advantages", self.advantages, ADVANTAGE_SIGNS)
        check_at_least("grpo.data_weight", self.data_weight, 0.0)
        check_range("grpo.cfg_strength", self.cfg_strength, 0.0, 100.0)
        for name, weight in self.rewards.items():
            check_choice("grpo.rewards", name, REWARD_NAMES)
            check_at_least(f"grpo.rewards.{name}", weight, 0.0)
        if not any(self.rewards.values()):
            raise ValueError(f"grpo.rewards={dict(self.rewards)} weighs nothing; give a weight > 0, e.g. {{wer: 1.0}}")


@dataclass
class InitConfig:
    """Pretrained weights to start from (fine-tuning).

    Loaded at every start; a resumed run then overwrites them with its checkpoint (LoRA checkpoints hold only the
    adapters, so there the base weights always come from here).
    """

    weights: str | None = None
    """An official F5-TTS / E2-TTS `.safetensors` or `.pt`, or an f5lite export directory; null trains from scratch."""
    vocab: str | None = None
    """The `vocab.txt` that goes with an official checkpoint (an export directory has its own). The training data's
    vocab must extend it (`f5lite-prepare --vocab` does): its extra tokens get new embedding rows."""
    use_ema: bool = True
    """Start from the checkpoint's EMA weights (what F5-TTS releases) rather than its online weights."""

    def __post_init__(self) -> None:
        if self.vocab is not None and self.weights is None:
            raise ValueError("init.vocab is set but init.weights is not; give init.weights=PATH")


@dataclass
class LoraConfig:
    """Low-rank adapters (LoRA, through the `peft` library) instead of training every weight."""

    rank: int = 0
    """Adapter rank; 0 turns LoRA off."""
    alpha: int | None = None
    """Adapter scaling numerator (the update is scaled by alpha / rank); null means alpha = rank."""
    dropout: float = 0.0
    """Dropout on the adapters' input."""
    target_modules: list[str] = field(default_factory=lambda: ["to_q", "to_k", "to_v", "to_out.0", "ff.0.0", "ff.2"])
    """Linear layers that get adapters, by name suffix: attention q/k/v/out and the feed-forward linears."""
    export: str = "merged"
    """What the export holds: `merged` (full weights with the adapters folded in) or `adapter` (the adapters alone,
    in peft's format, next to the base weights' path)."""

    def __post_init__(self) -> None:
        check_at_least("finetune.lora.rank", self.rank, 0)
        check_range("finetune.lora.dropout", self.dropout, 0.0, 0.99)
        if self.alpha is not None and not self.alpha > 0:
            raise ValueError(f"finetune.lora.alpha={self.alpha!r} is not valid; it must be > 0")
        check_choice("finetune.lora.export", self.export, LORA_EXPORTS)
        if not self.target_modules:
            raise ValueError("finetune.lora.target_modules is empty; name at least one linear layer")


@dataclass
class FinetuneConfig:
    """Fine-tuning options on top of `init`."""

    lora: LoraConfig = field(default_factory=LoraConfig)
    """Low-rank adapters."""


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
