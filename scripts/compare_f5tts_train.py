"""Training step of F5-TTS's own code against f5lite's: same weights, same batch, interleaved, one process each.

    PYTHONPATH=.f5tts python scripts/compare_f5tts_train.py   # writes scripts/results/f5tts_train_cpu.*
    make bench-gpu            # on a CUDA machine: dit_base, bf16, a bucket of 38,400 frames, compile, pack, fp8, AC
    make bench-gpu-rehearse   # the same command lines on this CPU with the tiny preset, in a few minutes

Both sides train the same DiT from the same random weights on the same synthetic batch, each step as its trainer
takes it through accelerate: F5-TTS's `CFM(DiT)`, fused AdamW, warm-up/decay schedule, clipping and `ema_pytorch`;
f5lite's `build_model`/`make_optimizer` from `+recipe=dit_base` plus `perf.*` overrides, its EMA and its trainer's
update. `--lengths-from bucket|shuffled --frames N` draws a speech-like batch (`benchmarks.models.speech_batch`).
MFU counts the model FLOPs of the real frames (`benchmarks.flops`) over the GPU's dense bf16 peak; `--profile N`
splits one more step into categories (`benchmarks.step_profile`) and lists its top N operators. A configuration
that cannot run here (fp8 needs CUDA 8.9+) is skipped in one line, a failed one is reported in one line and the
others go on; the results files are rewritten after every run. Method and caveats: docs/benchmarks.md.
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

import f5lite
from benchmarks import f5tts, results, runner
from benchmarks.flops import table_peak_flops, training_flops
from benchmarks.models import DITS, F5TTS_VOCAB_SIZE, SHAPES, padding_fraction, shared_weights, speech_batch
from benchmarks.models import synthetic_batch as synthetic_batch
from benchmarks.step_profile import EMA_RANGE, OPTIMIZER_RANGE, STEP_RANGE, categorize, profiler_rows, shares

VOCAB = F5TTS_VOCAB_SIZE
PRESETS = {name: DITS[name] for name in ("base", "mid", "tiny")}
LR, WARMUP_UPDATES, TOTAL_UPDATES = 7.5e-5, 20_000, 1_000_000


@dataclass(frozen=True)
class Config:
    """One measured configuration: which code, which precision, which f5lite `perf.*` overrides.

    `checkpoint_activations` is F5-TTS's own switch (every block); `compile` is what an F5-TTS user adds by hand:
    its DiT's `forward` wrapped in `torch.compile` (f5lite's is `perf.compile`, per block).
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


COMPILE, PACK, FP8 = "perf.compile=true", "perf.pack=true", "perf.fp8=true"
MASK = "model.attn_mask_enabled=true"  # perf.pack computes the padded step with padded keys masked: it needs this
CONFIGS: dict[str, Config] = {
    "F5-TTS fp32": Config("f5tts", "no"),
    "F5-TTS bf16": Config("f5tts", "bf16"),
    "F5-TTS bf16 + compile": Config("f5tts", "bf16", compile=True),  # the anchor on a GPU, as its users run it
    "f5lite fp32": Config("f5lite", "no"),
    "f5lite bf16": Config("f5lite", "bf16"),
    "f5lite bf16 + compile": Config("f5lite", "bf16", (COMPILE,)),
    # The levers of issue 40: no FLOPs on padding (packing; its padded twin masks the same keys) and FP8 matmuls.
    "f5lite bf16 + compile + mask": Config("f5lite", "bf16", (COMPILE, MASK)),
    "f5lite bf16 + compile + pack": Config("f5lite", "bf16", (COMPILE, MASK, PACK)),
    "f5lite bf16 + compile + fp8": Config("f5lite", "bf16", (COMPILE, FP8)),
    "f5lite bf16 + compile + pack + fp8": Config("f5lite", "bf16", (COMPILE, MASK, PACK, FP8)),
    # Ablations: f5lite with one of its step optimizations switched off.
    "f5lite fp32 (torch dropout)": Config("f5lite", "no", ("perf.dropout=torch",)),
    "f5lite bf16 (torch dropout)": Config("f5lite", "bf16", ("perf.dropout=torch",)),
    "F5-TTS bf16 + AC": Config("f5tts", "bf16", checkpoint_activations=True),
    "f5lite bf16 + AC every 2nd": Config("f5lite", "bf16", ("perf.ac.mode=full", "perf.ac.every_n=2")),
    "f5lite bf16 + AC": Config("f5lite", "bf16", ("perf.ac.mode=full", "perf.ac.every_n=1")),
}
DEFAULT_CONFIGS = ("F5-TTS fp32", "F5-TTS bf16", "f5lite fp32", "f5lite bf16", "f5lite bf16 + compile",
                   "f5lite fp32 (torch dropout)", "f5lite bf16 (torch dropout)")  # fmt: skip
"""What runs without `--configs`: the CPU comparison (activation checkpointing only costs time on a CPU)."""
PAIRS = {
    "fp32": ("f5lite fp32", "F5-TTS fp32"),
    "bf16": ("f5lite bf16", "F5-TTS bf16"),
    "bf16 + compile": ("f5lite bf16 + compile", "F5-TTS bf16 + compile"),
    "bf16 + AC": ("f5lite bf16 + AC", "F5-TTS bf16 + AC"),
    # Each lever against the anchor, F5-TTS compiled as its users run it.
    **{f"bf16 + compile + {lever}": (f"f5lite bf16 + compile + {lever}", "F5-TTS bf16 + compile")
       for lever in ("pack", "fp8", "pack + fp8")},
}  # fmt: skip
NO_DROP = {"audio_drop_prob": 0.0, "cond_drop_prob": 0.0}
"""The CFM keywords of both sides for `--no-drop`."""
COMPILED_GRAPHS = "inductor-generated code (compiled graphs)"
"""The profile's name for all of torch.compile's graphs together."""


def _configs(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names or (unknown := [n for n in names if n not in CONFIGS]):
        raise argparse.ArgumentTypeError(f"unknown configuration(s) {names and unknown}; choose from: "
                                         f"{', '.join(CONFIGS)}")  # fmt: skip
    return names


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--rounds", type=int, default=3, help="interleaved rounds (median kept)")
    add("--steps", type=int, default=4, help="timed steps per run")
    add("--warmup", type=int, default=2, help="untimed steps first (compilation happens here)")
    add("--threads", type=int, default=2, help="torch CPU threads")
    add("--device", choices=("cpu", "cuda"), default="cpu", help="where both sides train")
    add("--preset", choices=sorted(PRESETS), default="mid", help="model size")
    add("--mel-lengths", type=runner.int_list(1), default=[300, 340, 370, 400])
    add("--text-lengths", type=runner.int_list(1), default=[72, 80, 85, 90])
    add("--lengths-from", choices=SHAPES, help="draw a speech-like batch instead: a length-sorted bucket or a shuffled "
        "batch")  # fmt: skip
    add(
        "--frames",
        type=int,
        help="with --lengths-from: the padded batch's frame budget (default: sum of --mel-lengths)",
    )
    add("--configs", type=_configs, default=list(DEFAULT_CONFIGS), help="comma-separated")
    add("--out-dir", type=Path, default=Path(__file__).resolve().parent / "results", help="where the results go")
    add("--no-write", action="store_true", help="print only")
    add("--profile", type=int, default=0, metavar="N", help="profile one more step per run; report the top N ops")
    add("--worker", choices=list(CONFIGS), help=argparse.SUPPRESS)
    # F5-TTS draws its condition dropout from Python's unseeded `random`, f5lite from the step's generator: only
    # without dropout do both sides see the same inputs, which is what comparing their losses needs.
    add("--no-drop", action="store_true", help="train without condition dropout on both sides")
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
    major, minor = torch.cuda.get_device_capability(device)
    return (
        None
        if (major, minor) >= (8, 9)
        else f"perf.fp8 needs compute capability 8.9 or more; this GPU has {major}.{minor}"
    )


_PROFILED: torch.device | None = None
"""The device of the step being profiled (`profile_step`), else None: `phase` marks ranges only then."""


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """A profiler range around part of the step, only inside `profile_step`. On a GPU the device is synchronized at
    both edges, so that the kernels launched inside the range also run inside its interval."""
    if _PROFILED is None:
        yield
        return
    from torch.profiler import record_function

    sync = torch.cuda.synchronize if _PROFILED.type == "cuda" else lambda device: None
    sync(_PROFILED)
    with record_function(name):
        yield
        sync(_PROFILED)


def f5tts_step(config: Config, dims: dict, batch: tuple[torch.Tensor, ...], cfm_kwargs: dict) -> Callable[[int], float]:
    """F5-TTS's `Trainer.train` inner step on a fixed batch; returns `step(i) -> loss`."""
    from accelerate import Accelerator
    from ema_pytorch import EMA
    from f5_tts.model.backbones.dit import DiT as F5DiT
    from f5_tts.model.cfm import CFM as F5CFM
    from torch.optim import AdamW
    from torch.optim.lr_scheduler import LinearLR, SequentialLR

    device = batch[0].device
    accelerator = Accelerator(cpu=device.type == "cpu", mixed_precision=config.precision)
    backbone = F5DiT(**dims, text_num_embeds=VOCAB, mel_dim=100, checkpoint_activations=config.checkpoint_activations)
    missing, unexpected = backbone.to(device).load_state_dict(shared_weights(dims), strict=False)
    if unexpected or {name for name, _ in backbone.named_parameters()} & set(missing):
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
    config: Config, dims: dict, batch: tuple[torch.Tensor, ...], cfm_kwargs: dict
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
    accelerator = Accelerator(cpu=device.type == "cpu", mixed_precision=cfg.perf.precision,
                              step_scheduler_with_optimizer=False)  # fmt: skip
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
        loss = model(mel, text, lens, generator=torch.Generator(device=device).manual_seed(i))
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
    """One configuration in this process: warm up, time `--steps` steps, report the median and the peak memory."""
    torch.set_num_threads(args.threads)
    device, config = torch.device(args.device), CONFIGS[args.worker]
    batch = synthetic_batch(args.mel_lengths, args.text_lengths, device)
    build = f5tts_step if config.side == "f5tts" else f5lite_step
    step = build(config, PRESETS[args.preset], batch, NO_DROP if args.no_drop else {})
    losses = [step(i) for i in range(args.warmup)]
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    times = []
    for i in range(args.steps):
        start = time.perf_counter()
        losses.append(step(args.warmup + i))  # reading the loss waits for the device
        times.append(time.perf_counter() - start)
    record = {"label": args.worker, "step_s": statistics.median(times), "steps_s": [round(t, 4) for t in times],
              "losses": [round(v, 5) for v in losses],
              "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}  # fmt: skip
    if device.type == "cuda":
        record |= {"peak_gpu_bytes": torch.cuda.max_memory_allocated(device), "gpu": torch.cuda.get_device_name(device)}
    if args.profile:
        record["profile"] = profile_step(step, args.warmup + args.steps, device, args.profile)
    return record


def profile_step(step: Callable[[int], float], i: int, device: torch.device, top: int) -> dict[str, Any]:
    """Where one step's time goes: `{"basis", "step_ms", "categories": {category: {"ms", "share"}}, "ranges":
    {"optimizer", "ema"} (how many the step marked), "ops": [{"op", "ms", "share", "calls"}]}`, shares of the step's
    window, the `top` operators ranked by self time (device time on a GPU)."""
    global _PROFILED
    from torch.profiler import ProfilerActivity, profile, record_function

    cuda = device.type == "cuda"
    activities = [ProfilerActivity.CPU, *[ProfilerActivity.CUDA] * cuda]
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
        if row.key not in (STEP_RANGE, OPTIMIZER_RANGE, EMA_RANGE):
            # Each compiled graph has its own hashed name; together they are the compiler's generated code.
            name = COMPILED_GRAPHS if row.key.startswith("## Call CompiledFxGraph") else row.key
            us, calls = ops.get(name, [0.0, 0])
            ops[name] = [us + getattr(row, attr), calls + row.count]
    window = times["window"] or 1.0
    ranked = sorted(((name, us, calls) for name, (us, calls) in ops.items() if us > 0), key=lambda r: -r[1])
    return {
        "basis": "GPU kernels" if cuda else "CPU operators (self time)",
        "step_ms": round(window / 1e3, 3),
        "categories": shares(times),
        "ranges": {name: sum(r.name == marker for r in rows) for name, marker in
                   (("optimizer", OPTIMIZER_RANGE), ("ema", EMA_RANGE))},
        "ops": [{"op": name, "ms": round(us / 1e3, 2), "share": round(us / window, 4), "calls": int(calls)}
                for name, us, calls in ranked[:top]],
    }  # fmt: skip


def config(label: str, args: argparse.Namespace) -> runner.Config:
    """One configuration: this script's `--worker LABEL` mode, whose last stdout line is its JSON record."""
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", label, "--preset", args.preset]
    command += ["--steps", str(args.steps), "--warmup", str(args.warmup), "--threads", str(args.threads)]
    command += ["--device", args.device, "--mel-lengths", ",".join(map(str, args.mel_lengths))]
    command += ["--text-lengths", ",".join(map(str, args.text_lengths))]
    command += ["--no-drop"] * args.no_drop + (["--profile", str(args.profile)] if args.profile else [])
    return runner.Config(label, command)


def machine() -> dict[str, Any]:
    """CPU model, cores, versions and date."""
    return results.flat_header(results.run_header(["f5-tts", "accelerate"]))


def summarize(runs: dict[str, list[dict[str, Any]]], frames: int, flops: float | None = None) -> dict[str, Any]:
    """Medians per configuration and the f5lite/F5-TTS ratios at equal precision and best against best; `flops` is
    one step's model FLOPs over the GPU's peak FLOP/s (MFU = flops / step), None on a CPU."""
    table: dict[str, dict[str, Any]] = {}
    for label, records in runs.items():
        step = statistics.median(r["step_s"] for r in records)
        row = table[label] = {"step_s": round(step, 4), "frames_per_s": round(frames / step, 1),
                              "peak_rss_gb": round(statistics.median(r["peak_rss_bytes"] for r in records) / 1e9, 3),
                              "runs_step_s": [round(r["step_s"], 4) for r in records]}  # fmt: skip
        if records and "profile" in records[0]:  # the first round's profile: one step, for where the time goes
            row["profile"] = records[0]["profile"]
        if all("peak_gpu_bytes" in r for r in records):
            row["peak_gpu_gb"] = round(statistics.median(r["peak_gpu_bytes"] for r in records) / 1e9, 3)
        if flops is not None:
            row["mfu"] = round(flops / step, 4)
    pairs = {name: pair for name, pair in PAIRS.items() if set(pair) <= set(table)}
    sides = {side: [k for k in table if CONFIGS[k].side == side] for side in ("f5lite", "f5tts")}
    if all(sides.values()):
        best = {side: max(labels, key=lambda k: table[k]["frames_per_s"]) for side, labels in sides.items()}
        pairs["best"] = (best["f5lite"], best["f5tts"])
    ratios = {}
    for name, (ours, theirs) in pairs.items():
        memory = "peak_gpu_gb" if "peak_gpu_gb" in table[ours] and "peak_gpu_gb" in table[theirs] else "peak_rss_gb"
        ratios[name] = {"f5lite": ours, "f5tts": theirs,
                        "speed": round(table[theirs]["step_s"] / table[ours]["step_s"], 3),  # same frames
                        "memory": round(table[ours][memory] / table[theirs][memory], 3)}  # fmt: skip
    return {"configs": table, "ratios": ratios}


def step_flops_over_peak(args: argparse.Namespace, gpu: str | None) -> float | None:
    """One step's analytic model FLOPs over the GPU's dense bf16 peak (None on a CPU or a GPU not in the table)."""
    peak = table_peak_flops(gpu) if gpu else None
    if peak is None:
        return None
    with torch.device("meta"):
        backbone = f5lite.build_backbone("dit", **PRESETS[args.preset], text_num_embeds=VOCAB)
    return training_flops(backbone, args.mel_lengths, args.text_lengths) / peak


def _lengths(values: list[int]) -> str:
    """A batch's lengths for a sentence: all of them when few, else their range and median."""
    if len(values) <= 8:
        return ", ".join(map(str, values))
    return f"{min(values)}-{max(values)} (median {statistics.median(values):g})"


def markdown(result: dict[str, Any]) -> str:
    """The results as a Markdown page."""
    m, s = result["machine"], result["setup"]
    batch = f" ({s['lengths_from']})" if s.get("lengths_from") else ""
    lines = [
        f"# Training step: F5-TTS against f5lite ({s.get('gpu') or 'CPU'})", "", f"Machine: {results.describe(m)}.", "",
        f"Model: DiT {s['model']} ({s['params'] / 1e6:.1f}M parameters), the same random weights on both sides. "
        f"Batch{batch}: {len(s['mel_lengths'])} utterances, mel lengths {_lengths(s['mel_lengths'])}, text lengths "
        f"{_lengths(s['text_lengths'])} ({s['frames']} real frames; padded to {s.get('padded_frames', s['frames'])}, "
        f"{s.get('padding_fraction', 0.0):.1%} padding). {s['threads']} threads; per run {s['warmup']} warm-up + "
        f"{s['steps']} timed steps (median), each configuration in its own process, median of {s['rounds']} "
        "interleaved rounds. Step = forward, backward, clip, AdamW, LR schedule and EMA update, as each trainer does it.",
        "",
        "Frames/s counts real frames. MFU: the model FLOPs of the real frames (`benchmarks.flops.training_flops`: "
        "6 x per-frame weights x frames + the attention's 12 x layers x inner x length^2 per utterance; no "
        "activation-checkpointing recompute, no FLOPs on padding) over the GPU's dense bf16 peak (no sparsity).",
        "",
    ]  # fmt: skip
    rows = [[label, f"{r['step_s']:.3f}", f"{r['frames_per_s']:.0f}", f"{r['mfu']:.1%}" if "mfu" in r else "-",
             f"{r['peak_gpu_gb']:.2f}" if "peak_gpu_gb" in r else "-", f"{r['peak_rss_gb']:.2f}",
             ", ".join(f"{t:.3f}" for t in r["runs_step_s"])] for label, r in result["configs"].items()]  # fmt: skip
    head = ["configuration", "step (s)", "frames/s", "MFU", "peak GPU memory (GB)", "peak RSS (GB)", "runs (s)"]
    lines += results.table(head, rows, " rrrrrr")
    if result["ratios"]:
        rows = []
        for name, r in result["ratios"].items():
            title = "best vs best" if name == "best" else f"equal precision ({name})"
            if name.startswith("bf16 + compile +"):  # a lever of f5lite's against the anchor
                title = f"{name[len('bf16 + compile + ') :]} against compiled F5-TTS"
            rows.append([title, r["f5lite"], r["f5tts"], f"{r['speed']:.2f}x", f"{r['memory']:.2f}x"])
        lines += [
            "",
            *results.table(["comparison", "f5lite", "F5-TTS", "speed (f5lite/F5-TTS)", "memory"], rows, "   rr"),
        ]
    notes = [
        f"- {label}: {kind}: {why}" for kind in ("skipped", "failed") for label, why in result.get(kind, {}).items()
    ]
    return (
        "\n".join(lines + (["", "Not measured:", "", *notes] if notes else []) + profile_table(result["configs"]))
        + "\n"
    )


CATEGORY_TITLES = {
    "matmul": "matmuls (GEMMs)", "attention": "attention", "convolution": "convolutions",
    "elementwise": "elementwise, norms, modulation (fused kernels included)", "optimizer": "optimizer (clip, AdamW, LR)",
    "ema": "EMA update", "copies": "copies (memcpy, memset, casts)", "other": "other",
    "idle": "idle (no kernel running) / outside any operator on a CPU",
}  # fmt: skip


def profile_table(configs: dict[str, dict[str, Any]]) -> list[str]:
    """Markdown lines: each profiled configuration's step split into categories, then its top operators (none
    without `--profile`)."""
    profiled = {label: row["profile"] for label, row in configs.items() if "profile" in row}
    lines = ["", "## Where one step's time goes", "",
             "torch.profiler, one step after the timed ones, first round (`benchmarks.step_profile`): on a GPU the "
             "device's kernels, idle = the step's wall time minus the union of the kernel intervals; on a CPU the "
             "operators' self times, idle = time inside no operator (Python, dispatch). Shares are of the profiled "
             "step."] if profiled else []  # fmt: skip
    for label, prof in profiled.items():
        lines += ["", f"### {label}", "", f"Profiled step: {prof['step_ms']:.1f} ms ({prof['basis']}).", ""]
        cells = [(title, prof["categories"][c]) for c, title in CATEGORY_TITLES.items()]
        lines += results.table(
            ["where", "ms", "share"], [[t, f"{c['ms']:.2f}", f"{c['share']:.1%}"] for t, c in cells], " rr"
        )
        if prof["ops"]:
            rows = [[f"`{op['op'][:70]}`", f"{op['ms']:.2f}", f"{op['share']:.1%}", op["calls"]] for op in prof["ops"]]
            lines += ["", *results.table(["top operator", "ms", "share", "calls"], rows, " rrr")]
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
    if any(CONFIGS[k].side == "f5tts" for k in args.configs) and (why := f5tts.missing("ema_pytorch")):
        print(f"compare_f5tts_train.py: F5-TTS is not importable ({why}); install it beside and set "
              "PYTHONPATH=/tmp/f5pkg (see benchmarks/f5tts.py)", file=sys.stderr)  # fmt: skip
        return 2
    skipped = {label: why for label in args.configs if (why := unavailable(CONFIGS[label], torch.device(args.device)))}
    for label, why in skipped.items():
        print(f"compare_f5tts_train.py: {label}: {why}", file=sys.stderr)
    labels = [label for label in args.configs if label not in skipped]
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label in labels}
    failed: dict[str, str] = {}
    dims, frames = PRESETS[args.preset], sum(args.mel_lengths)
    with torch.device("meta"):
        params = sum(p.numel() for p in f5lite.build_backbone("dit", **dims, text_num_embeds=VOCAB).parameters())
    setup = {"model": ", ".join(f"{k} {v}" for k, v in dims.items()), "params": params,
             "lengths_from": args.lengths_from, "mel_lengths": args.mel_lengths, "text_lengths": args.text_lengths,
             "frames": frames, "padded_frames": len(args.mel_lengths) * max(args.mel_lengths),
             "padding_fraction": round(padding_fraction(args.mel_lengths), 4), "threads": args.threads,
             "steps": args.steps, "warmup": args.warmup, "rounds": args.rounds, "no_drop": args.no_drop,
             "device": args.device}  # fmt: skip
    header, path = machine(), args.out_dir / f"f5tts_train_{args.device}.json"

    def result() -> dict[str, Any]:
        done = {label: records for label, records in runs.items() if records}
        gpu = next((r["gpu"] for records in done.values() for r in records if "gpu" in r), None)
        table = summarize(done, frames, step_flops_over_peak(args, gpu))
        return {"machine": header, "setup": {**setup, "gpu": gpu}, **table, "skipped": skipped, "failed": failed}

    def show(run: runner.Run) -> None:
        if run.ok:
            runs[run.config].append(run.result or {})
            print(json.dumps({"round": run.round, **(run.result or {})}), flush=True)
        else:  # one line here, the end of its stderr below; the other configurations go on
            failed.setdefault(run.config, run.failure)
            sys.stderr.write(run.stderr[-3000:])
            print(f"compare_f5tts_train.py: {run.failure}", file=sys.stderr, flush=True)
        if not args.no_write:  # now, not at the end: a benchmark cut short keeps what it measured
            current = result()
            results.write_results(path, current, markdown(current))

    if labels:
        runner.run_interleaved([config(label, args) for label in labels], args.rounds, check=False, on_run=show)
    final = result()
    print(json.dumps(final))
    if not args.no_write and not labels:
        results.write_results(path, final, markdown(final))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
