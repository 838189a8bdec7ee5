"""Training step of F5-TTS's own code against f5lite's: same weights, same batch, interleaved, one process each.

F5-TTS is not a dependency of f5lite; install it beside (for example `pip install --no-deps --target /tmp/f5pkg
f5-tts x-transformers torchdiffeq ema-pytorch loguru einx frozendict torch-einops-utils rjieba`), then run with
`PYTHONPATH=/tmp/f5pkg`. Without it the script stops with one line (`--configs` with only f5lite ones still runs).

    PYTHONPATH=/tmp/f5pkg python scripts/compare_f5tts_train.py            # writes scripts/results/f5tts_train_cpu.*
    make bench-gpu        # on a CUDA machine: dit_base, bf16, a bucket of 38,400 frames, compile, pack, fp8, AC
    make bench-gpu-rehearse   # the same command lines on this CPU with the tiny preset, in a few minutes

Both sides train the mid-size DiT (`f5lite.bench.MID_DIT`) from the same random weights (our state dicts are
key-compatible with F5-TTS's) on the same synthetic batch (mel lengths 300,340,370,400, text lengths 72,80,85,90).
Each step is what the trainers do, through accelerate as both trainers use it:

- F5-TTS: its `CFM(DiT)`, fused `AdamW` and `SequentialLR` warm-up/decay schedule, `accelerator.backward`,
  `clip_grad_norm_` (max norm 1), `ema_pytorch.EMA` updated every step (its defaults, as its `Trainer`). Its trainer
  offers only accelerate's mixed precision on a CPU (the 8-bit optimizer needs CUDA), so its best is bf16.
- f5lite: `f5lite.train.setup.build_model` / `make_optimizer` from `+recipe=dit_base` plus the model size and
  `perf.*` overrides, `f5lite.models.cfm.CFM`, f5lite's EMA, and the trainer's update (lr as a device tensor,
  non-finite updates skipped on the device).

On a GPU (`--device cuda`) the step is timed between device synchronizations, memory is the peak of
`torch.cuda.max_memory_allocated`. The activation-checkpointing configurations compare f5lite's `perf.ac` (every
block, every 2nd block) with F5-TTS's own `checkpoint_activations` (every block).

MFU (model FLOPs utilization) = model FLOPs of one step / step time / peak FLOP/s, where

- the model FLOPs are `f5lite.bench.training_flops` of the DiT over the batch's *real* frames (the mel lengths, never
  the padded length): 6 x (the per-frame linear and convolution weights) x frames (forward 2, backward 4 = 2x the
  forward) plus the bidirectional attention, 12 x layers x inner x length^2 per utterance (4 forward, 8 backward).
  Per-utterance weights (time embedding, AdaLN modulation), embedding lookups, norms and elementwise work are not
  counted, nor is the recompute of activation checkpointing: model FLOPs, not hardware FLOPs. A padded step and a
  packed one (`perf.pack`) of the same utterances therefore count the same FLOPs, and their MFUs compare;
- the peak is the GPU's dense bf16 tensor-core peak without sparsity (`f5lite.bench.PEAK_FLOPS`, by GPU model:
  989.4 TFLOP/s on an H100 SXM or an H200), also for the fp8 configurations, so that MFUs compare across precisions.

Batches: `--mel-lengths`/`--text-lengths` give one explicitly (the GPU default is 32 x 1200 equal lengths, where
packing cannot help); `--lengths-from bucket|shuffled --frames N` draws a speech-like batch whose padded size is at
most N frames (`f5lite.bench.lengths`): a length-sorted bucket (little padding) or a shuffled batch (much padding).
The results state the batch's padding fraction.

`--profile N` profiles one more step per run with torch.profiler and reports where its time goes
(`f5lite.bench.step_profile`): matmuls, attention, convolutions, elementwise/norms/modulation, optimizer (clipping,
AdamW, LR: a `record_function` range), EMA (a range), copies (memcpy, memset, dtype casts), other, and idle. On a GPU
the rows are the device's kernels and idle is the step's wall time minus the union of the kernel intervals (the
profiled step synchronizes the device at the edges of the optimizer and EMA ranges so that their kernels fall inside
them, which adds four launch latencies to idle); on a CPU they are the operators' self times and idle is the time
inside no operator (Python and dispatch). The N operators with the most time are listed too.

Configurations that cannot run here are skipped with a one-line note (the fp8 ones need CUDA with compute
capability 8.9 or more); one that fails is reported in one line and the others go on. The results files are
rewritten after every run, so an interrupted benchmark keeps what it measured.

Configurations run in their own subprocesses (a clean peak RSS each), alternating within every round so a VM whose
speed drifts slows all of them alike; per configuration the median over `--rounds` of each run's median step is
kept. Frames/s counts real (unpadded) frames. Ratios are f5lite's frames/s over F5-TTS's at equal precision, and
best against best.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from f5lite.bench import F5TTS_VOCAB_SIZE, MID_DIT
from f5lite.bench import sidebyside as sbs
from f5lite.bench.args import int_list
from f5lite.bench.flops import table_peak_flops, training_flops
from f5lite.bench.lengths import SHAPES, padding_fraction, speech_batch
from f5lite.bench.step_profile import EMA_RANGE, OPTIMIZER_RANGE, STEP_RANGE, categorize, profiler_rows, shares

VOCAB = F5TTS_VOCAB_SIZE
RESULTS = Path(__file__).resolve().parent / "results"
STEM = "f5tts_train_{device}"
PRESETS: dict[str, dict[str, Any]] = {
    "base": {"dim": 1024, "depth": 22, "heads": 16, "dim_head": 64, "ff_mult": 2, "text_dim": 512, "conv_layers": 4},
    "mid": MID_DIT,
    # Smoke tests only.
    "tiny": {"dim": 64, "depth": 2, "heads": 4, "dim_head": 16, "ff_mult": 2, "text_dim": 32, "conv_layers": 1},
}
LR = 7.5e-5
WARMUP_UPDATES = 20_000
TOTAL_UPDATES = 1_000_000


@dataclass(frozen=True)
class Config:
    """One measured configuration: which code, which precision, which f5lite `perf.*` overrides.

    `checkpoint_activations` is F5-TTS's own switch (every block); f5lite's is an override of `perf.ac`. `compile` is
    what an F5-TTS user adds by hand in one line: its DiT's `forward` wrapped in `torch.compile` (f5lite's is
    `perf.compile`, per block).
    """

    side: str
    precision: str
    overrides: tuple[str, ...] = ()
    checkpoint_activations: bool = False
    compile: bool = False

    @property
    def fp8(self) -> bool:
        """Whether it trains in FP8 (`perf.fp8`), which needs a CUDA GPU of compute capability 8.9 or more."""
        return "perf.fp8=true" in self.overrides


COMPILE = "perf.compile=true"
MASK = "model.attn_mask_enabled=true"  # perf.pack computes the padded step with padded keys masked: it needs this
PACK = "perf.pack=true"
FP8 = "perf.fp8=true"
CONFIGS: dict[str, Config] = {
    "F5-TTS fp32": Config("f5tts", "no"),
    "F5-TTS bf16": Config("f5tts", "bf16"),
    # The anchor on a GPU: F5-TTS as its users really run it, compiled.
    "F5-TTS bf16 + compile": Config("f5tts", "bf16", compile=True),
    "f5lite fp32": Config("f5lite", "no"),
    "f5lite bf16": Config("f5lite", "bf16"),
    "f5lite bf16 + compile": Config("f5lite", "bf16", (COMPILE,)),
    # The levers of issue 40: no FLOPs on padding (packing; its padded twin masks the same keys) and FP8 matmuls.
    "f5lite bf16 + compile + mask": Config("f5lite", "bf16", (COMPILE, MASK)),
    "f5lite bf16 + compile + pack": Config("f5lite", "bf16", (COMPILE, MASK, PACK)),
    "f5lite bf16 + compile + fp8": Config("f5lite", "bf16", (COMPILE, FP8)),
    "f5lite bf16 + compile + pack + fp8": Config("f5lite", "bf16", (COMPILE, MASK, PACK, FP8)),
    # Ablations: f5lite with one of its step optimizations switched off, to measure what each one brings.
    "f5lite fp32 (torch dropout)": Config("f5lite", "no", ("perf.dropout=torch",)),
    "f5lite bf16 (torch dropout)": Config("f5lite", "bf16", ("perf.dropout=torch",)),
    "F5-TTS bf16 + AC": Config("f5tts", "bf16", checkpoint_activations=True),
    "f5lite bf16 + AC every 2nd": Config("f5lite", "bf16", ("perf.ac.mode=full", "perf.ac.every_n=2")),
    "f5lite bf16 + AC": Config("f5lite", "bf16", ("perf.ac.mode=full", "perf.ac.every_n=1")),
}
DEFAULT_CONFIGS = (
    "F5-TTS fp32",
    "F5-TTS bf16",
    "f5lite fp32",
    "f5lite bf16",
    "f5lite bf16 + compile",
    "f5lite fp32 (torch dropout)",
    "f5lite bf16 (torch dropout)",
)
"""What runs without `--configs`: the CPU comparison (activation checkpointing only costs time on a CPU)."""
PAIRS = {
    "fp32": ("f5lite fp32", "F5-TTS fp32"),
    "bf16": ("f5lite bf16", "F5-TTS bf16"),
    "bf16 + compile": ("f5lite bf16 + compile", "F5-TTS bf16 + compile"),
    "bf16 + AC": ("f5lite bf16 + AC", "F5-TTS bf16 + AC"),
    # Each lever against the anchor, F5-TTS compiled as its users run it.
    "bf16 + compile + pack": ("f5lite bf16 + compile + pack", "F5-TTS bf16 + compile"),
    "bf16 + compile + fp8": ("f5lite bf16 + compile + fp8", "F5-TTS bf16 + compile"),
    "bf16 + compile + pack + fp8": ("f5lite bf16 + compile + pack + fp8", "F5-TTS bf16 + compile"),
}


def _configs(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in CONFIGS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown configuration(s) {unknown}; choose from: {', '.join(CONFIGS)}")
    return names


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (median kept)")
    parser.add_argument("--steps", type=int, default=4, help="timed steps per run")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first (compilation happens here)")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where both sides train")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="mid", help="model size")
    parser.add_argument("--mel-lengths", type=int_list(1), default=[300, 340, 370, 400])
    parser.add_argument("--text-lengths", type=int_list(1), default=[72, 80, 85, 90])
    parser.add_argument(
        "--lengths-from",
        choices=SHAPES,
        help="draw a speech-like batch instead of --mel-lengths: a length-sorted bucket or a shuffled batch",
    )
    parser.add_argument(
        "--frames",
        type=int,
        help="with --lengths-from: the padded batch's frame budget (default: sum of --mel-lengths)",
    )
    parser.add_argument("--configs", type=_configs, default=list(DEFAULT_CONFIGS), help="comma-separated")
    parser.add_argument("--out-dir", type=Path, default=RESULTS, help="where f5tts_train_DEVICE.json/.md go")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument(
        "--profile", type=int, default=0, metavar="N", help="profile one more step per run; report the top N ops"
    )
    parser.add_argument("--worker", choices=list(CONFIGS), help=argparse.SUPPRESS)
    # F5-TTS draws its condition dropout from Python's unseeded `random`, f5lite from the step's generator: only
    # without dropout do both sides see the same inputs, which is what comparing their losses needs.
    parser.add_argument("--no-drop", action="store_true", help="train without condition dropout on both sides")
    args = parser.parse_args(argv)
    if len(args.mel_lengths) != len(args.text_lengths):
        parser.error("--mel-lengths and --text-lengths need the same number of items")
    if args.rounds < 1 or args.steps < 1 or args.warmup < 0 or args.profile < 0:
        parser.error("--rounds and --steps need at least 1, --warmup and --profile at least 0")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no CUDA device here")
    if args.frames is not None and (args.lengths_from is None or args.frames < 1):
        parser.error("--frames needs --lengths-from and at least 1")
    if args.lengths_from and args.worker is None:  # the workers get the drawn lengths spelled out
        args.mel_lengths, args.text_lengths = speech_batch(args.lengths_from, args.frames or sum(args.mel_lengths))
    return args


def unavailable(config: Config, device: torch.device) -> str | None:
    """Why `config` cannot run on `device` (one line), or None when it can."""
    if not config.fp8:
        return None
    if device.type != "cuda":
        return "perf.fp8 needs a CUDA GPU of compute capability 8.9 or more; skipped on the CPU"
    capability = torch.cuda.get_device_capability(device)
    if capability < (8, 9):
        return f"perf.fp8 needs compute capability 8.9 or more; this GPU has {capability[0]}.{capability[1]}"
    return None


_PROFILED: torch.device | None = None
"""The device of the step being profiled (`profile_step`), else None: `phase` marks ranges only then."""


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """A profiler range around part of the step (`OPTIMIZER_RANGE`, `EMA_RANGE`); nothing outside `profile_step`.

    On a GPU the device is synchronized at both edges, so that the kernels launched inside the range also run inside
    its interval and `categorize` can attribute them by time (costs a few launch latencies in the profiled step only).
    """
    if _PROFILED is None:
        yield
        return
    from torch.profiler import record_function

    cuda = _PROFILED.type == "cuda"
    if cuda:
        torch.cuda.synchronize(_PROFILED)
    with record_function(name):
        yield
        if cuda:
            torch.cuda.synchronize(_PROFILED)


def f5tts_missing() -> str | None:
    """Why F5-TTS (and its EMA package) cannot be imported, or None when they can."""
    try:
        import ema_pytorch  # noqa: F401
        import f5_tts.model  # noqa: F401
    except ImportError as err:
        return str(err)
    return None


def synthetic_batch(
    mel_lengths: list[int], text_lengths: list[int], device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`(mel [b, n, 100] zero-padded, text ids [b, nt] padded with -1, lens [b])` on `device`, reproducible."""
    g = torch.Generator().manual_seed(0)
    mel = torch.zeros(len(mel_lengths), max(mel_lengths), 100)
    text = torch.full((len(text_lengths), max(text_lengths)), -1, dtype=torch.long)
    for i, (frames, tokens) in enumerate(zip(mel_lengths, text_lengths, strict=True)):
        mel[i, :frames] = torch.randn(frames, 100, generator=g) * 2 - 5  # roughly log-mel values
        text[i, :tokens] = torch.randint(0, VOCAB, (tokens,), generator=g)
    return mel.to(device), text.to(device), torch.tensor(mel_lengths, device=device)


def shared_weights(dims: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The random weights both sides start from: every parameter N(0, 0.02), so no zero-initialized path is idle."""
    import f5lite

    torch.manual_seed(0)
    model = f5lite.build_backbone("dit", **dims, text_num_embeds=VOCAB)
    with torch.no_grad():
        for p in model.parameters():
            torch.nn.init.normal_(p, std=0.02)
    return model.state_dict()


NO_DROP = {"audio_drop_prob": 0.0, "cond_drop_prob": 0.0}
"""The CFM keywords of both sides for `--no-drop`."""


def f5tts_step(
    config: Config, dims: dict[str, Any], batch: tuple[torch.Tensor, ...], cfm_kwargs: dict[str, float]
) -> Callable[[int], float]:
    """F5-TTS's `Trainer.train` inner step on a fixed batch; returns `step(i) -> loss`."""
    from accelerate import Accelerator
    from ema_pytorch import EMA
    from f5_tts.model.backbones.dit import DiT as F5DiT
    from f5_tts.model.cfm import CFM as F5CFM
    from torch.optim import AdamW
    from torch.optim.lr_scheduler import LinearLR, SequentialLR

    device = batch[0].device
    accelerator = Accelerator(cpu=device.type == "cpu", mixed_precision=config.precision)
    backbone = F5DiT(
        **dims, text_num_embeds=VOCAB, mel_dim=100, checkpoint_activations=config.checkpoint_activations
    ).to(device)
    missing, unexpected = backbone.load_state_dict(shared_weights(dims), strict=False)
    params = {name for name, _ in backbone.named_parameters()}
    if unexpected or params & set(missing):
        raise SystemExit(f"compare_f5tts_train.py: weights do not match F5-TTS's DiT: {missing} {unexpected}")
    if config.compile:
        backbone.forward = torch.compile(backbone.forward)  # type: ignore[method-assign]  # the user's one line
    model = F5CFM(transformer=backbone, mel_spec_kwargs={"n_mel_channels": 100}, **cfm_kwargs)
    ema = EMA(model, include_online_model=False)  # F5-TTS's Trainer: default ema_kwargs
    optimizer = AdamW(model.parameters(), lr=LR, fused=True)
    warmup = LinearLR(optimizer, start_factor=1e-8, end_factor=1.0, total_iters=WARMUP_UPDATES)
    decay = LinearLR(optimizer, start_factor=1.0, end_factor=1e-8, total_iters=TOTAL_UPDATES - WARMUP_UPDATES)
    scheduler = SequentialLR(optimizer, schedulers=[warmup, decay], milestones=[WARMUP_UPDATES])
    model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)
    mel, text, lens = batch

    def step(i: int) -> float:
        torch.manual_seed(i)
        with accelerator.accumulate(model):
            loss, _, _ = model(mel, text=text, lens=lens)
            accelerator.backward(loss)
            with phase(OPTIMIZER_RANGE):
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
        if accelerator.sync_gradients:
            with phase(EMA_RANGE):
                ema.update()
        return float(loss.detach())

    return step


def f5lite_step(
    config: Config, dims: dict[str, Any], batch: tuple[torch.Tensor, ...], cfm_kwargs: dict[str, float]
) -> Callable[[int], float]:
    """f5lite's trainer update (`Trainer.forward_backward` + `optimizer_step`) on a fixed batch."""
    from accelerate import Accelerator

    from f5lite.config import compose_config
    from f5lite.models.cfm import CFM
    from f5lite.train.schedule import lr_factor
    from f5lite.train.setup import build_model, make_optimizer

    device = batch[0].device
    overrides = ["+recipe=dit_base", *(f"model.{k}={v}" for k, v in dims.items()), f"perf.precision={config.precision}"]
    cfg = compose_config([*overrides, f"optim.lr={LR}", *config.overrides])
    accelerator = Accelerator(
        cpu=device.type == "cpu", mixed_precision=cfg.perf.precision, step_scheduler_with_optimizer=False
    )
    setup = build_model(cfg, VOCAB, None, device)
    setup.backbone.load_state_dict(shared_weights(dims))
    if setup.ema is not None:
        setup.ema.copy_from(setup.backbone)
    backbone, ema = setup.backbone, setup.ema
    model, optimizer = accelerator.prepare(CFM(backbone, **cfm_kwargs), make_optimizer(cfg, backbone, device))
    mel, text, lens = batch
    applied = torch.zeros((), dtype=torch.long, device=device)

    def step(i: int) -> float:
        nonlocal applied
        generator = torch.Generator(device=device).manual_seed(i)
        loss = model(mel, text, lens, generator=generator)
        accelerator.backward(loss)
        with phase(OPTIMIZER_RANGE):
            grad_norm = accelerator.clip_grad_norm_(model.parameters(), cfg.optim.max_grad_norm)
            finite = torch.isfinite(loss) & torch.isfinite(torch.as_tensor(grad_norm))
            factor = lr_factor(applied, cfg.optim.warmup_updates, cfg.optim.max_updates)
            for group in optimizer.param_groups:
                group["lr"] = (cfg.optim.lr * factor).to(device)
            optimizer.optimizer.found_inf = (~finite).float()
            optimizer.optimizer.grad_scale = None
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            applied = applied + finite.long()
        if ema is not None:
            with phase(EMA_RANGE):
                ema.update(backbone, finite)
        return float(loss.detach())

    return step


def worker(args: argparse.Namespace) -> dict[str, Any]:
    """Run one configuration in this process: warm up, time `--steps` steps, report the median and peak memory."""
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    config = CONFIGS[args.worker]
    dims = PRESETS[args.preset]
    batch = synthetic_batch(args.mel_lengths, args.text_lengths, device)
    build = f5tts_step if config.side == "f5tts" else f5lite_step
    step = build(config, dims, batch, NO_DROP if args.no_drop else {})
    losses = [step(i) for i in range(args.warmup)]
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    times = []
    for i in range(args.steps):
        start = time.perf_counter()
        losses.append(step(args.warmup + i))  # reading the loss waits for the device
        times.append(time.perf_counter() - start)
    record = {
        "label": args.worker,
        "step_s": statistics.median(times),
        "steps_s": [round(t, 4) for t in times],
        "losses": [round(v, 5) for v in losses],
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,  # KiB on Linux
    }
    if device.type == "cuda":
        record["peak_gpu_bytes"] = torch.cuda.max_memory_allocated(device)
        record["gpu"] = torch.cuda.get_device_name(device)
    if args.profile:
        record["profile"] = profile_step(step, args.warmup + args.steps, device, args.profile)
    return record


RANGE_NAMES = {"optimizer": OPTIMIZER_RANGE, "ema": EMA_RANGE}

COMPILED_GRAPHS = "inductor-generated code (compiled graphs)"
"""The profile's name for all of torch.compile's graphs together."""


def profile_step(step: Callable[[int], float], i: int, device: torch.device, top: int) -> dict[str, Any]:
    """Where one step's time goes: its categories (`f5lite.bench.step_profile`) and its `top` operators.

    Returns:
        `{"basis", "step_ms", "categories": {category: {"ms", "share"}}, "ranges": {"optimizer", "ema"},
        "ops": [{"op", "ms", "share", "calls"}]}`;
        shares are of the step's window; the operators are ranked by self time (device time on a GPU).
    """
    global _PROFILED
    from torch.profiler import ProfilerActivity, profile, record_function

    cuda = device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    if cuda:
        torch.cuda.synchronize(device)  # the window starts with an idle device: nothing of the last step runs on
    _PROFILED = device
    try:
        with profile(activities=activities) as prof, record_function(STEP_RANGE):
            step(i)  # reading the loss waits for the device: the window ends after its last kernel
    finally:
        _PROFILED = None
    rows = profiler_rows(prof, device.type)
    times = categorize(rows)
    attr = "self_device_time_total" if cuda else "self_cpu_time_total"
    ops: dict[str, list[float]] = {}  # name -> [microseconds, calls]
    for row in prof.key_averages():
        if row.key in (STEP_RANGE, OPTIMIZER_RANGE, EMA_RANGE):
            continue
        # Each compiled graph has its own hashed name; together they are the compiler's generated code.
        name = COMPILED_GRAPHS if row.key.startswith("## Call CompiledFxGraph") else row.key
        us, calls = ops.setdefault(name, [0.0, 0])
        ops[name] = [us + getattr(row, attr), calls + row.count]
    window = times["window"] or 1.0
    ranked = sorted(((name, us, calls) for name, (us, calls) in ops.items() if us > 0), key=lambda r: -r[1])
    return {
        "basis": "GPU kernels" if cuda else "CPU operators (self time)",
        "step_ms": round(window / 1e3, 3),
        "categories": shares(times),
        # How many optimizer and EMA ranges the step marked (1 each): without them their work is counted by name.
        "ranges": {name: sum(r.name == marker for r in rows) for name, marker in RANGE_NAMES.items()},
        "ops": [
            {"op": name, "ms": round(us / 1e3, 2), "share": round(us / window, 4), "calls": int(calls)}
            for name, us, calls in ranked[:top]
        ],
    }


def config(label: str, args: argparse.Namespace) -> sbs.Config:
    """One configuration: this script's `--worker LABEL` mode, whose last stdout line is its JSON record."""
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", label, "--preset", args.preset]
    command += ["--steps", str(args.steps), "--warmup", str(args.warmup), "--threads", str(args.threads)]
    command += ["--device", args.device]
    command += ["--mel-lengths", ",".join(map(str, args.mel_lengths))]
    command += ["--text-lengths", ",".join(map(str, args.text_lengths))]
    command += ["--no-drop"] if args.no_drop else []
    command += ["--profile", str(args.profile)] if args.profile else []
    return sbs.Config(label, command)


def machine() -> dict[str, Any]:
    """CPU model, cores, versions and date."""
    return sbs.flat_header(sbs.run_header(["f5-tts", "accelerate"]))


def summarize(runs: dict[str, list[dict[str, Any]]], frames: int, flops: float | None = None) -> dict[str, Any]:
    """Medians per configuration and the f5lite/F5-TTS ratios at equal precision and best against best.

    `flops` is one step's model FLOPs over the GPU's peak FLOP/s (so MFU = flops / step), None on a CPU.
    """
    table: dict[str, dict[str, Any]] = {}
    for label, records in runs.items():
        step = statistics.median(r["step_s"] for r in records)
        table[label] = {
            "step_s": round(step, 4),
            "frames_per_s": round(frames / step, 1),
            "peak_rss_gb": round(statistics.median(r["peak_rss_bytes"] for r in records) / 1e9, 3),
            "runs_step_s": [round(r["step_s"], 4) for r in records],
        }
        if records and "profile" in records[0]:  # the first round's profile: one step, for where the time goes
            table[label]["profile"] = records[0]["profile"]
        if all("peak_gpu_bytes" in r for r in records):
            table[label]["peak_gpu_gb"] = round(statistics.median(r["peak_gpu_bytes"] for r in records) / 1e9, 3)
        if flops is not None:
            table[label]["mfu"] = round(flops / step, 4)
    ratios: dict[str, dict[str, Any]] = {}
    for name, (ours, theirs) in PAIRS.items():
        if ours in table and theirs in table:
            ratios[name] = _ratio(table, ours, theirs)
    sides = {side: [k for k in table if CONFIGS[k].side == side] for side in ("f5lite", "f5tts")}
    if all(sides.values()):
        best = {side: max(labels, key=lambda k: table[k]["frames_per_s"]) for side, labels in sides.items()}
        ratios["best"] = _ratio(table, best["f5lite"], best["f5tts"])
    return {"configs": table, "ratios": ratios}


def _params(dims: dict[str, Any]) -> int:
    import f5lite

    return sum(p.numel() for p in f5lite.build_backbone("dit", **dims, text_num_embeds=VOCAB).parameters())


def _ratio(table: dict[str, dict[str, Any]], ours: str, theirs: str) -> dict[str, Any]:
    memory = "peak_gpu_gb" if "peak_gpu_gb" in table[ours] and "peak_gpu_gb" in table[theirs] else "peak_rss_gb"
    return {
        "f5lite": ours,
        "f5tts": theirs,
        "speed": round(table[theirs]["step_s"] / table[ours]["step_s"], 3),  # same frames: a ratio of rates
        "memory": round(table[ours][memory] / table[theirs][memory], 3),
    }


def step_flops_over_peak(args: argparse.Namespace, gpu: str | None) -> float | None:
    """One step's analytic model FLOPs over the GPU's dense bf16 peak (None on a CPU or a GPU not in the table)."""
    peak = table_peak_flops(gpu) if gpu else None
    if peak is None:
        return None
    import f5lite

    with torch.device("meta"):
        backbone = f5lite.build_backbone("dit", **PRESETS[args.preset], text_num_embeds=VOCAB)
    return training_flops(backbone, args.mel_lengths, args.text_lengths) / peak


def markdown(result: dict[str, Any]) -> str:
    """The results as a Markdown page."""
    m, s = result["machine"], result["setup"]
    lines = [
        f"# Training step: F5-TTS against f5lite ({s.get('gpu') or 'CPU'})",
        "",
        f"Machine: {sbs.describe(m)}.",
        "",
        f"Model: DiT {s['model']} ({s['params'] / 1e6:.1f}M parameters), the same random weights on both sides. "
        f"Batch{' (' + s['lengths_from'] + ')' if s.get('lengths_from') else ''}: {len(s['mel_lengths'])} "
        f"utterances, mel lengths {_lengths(s['mel_lengths'])}, text lengths {_lengths(s['text_lengths'])} "
        f"({s['frames']} real frames; padded to {s.get('padded_frames', s['frames'])}, "
        f"{s.get('padding_fraction', 0.0):.1%} padding). "
        f"{s['threads']} threads; per run {s['warmup']} warm-up + {s['steps']} timed steps (median), each "
        f"configuration in its own process, median of {s['rounds']} interleaved rounds. Step = forward, backward, "
        "clip, AdamW, LR schedule and EMA update, as each trainer does it.",
        "",
        "Frames/s counts real frames. MFU: the model FLOPs of the real frames (`f5lite.bench.training_flops`: "
        "6 x per-frame weights x frames + the attention's 12 x layers x inner x length^2 per utterance; no "
        "activation-checkpointing recompute, no FLOPs on padding) over the GPU's dense bf16 peak (no sparsity).",
        "",
        "| configuration | step (s) | frames/s | MFU | peak GPU memory (GB) | peak RSS (GB) | runs (s) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for label, row in result["configs"].items():
        runs = ", ".join(f"{t:.3f}" for t in row["runs_step_s"])
        mfu = f"{row['mfu']:.1%}" if "mfu" in row else "-"
        gpu_gb = f"{row['peak_gpu_gb']:.2f}" if "peak_gpu_gb" in row else "-"
        lines.append(
            f"| {label} | {row['step_s']:.3f} | {row['frames_per_s']:.0f} | {mfu} | {gpu_gb} | "
            f"{row['peak_rss_gb']:.2f} | {runs} |"
        )
    if result["ratios"]:
        lines += [
            "",
            "| comparison | f5lite | F5-TTS | speed (f5lite/F5-TTS) | memory |",
            "| --- | --- | --- | ---: | ---: |",
        ]
        for name, r in result["ratios"].items():
            title = "best vs best" if name == "best" else f"equal precision ({name})"
            if name.startswith("bf16 + compile +"):  # a lever of f5lite's against the anchor
                title = f"{name[len('bf16 + compile + ') :]} against compiled F5-TTS"
            lines.append(f"| {title} | {r['f5lite']} | {r['f5tts']} | {r['speed']:.2f}x | {r['memory']:.2f}x |")
    notes = [f"- {label}: skipped: {why}" for label, why in result.get("skipped", {}).items()]
    notes += [f"- {label}: failed: {why}" for label, why in result.get("failed", {}).items()]
    if notes:
        lines += ["", "Not measured:", "", *notes]
    lines += profile_table(result["configs"])
    return "\n".join(lines) + "\n"


def _lengths(values: list[int]) -> str:
    """A batch's lengths for a sentence: all of them when few, else their range and median."""
    if len(values) <= 8:
        return ", ".join(map(str, values))
    return f"{min(values)}-{max(values)} (median {statistics.median(values):g})"


CATEGORY_TITLES = {
    "matmul": "matmuls (GEMMs)",
    "attention": "attention",
    "convolution": "convolutions",
    "elementwise": "elementwise, norms, modulation (fused kernels included)",
    "optimizer": "optimizer (clip, AdamW, LR)",
    "ema": "EMA update",
    "copies": "copies (memcpy, memset, casts)",
    "other": "other",
    "idle": "idle (no kernel running) / outside any operator on a CPU",
}


def profile_table(configs: dict[str, dict[str, Any]]) -> list[str]:
    """Markdown lines: each profiled configuration's step split into categories, then its top operators.

    Empty without `--profile`.
    """
    profiled = {label: row["profile"] for label, row in configs.items() if "profile" in row}
    if not profiled:
        return []
    lines = [
        "",
        "## Where one step's time goes",
        "",
        "torch.profiler, one step after the timed ones, first round (`f5lite.bench.step_profile`): on a GPU the "
        "device's kernels, idle = the step's wall time minus the union of the kernel intervals; on a CPU the "
        "operators' self times, idle = time inside no operator (Python, dispatch). Shares are of the profiled step.",
    ]
    for label, prof in profiled.items():
        lines += [
            "",
            f"### {label}",
            "",
            f"Profiled step: {prof['step_ms']:.1f} ms ({prof['basis']}).",
            "",
            "| where | ms | share |",
            "| --- | ---: | ---: |",
        ]
        for category, title in CATEGORY_TITLES.items():
            cell = prof["categories"][category]
            lines.append(f"| {title} | {cell['ms']:.2f} | {cell['share']:.1%} |")
        if prof["ops"]:
            lines += ["", "| top operator | ms | share | calls |", "| --- | ---: | ---: | ---: |"]
            for op in prof["ops"]:
                lines.append(f"| `{op['op'][:70]}` | {op['ms']:.2f} | {op['share']:.1%} | {op['calls']} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run the comparison (or, with the internal `--worker`, one configuration) and print JSON lines.

    Returns:
        0 when every configuration that can run here ran; 1 when one failed (the others' results are written); 2
        when F5-TTS is needed and missing.
    """
    args = parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args)))
        return 0
    if any(CONFIGS[k].side == "f5tts" for k in args.configs) and (why := f5tts_missing()):
        print(
            f"compare_f5tts_train.py: F5-TTS is not importable ({why}); install it beside and set "
            "PYTHONPATH=/tmp/f5pkg (see the module docstring)",
            file=sys.stderr,
        )
        return 2
    device = torch.device(args.device)
    skipped = {label: why for label in args.configs if (why := unavailable(CONFIGS[label], device))}
    for label, why in skipped.items():
        print(f"compare_f5tts_train.py: {label}: {why}", file=sys.stderr)
    labels = [label for label in args.configs if label not in skipped]
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label in labels}
    failed: dict[str, str] = {}
    dims = PRESETS[args.preset]
    frames = sum(args.mel_lengths)
    padded = len(args.mel_lengths) * max(args.mel_lengths)
    setup = {
        "model": ", ".join(f"{k} {v}" for k, v in dims.items()),
        "params": _params(dims),
        "lengths_from": args.lengths_from,
        "mel_lengths": args.mel_lengths,
        "text_lengths": args.text_lengths,
        "frames": frames,
        "padded_frames": padded,
        "padding_fraction": round(padding_fraction(args.mel_lengths), 4),
        "threads": args.threads,
        "steps": args.steps,
        "warmup": args.warmup,
        "rounds": args.rounds,
        "no_drop": args.no_drop,
        "device": args.device,
    }
    header = machine()

    def result() -> dict[str, Any]:
        done = {label: records for label, records in runs.items() if records}
        gpu = next((r["gpu"] for records in done.values() for r in records if "gpu" in r), None)
        table = summarize(done, frames, step_flops_over_peak(args, gpu))
        return {"machine": header, "setup": {**setup, "gpu": gpu}, **table, "skipped": skipped, "failed": failed}

    def show(run: sbs.Run) -> None:
        if run.ok:
            runs[run.config].append(run.result or {})
            print(json.dumps({"round": run.round, **(run.result or {})}), flush=True)
        else:  # one line here, the end of its stderr below; the other configurations go on
            failed.setdefault(run.config, run.failure)
            sys.stderr.write(run.stderr[-3000:])
            print(f"compare_f5tts_train.py: {run.failure}", file=sys.stderr, flush=True)
        if not args.no_write:  # now, not at the end: a benchmark cut short keeps what it measured
            current = result()
            sbs.write_results(_results_path(args), current, markdown(current))

    if labels:
        sbs.run_interleaved([config(label, args) for label in labels], args.rounds, check=False, on_run=show)
    final = result()
    print(json.dumps(final))
    if not args.no_write and not labels:
        sbs.write_results(_results_path(args), final, markdown(final))
    return 1 if failed else 0


def _results_path(args: argparse.Namespace) -> Path:
    return args.out_dir / f"{STEM.format(device=args.device)}.json"


if __name__ == "__main__":
    sys.exit(main())
