"""Training step of F5-TTS's own code against f5lite's: same weights, same batch, interleaved, one process each.

F5-TTS is not a dependency of f5lite; install it beside (for example `pip install --no-deps --target /tmp/f5pkg
f5-tts x-transformers torchdiffeq ema-pytorch loguru einx frozendict torch-einops-utils rjieba`), then run with
`PYTHONPATH=/tmp/f5pkg`. Without it the script stops with one line (`--configs` with only f5lite ones still runs).

    PYTHONPATH=/tmp/f5pkg python scripts/compare_f5tts_train.py            # writes scripts/results/f5tts_train_cpu.*
    make bench-gpu        # on a CUDA machine: dit_base, bf16, 38,400 frames, AC none / every 2nd / every block

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
`torch.cuda.max_memory_allocated` and MFU is the analytic training FLOPs (`f5lite.bench.training_flops`) over the
GPU's dense bf16 peak (`f5lite.bench.PEAK_FLOPS`). The activation-checkpointing configurations compare f5lite's
`perf.ac` (every block, every 2nd block) with F5-TTS's own `checkpoint_activations` (every block).

Configurations run in their own subprocesses (a clean peak RSS each), alternating within every round so a VM whose
speed drifts slows all of them alike; per configuration the median over `--rounds` of each run's median step is
kept. Frames/s counts real (unpadded) frames. Ratios are f5lite's frames/s over F5-TTS's at equal precision, and
best against best.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from f5lite.bench import F5TTS_VOCAB_SIZE, MID_DIT
from f5lite.bench import sidebyside as sbs
from f5lite.bench.args import int_list
from f5lite.bench.flops import table_peak_flops, training_flops

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


CONFIGS: dict[str, Config] = {
    "F5-TTS fp32": Config("f5tts", "no"),
    "F5-TTS bf16": Config("f5tts", "bf16"),
    # The anchor on a GPU: F5-TTS as its users really run it, compiled.
    "F5-TTS bf16 + compile": Config("f5tts", "bf16", compile=True),
    "f5lite fp32": Config("f5lite", "no"),
    "f5lite bf16": Config("f5lite", "bf16"),
    "f5lite bf16 + compile": Config("f5lite", "bf16", ("perf.compile=true",)),
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
    return args


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
            if accelerator.sync_gradients:
                accelerator.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
        if accelerator.sync_gradients:
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


COMPILED_GRAPHS = "inductor-generated code (compiled graphs)"
"""The profile's name for all of torch.compile's graphs together."""


def profile_step(step: Callable[[int], float], i: int, device: torch.device, top: int) -> list[dict[str, Any]]:
    """Where one step's time goes: the `top` operators by self time (device time on a GPU), torch.profiler's view.

    Returns:
        `[{"op", "ms", "share", "calls"}]`, largest first; `share` is of the step's total self time.
    """
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        step(i)
    attr = "self_device_time_total" if device.type == "cuda" else "self_cpu_time_total"
    ops: dict[str, list[float]] = {}  # name -> [microseconds, calls]
    for row in prof.key_averages():
        # Each compiled graph has its own hashed name; together they are the compiler's generated code.
        name = COMPILED_GRAPHS if row.key.startswith("## Call CompiledFxGraph") else row.key
        us, calls = ops.setdefault(name, [0.0, 0])
        ops[name] = [us + getattr(row, attr), calls + row.count]
    total = sum(us for us, _ in ops.values())
    ranked = sorted(((name, us, calls) for name, (us, calls) in ops.items() if us > 0), key=lambda r: -r[1])
    return [
        {"op": name, "ms": round(us / 1e3, 2), "share": round(us / total, 4), "calls": int(calls)}
        for name, us, calls in ranked[:top]
    ]


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
        f"Batch: mel lengths {s['mel_lengths']}, text lengths {s['text_lengths']} ({s['frames']} real frames). "
        f"{s['threads']} threads; per run {s['warmup']} warm-up + {s['steps']} timed steps (median), each "
        f"configuration in its own process, median of {s['rounds']} interleaved rounds. Step = forward, backward, "
        "clip, AdamW, LR schedule and EMA update, as each trainer does it.",
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
            lines.append(f"| {title} | {r['f5lite']} | {r['f5tts']} | {r['speed']:.2f}x | {r['memory']:.2f}x |")
    lines += profile_table(result["configs"])
    return "\n".join(lines) + "\n"


def profile_table(configs: dict[str, dict[str, Any]]) -> list[str]:
    """Markdown lines: each profiled configuration's share of step time per operator (empty without `--profile`)."""
    profiled = {label: {r["op"]: r for r in row["profile"]} for label, row in configs.items() if "profile" in row}
    if not profiled:
        return []
    ops: dict[str, float] = {}
    for rows in profiled.values():
        for op, r in rows.items():
            ops[op] = max(ops.get(op, 0.0), r["share"])
    lines = [
        "",
        "Where one step's time goes (torch.profiler, self time per operator, first round; `-`: not among the top):",
        "",
        "| operator | " + " | ".join(profiled) + " |",
        "| --- |" + " ---: |" * len(profiled),
    ]
    for op in sorted(ops, key=ops.__getitem__, reverse=True):
        cells = [
            f"{rows[op]['share']:.1%} ({rows[op]['ms']:.0f} ms)" if op in rows else "-" for rows in profiled.values()
        ]
        lines.append(f"| `{op[:60]}` | " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run the comparison (or, with the internal `--worker`, one configuration) and print JSON lines."""
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

    def show(run: sbs.Run) -> None:
        print(json.dumps({"round": run.round, **(run.result or {})}), flush=True)

    try:
        done = sbs.run_interleaved([config(label, args) for label in args.configs], args.rounds, on_run=show)
    except sbs.ChildFailedError as err:
        sys.stderr.write(err.run.stderr[-3000:])
        raise SystemExit(f"compare_f5tts_train.py: {err}") from None
    runs = {label: [run.result or {} for run in done if run.config == label] for label in args.configs}
    dims = PRESETS[args.preset]
    frames = sum(args.mel_lengths)
    setup = {
        "model": ", ".join(f"{k} {v}" for k, v in dims.items()),
        "params": _params(dims),
        "mel_lengths": args.mel_lengths,
        "text_lengths": args.text_lengths,
        "frames": frames,
        "threads": args.threads,
        "steps": args.steps,
        "warmup": args.warmup,
        "rounds": args.rounds,
        "no_drop": args.no_drop,
    }
    gpu = next((r["gpu"] for records in runs.values() for r in records if "gpu" in r), None)
    setup["device"], setup["gpu"] = args.device, gpu
    result = {"machine": machine(), "setup": setup, **summarize(runs, frames, step_flops_over_peak(args, gpu))}
    print(json.dumps(result))
    if not args.no_write:
        sbs.write_results(args.out_dir / f"{STEM.format(device=args.device)}.json", result, markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
