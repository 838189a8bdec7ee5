"""Training-step benchmark: f5lite's configurations and F5-TTS's own code on one synthetic batch, a process each.

    python scripts/bench_train.py --preset mid perf.precision=bf16 perf.compile=true   # one JSON line, this process
    python scripts/bench_train.py --configs ablation --threads 2    # f5lite's optimizations (what `make bench` runs)
    PYTHONPATH=.f5tts python scripts/bench_train.py --configs f5tts --threads 2 --rounds 3    # against F5-TTS
    make bench-gpu            # a CUDA machine: dit_base, bf16, 38,400 frames; compiled F5-TTS vs compile, pack, fp8, AC

A configuration is a label, `SIDE [fp32|bf16] [+ LEVER]...` (`LEVERS`), e.g. `F5-TTS bf16 + compile`; `--configs`
takes labels and `SETS`, runs each in its own process (rounds interleaved) and rewrites `ablation_<device>` (with
F5-TTS `f5tts_train_<device>`) .json and .md after every run. Both sides train the same random weights (recipe
dit_base) on the same batch as their trainers do. Reported: step time and its split, real frames/s, peak memory, bytes
saved for backward, MFU, ratios against the first configuration and between the sides, checkpoint stalls, and with
`--profile N` where one more step's time goes. Method and caveats: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from benchmarks import f5tts, results, runner, step_profile
from benchmarks.flops import peak_flops, training_flops
from benchmarks.models import DITS, F5TTS_VOCAB_SIZE, SHAPES, padding_fraction, shared_weights, speech_batch
from benchmarks.models import synthetic_batch as synthetic_batch
from f5lite.config import compose_config
from f5lite.models import build_backbone
from f5lite.models.cfm import CFM
from f5lite.storage.store import CheckpointStore
from f5lite.storage.tree import flatten
from f5lite.train.precision import choose_precision
from f5lite.train.schedule import lr_factor
from f5lite.train.setup import build_model, make_optimizer
from f5lite.train.update import optimizer_update

PRESETS = {name: [f"model.{k}={v}" for k, v in dims.items()] for name, dims in DITS.items()} | {"base": []}
"""f5lite's model size over the recipe (`base`: the recipe's own); F5-TTS's DiT takes `DITS[preset]`."""
AC, MASK = "perf.ac.mode=full", "model.attn_mask_enabled=true"
LEVERS: dict[str, tuple[str, ...]] = {
    "compile": ("perf.compile=true",),  # F5-TTS: its DiT's forward in torch.compile, the one line its users add
    "AC": (AC, "perf.ac.every_n=1"),  # F5-TTS: its `checkpoint_activations` (every block)
    "AC every 2nd": (AC, "perf.ac.every_n=2"),
    "AC every 4th": (AC, "perf.ac.every_n=4"),
    "AC selective": ("perf.ac.mode=selective",),
    "memory budget 0.5": ("perf.memory_budget=0.5", "model.dropout=0"),
    "EMA on CPU": ("ema.device=cpu",),
    "torch dropout": ("perf.dropout=torch",),
    "mask": (MASK,),  # the padded twin of `pack`, which computes the padded step with padded keys masked
    "pack": (MASK, "perf.pack=true"),
    "fp8": ("perf.fp8=true",),
    "sync checkpoint": (),
    "async checkpoint": (),
}
"""f5lite's levers as config overrides; F5-TTS's code has `compile` and `AC`."""
SETS = {
    "ablation": "f5lite fp32,f5lite bf16,f5lite fp32 + compile,f5lite fp32 + AC,f5lite fp32 + AC every 2nd,"
    "f5lite fp32 + AC every 4th,f5lite fp32 + AC selective,f5lite fp32 + compile + memory budget 0.5,"
    "f5lite fp32 + EMA on CPU,f5lite fp32 + sync checkpoint,f5lite fp32 + async checkpoint,f5lite bf16 + compile,"
    "f5lite bf16 + compile + AC every 2nd",
    "f5tts": "F5-TTS fp32,F5-TTS bf16,f5lite fp32,f5lite bf16,f5lite bf16 + compile,f5lite fp32 + torch dropout,"
    "f5lite bf16 + torch dropout",  # activation checkpointing only costs time on a CPU
}
"""Named lists of configurations for `--configs`: f5lite's ablation against fp32, and the CPU comparison."""
LR, WARMUP_UPDATES, TOTAL_UPDATES = 7.5e-5, 20_000, 1_000_000  # F5-TTS's schedule
NO_DROP = {"audio_drop_prob": 0.0, "cond_drop_prob": 0.0}  # the CFM keywords of both sides for `--no-drop`


def parse_label(label: str) -> tuple[str, str | None, list[str]]:
    """A configuration's side, precision (`no`, `bf16`, or None: the recipe's) and levers.

    Raises:
        argparse.ArgumentTypeError: Not `SIDE [fp32|bf16] [+ LEVER]...`, or a lever that side has not.
    """
    head, *levers = [part.strip() for part in label.split("+")]
    side, *precision = head.split()
    sides = {"f5lite": set(LEVERS), "F5-TTS": {"compile", "AC"}}
    if side not in sides or precision not in ([], ["fp32"], ["bf16"]) or not set(levers) <= sides[side]:
        why = f"f5lite's levers are {', '.join(LEVERS)}; F5-TTS's compile and AC; sets: {', '.join(SETS)}"
        raise argparse.ArgumentTypeError(f"{label!r} is no SIDE [fp32|bf16] [+ LEVER]...: {why}")
    return side, {"fp32": "no", "bf16": "bf16", None: None}[next(iter(precision), None)], levers


def labels(text: str) -> list[str]:
    """An argparse `type`: comma-separated labels and sets, each label checked."""
    names = [n for w in text.split(",") if w.strip() for n in SETS.get(w.strip(), w.strip()).split(",")]
    return list(dict.fromkeys(n for n in names if parse_label(n)))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options; words of the form `key=value` are f5lite config overrides."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add, count = parser.add_argument, runner.at_least(1)
    add("overrides", nargs="*", help="f5lite config overrides, e.g. perf.compile=true")
    add("--config", type=lambda t: labels(t)[0], default="f5lite", help="the one configuration run in this process")
    add("--configs", type=labels, default=[], help="labels and sets, comma-separated: each in its own process")
    add("--recipe", default="dit_base", help="f5lite's recipe (dit_base: F5-TTS v1 Base, the shared weights)")
    add("--preset", choices=sorted(PRESETS), default="mid", help="model size")
    add("--mel-lengths", type=runner.int_list(1), default=[300, 340, 370, 400])
    add("--text-lengths", type=runner.int_list(1), default=[72, 80, 85, 90])
    add("--lengths-from", choices=SHAPES, help="draw a speech-like batch: a length-sorted bucket or a shuffled batch")
    add("--frames", type=count, help="with --lengths-from: the padded frame budget (default: sum of --mel-lengths)")
    add("--steps", type=count, default=5, help="timed steps per run")
    add("--warmup", type=runner.at_least(0), default=2, help="untimed steps first (compilation happens here)")
    add("--rounds", type=count, default=1, help="--configs: runs of each, interleaved (the median kept)")
    add("--device", choices=("cpu", "cuda"), default="cuda" if torch.cuda.is_available() else "cpu")
    add("--threads", type=count, help="torch CPU threads")
    add("--clock", choices=("wall", "cpu"), default="wall", help="time by the wall clock or this process's CPU time")
    add("--profile", type=runner.at_least(0), default=0, metavar="N", help="profile one more step: the top N operators")
    # F5-TTS draws its condition dropout from Python's unseeded `random`: only without it do the losses compare.
    add("--no-drop", action="store_true", help="train without condition dropout on both sides")
    add("--out-dir", type=Path, default=Path(__file__).resolve().parent / "results", help="where results go")
    args = parser.parse_args(argv)
    if len(args.mel_lengths) != len(args.text_lengths) or (args.frames is not None and not args.lengths_from):
        parser.error("--mel-lengths and --text-lengths need as many items; --frames needs --lengths-from")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no CUDA device here")
    if args.lengths_from:  # the children get the drawn lengths spelled out
        args.mel_lengths, args.text_lengths = speech_batch(args.lengths_from, args.frames or sum(args.mel_lengths))
    return args


class Clock:
    """Times a step's parts, a GPU synchronized at their edges; the optimizer and the EMA are profiler ranges too."""

    def __init__(self, device: torch.device, read: Callable[[], float]) -> None:
        self.device, self.read, self.last, self.times = device, read, 0.0, {}

    def tick(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self.last = self.read()

    @contextlib.contextmanager
    def __call__(self, part: str) -> Iterator[None]:
        from torch.profiler import record_function

        ranges = {"optimizer": step_profile.OPTIMIZER_RANGE, "ema": step_profile.EMA_RANGE}
        with record_function(ranges[part]) if part in ranges else contextlib.nullcontext():
            start = self.last
            yield
            self.tick()
        self.times[part] = self.last - start


def f5lite_step(args: argparse.Namespace, batch: tuple[torch.Tensor, ...], clock: Clock) -> tuple[Any, ...]:
    """f5lite's trainer update on a fixed batch: `step(i) -> loss`, the backbone, what a checkpoint saves (`() ->
    (tensors, skeletons)`) and the precision it runs."""
    from accelerate import Accelerator

    device, (_, precision, levers) = batch[0].device, parse_label(args.config)
    overrides = [f"+recipe={args.recipe}", *PRESETS[args.preset], *[f"perf.precision={precision}"] * bool(precision)]
    cfg = compose_config([*overrides, *dict.fromkeys(w for lever in levers for w in LEVERS[lever]), *args.overrides])
    precision = choose_precision(cfg.perf.precision, device).precision  # `auto` as the trainer resolves it
    if precision == "fp16":
        raise ValueError("perf.precision=fp16 is not benchmarked (use no or bf16)")
    accelerator = Accelerator(cpu=device.type == "cpu", mixed_precision=precision, step_scheduler_with_optimizer=False)
    setup = build_model(cfg, F5TTS_VOCAB_SIZE, None, device)
    backbone, ema = setup.backbone, setup.ema
    if args.recipe == "dit_base":  # F5-TTS's architecture: the weights both sides start from
        backbone.load_state_dict(shared_weights(DITS[args.preset]))
        ema.copy_from(backbone)
    cfm = CFM(backbone, **(NO_DROP if args.no_drop else {}))
    model, optimizer = accelerator.prepare(cfm, make_optimizer(cfg.optim, backbone, device))
    applied = torch.zeros((), dtype=torch.long, device=device)

    def step(i: int) -> float:
        nonlocal applied
        with clock("forward"):
            loss = model(*batch, generator=torch.Generator(device=device).manual_seed(i))
        with clock("backward"):
            accelerator.backward(loss)
        with clock("optimizer"):  # the trainer's own update
            factor = lr_factor(applied, cfg.optim.warmup_updates, cfg.optim.max_updates)
            _, finite = optimizer_update(
                accelerator, model, optimizer, loss, cfg.optim.max_grad_norm, cfg.optim.lr * factor
            )
            applied = applied + finite.long()
        with clock("ema"):
            ema.update(backbone, finite)
        return float(loss.detach())

    def state() -> tuple[dict[str, Any], dict[str, Any]]:
        skeleton, tensors = flatten(optimizer.state_dict(), prefix="optimizer")
        return {"model": backbone.state_dict(), "ema": ema.state_dict(), "optimizer": tensors}, {"o": skeleton}

    return step, backbone, state, precision


def f5tts_step(args: argparse.Namespace, batch: tuple[torch.Tensor, ...], clock: Clock) -> tuple[Any, ...]:
    """F5-TTS's `Trainer.train` inner step on a fixed batch, as `f5lite_step` (its backbone's f5lite twin, no save)."""
    from accelerate import Accelerator
    from ema_pytorch import EMA
    from f5_tts.model.backbones.dit import DiT
    from f5_tts.model.cfm import CFM as F5CFM
    from torch.optim import AdamW
    from torch.optim.lr_scheduler import LinearLR, SequentialLR

    device, dims, (_, precision, levers) = batch[0].device, DITS[args.preset], parse_label(args.config)
    if args.overrides:
        raise ValueError(f"config overrides are f5lite's, not for {args.config}: {' '.join(args.overrides)}")
    accelerator = Accelerator(cpu=device.type == "cpu", mixed_precision=precision or "no")
    backbone = DiT(**dims, text_num_embeds=F5TTS_VOCAB_SIZE, mel_dim=100, checkpoint_activations="AC" in levers)
    missing, unexpected = backbone.to(device).load_state_dict(shared_weights(dims), strict=False)
    if unexpected or {name for name, _ in backbone.named_parameters()} & set(missing):
        raise SystemExit(f"bench_train.py: weights do not match F5-TTS's DiT: {missing} {unexpected}")
    if "compile" in levers:
        backbone.forward = torch.compile(backbone.forward)  # type: ignore[method-assign]
    model = F5CFM(transformer=backbone, mel_spec_kwargs={"n_mel_channels": 100}, **(NO_DROP if args.no_drop else {}))
    ema = EMA(model, include_online_model=False)  # F5-TTS's Trainer: default ema_kwargs
    optimizer = AdamW(model.parameters(), lr=LR, fused=True)
    warmup = LinearLR(optimizer, start_factor=1e-8, end_factor=1.0, total_iters=WARMUP_UPDATES)
    decay = LinearLR(optimizer, start_factor=1.0, end_factor=1e-8, total_iters=TOTAL_UPDATES - WARMUP_UPDATES)
    scheduler = SequentialLR(optimizer, schedulers=[warmup, decay], milestones=[WARMUP_UPDATES])
    model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)

    def step(i: int) -> float:
        torch.manual_seed(i)
        with accelerator.accumulate(model):  # one process, no accumulation: every step syncs its gradients
            with clock("forward"):
                loss, _, _ = model(batch[0], text=batch[1], lens=batch[2])
            with clock("backward"):
                accelerator.backward(loss)
            with clock("optimizer"):
                accelerator.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
        with clock("ema"):
            ema.update()
        return float(loss.detach())

    with torch.device("meta"):
        twin = build_backbone("dit", **dims, text_num_embeds=F5TTS_VOCAB_SIZE)
    return step, twin, None, precision or "no"


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """One configuration in this process: warm up, time the steps, count the bytes saved for backward; its record."""
    torch.set_num_threads(args.threads or torch.get_num_threads())
    device, (side, _, levers) = torch.device(args.device), parse_label(args.config)
    clock = Clock(device, time.process_time if args.clock == "cpu" else time.perf_counter)
    batch = synthetic_batch(args.mel_lengths, args.text_lengths, device)
    step, backbone, state, precision = (f5tts_step if side == "F5-TTS" else f5lite_step)(args, batch, clock)
    losses, parts, saved, end = [step(i) for i in range(args.warmup)], [], [], args.warmup + args.steps
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    for i in range(args.warmup, end):
        clock.tick()
        losses.append(step(i))
        parts.append(dict(clock.times))

    def pack(t: torch.Tensor) -> torch.Tensor:  # counts what autograd keeps for the backward pass, in one more step
        saved.append(t.numel() * t.element_size())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        step(end)
    flops = training_flops(backbone, args.mel_lengths, args.text_lengths)
    peak, source = peak_flops(device, torch.bfloat16 if precision == "bf16" else torch.float32)
    step_s = statistics.median(totals := [sum(p.values()) for p in parts])
    record = {"label": " ".join([args.config, *args.overrides]), "step_s": step_s, "steps_s": totals}
    record |= {f"{part}_s": statistics.median(p[part] for p in parts) for part in parts[0]}
    record |= {"frames_per_s": sum(args.mel_lengths) / step_s, "losses": [round(v, 5) for v in losses]}
    record |= {"params": sum(p.numel() for p in backbone.parameters()), "threads": torch.get_num_threads()}
    record |= {"precision": precision, "clock": args.clock, "saved_for_backward_bytes": sum(saved)}
    record["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    record |= {"model_flops_per_step": flops, "peak_flops": peak, "peak_source": source}
    record["mfu"] = flops / step_s / peak if peak else None
    if device.type == "cuda":
        record |= {"peak_gpu_bytes": torch.cuda.max_memory_allocated(device), "gpu": torch.cuda.get_device_name(device)}
    if ckpt := next((mode for mode in ("sync", "async") if f"{mode} checkpoint" in levers), None):
        record |= checkpoint_stall(state, ckpt)
    if args.profile:
        record["profile"] = step_profile.profile(lambda: step(end + 1), device, args.profile)
    return record


def checkpoint_stall(state: Callable[[], tuple[dict, dict]], mode: str) -> dict[str, Any]:
    """How long a save blocks the training loop (median of 3), and how long until it is on disk."""
    stalls, totals = [], []
    with tempfile.TemporaryDirectory() as root:
        store = CheckpointStore(Path(root), keep_last=1, async_save=mode == "async")
        for i in range(3):
            tensors, skeletons = state()
            start = time.perf_counter()
            store.save(i + 1, tensors, skeletons)
            stalls.append(time.perf_counter() - start)
            store.wait()
            totals.append(time.perf_counter() - start)
        store.close()
    return {"ckpt": mode, "ckpt_stall_s": statistics.median(stalls), "ckpt_write_s": statistics.median(totals)}


def unavailable(label: str, device: torch.device) -> str | None:
    """Why `label` cannot run on `device` (one line), or None when it can."""
    capability = torch.cuda.get_device_capability(device) if device.type == "cuda" else None
    if "fp8" in parse_label(label)[2] and (capability or (0, 0)) < (8, 9):
        where = f"this GPU has {capability}" if capability else "skipped on the CPU"
        return f"perf.fp8 needs a CUDA GPU of compute capability 8.9 or more; {where}"
    return None


def config(label: str, args: argparse.Namespace) -> runner.Config:
    """One configuration: this script's child, which measures it with the parent's settings."""
    spec = {**vars(args), "config": label, "configs": [], "out_dir": str(args.out_dir)}
    return runner.child_config(label, Path(__file__).resolve(), spec)


def summarize(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Each configuration's median round, its speed-up and saved-bytes ratio against the first configuration, and the
    f5lite/F5-TTS ratios: each f5lite configuration against the F5-TTS one of the longest common label, best vs best."""
    table = {label: runner.median_record(records, "step_s") for label, records in runs.items() if records}
    if base := table.get(next(iter(runs), "")):
        for row in table.values():
            row["speedup"] = base["step_s"] / row["step_s"]  # the same frames
            row["saved_bytes_ratio"] = row["saved_for_backward_bytes"] / base["saved_for_backward_bytes"]
    pairs, sides = {}, {side: [k for k in table if k.startswith(side)] for side in ("f5lite", "F5-TTS")}
    for label in sides["f5lite"]:
        parts = label.split(" + ")
        twins = ["F5-TTS" + " + ".join(parts[:n])[len("f5lite") :] for n in range(len(parts), 0, -1)]
        if twin := next((t for t in twins if t in table), None):
            pairs[label] = (label, twin)
    if all(sides.values()):
        pairs["best"] = tuple(max(sides[s], key=lambda k: table[k]["frames_per_s"]) for s in ("f5lite", "F5-TTS"))
    ratios = {}
    for name, (ours, theirs) in pairs.items():
        key = "peak_gpu_bytes" if all("peak_gpu_bytes" in table[k] for k in (ours, theirs)) else "peak_rss_bytes"
        speed, memory = table[theirs]["step_s"] / table[ours]["step_s"], table[ours][key] / table[theirs][key]
        ratios[name] = {"f5lite": ours, "f5tts": theirs, "speed": speed, "memory": memory}
    return {"configs": table, "ratios": ratios}


def markdown(doc: dict[str, Any]) -> str:
    """The results as a Markdown page: the setup, a row per configuration, the ratios, the stalls, the profiles."""
    s, rows, first = doc["setup"], [], next(iter(doc["configs"].values()), {})
    mel, text = s["mel_lengths"], s["text_lengths"]
    intro = (
        f"Recipe {s['recipe']}, preset {s['preset']} ({first.get('params', 0) / 1e6:.1f}M parameters), same weights on "
        f"each side; {len(mel)} utterances ({s['lengths_from'] or 'given'}) of {min(mel)}-{max(mel)} mel frames and "
        f"{min(text)}-{max(text)} tokens: {s['frames']} real frames, {s['padding_fraction']:.1%} padding. Per run "
        f"{s['warmup']} warm-up + {s['steps']} timed steps (median, {s['clock']} clock), each configuration in its own "
        f"process, median of {s['rounds']} interleaved round(s). Speed-up and ratio (bytes saved for backward) against "
        "the first row; peak memory: CUDA's max allocated, else peak RSS. MFU: the model FLOPs of the real frames "
        f"(`benchmarks.flops`; no recompute, no padding) over {first.get('peak_source', 'the peak')}."
    )
    for label, r in doc["configs"].items():
        stall = f" (save stall {r['ckpt_stall_s']:.3f} s)" if "ckpt_stall_s" in r else ""
        memory, mfu = r.get("peak_gpu_bytes", r["peak_rss_bytes"]) / 1e9, f"{r['mfu']:.1%}" if r["mfu"] else "-"
        cells = [f"{r['step_s']:.3f}", f"{r['frames_per_s']:.0f}", f"{r.get('speedup', 1):.2f}x", mfu, f"{memory:.2f}"]
        cells += [f"{r['saved_for_backward_bytes'] / 1e6:.0f}", f"{r.get('saved_bytes_ratio', 1):.2f}"]
        rows.append([label + stall, *cells, ", ".join(f"{t:.3f}" for t in r["step_s_rounds"])])
    head = ["configuration", "step (s)", "frames/s", "speed-up", "MFU", "peak memory (GB)", "saved for backward (MB)"]
    lines = [f"# Training step ({s['gpu'] or s['device']})", "", f"Machine: {results.describe(doc)}."]
    lines += ["", intro, "", *results.table([*head, "ratio", "runs (s)"], rows, " rrrrrrr")]
    if doc["ratios"]:
        rows = [[k, r["f5tts"], f"{r['speed']:.2f}x", f"{r['memory']:.2f}x"] for k, r in doc["ratios"].items()]
        head = ["f5lite (best: each side's fastest)", "F5-TTS", "speed (f5lite/F5-TTS)", "memory"]
        lines += ["", *results.table(head, rows, "  rr")]
    stalls = {r["ckpt"]: r["ckpt_stall_s"] for r in doc["configs"].values() if "ckpt" in r}
    if {"sync", "async"} <= stalls.keys():
        sync, share = stalls["sync"], f"{stalls['async'] / stalls['sync']:.0%} of a synchronous save"
        lines += ["", f"Checkpoint stall: async {stalls['async']:.3f} s per save, sync {sync:.3f} s ({share})."]
    notes = [f"- {label}: {kind}: {why}" for kind in ("skipped", "failed") for label, why in doc[kind].items()]
    lines += ["", "Not measured:", "", *notes] if notes else []
    profiles = {label: r["profile"] for label, r in doc["configs"].items() if "profile" in r}
    return "\n".join(lines + step_profile.markdown(profiles)) + "\n"


def run_configs(args: argparse.Namespace) -> int:
    """Each configuration in its own process, rounds interleaved, the results written after every run; returns 0, 1
    when a configuration failed (the others go on), or 2 when F5-TTS is needed and missing."""
    with_f5tts = any(label.startswith("F5-TTS") for label in args.configs)
    if with_f5tts and (why := f5tts.missing("ema_pytorch")):
        hint = "install it beside and set PYTHONPATH=/tmp/f5pkg (see benchmarks/f5tts.py)"
        print(f"bench_train.py: F5-TTS is not importable ({why}); {hint}", file=sys.stderr)
        return 2
    skipped = {label: why for label in args.configs if (why := unavailable(label, torch.device(args.device)))}
    for label, why in skipped.items():
        print(f"bench_train.py: {label}: {why}", file=sys.stderr)
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label in args.configs if label not in skipped}
    failed: dict[str, str] = {}
    path = args.out_dir / f"{'f5tts_train' if with_f5tts else 'ablation'}_{args.device}.json"
    head = results.run_header(["f5-tts", "accelerate"])
    setup = {k: v for k, v in vars(args).items() if k not in ("overrides", "config", "configs", "out_dir")}
    setup |= {"frames": sum(args.mel_lengths), "padding_fraction": padding_fraction(args.mel_lengths)}

    def document() -> dict[str, Any]:  # written after every run: a benchmark cut short keeps what it measured
        gpu = next((r["gpu"] for records in runs.values() for r in records if "gpu" in r), None)
        doc = {**head, "setup": {**setup, "gpu": gpu}, **summarize(runs), "skipped": skipped, "failed": failed}
        results.write_results(path, doc, markdown(doc))
        return doc

    def show(run: runner.Run) -> None:
        if run.ok:
            runs[run.config].append(run.result or {})
            print(json.dumps({"round": run.round, **(run.result or {})}), flush=True)
        else:  # the end of its stderr, then one line; the other configurations go on
            failed.setdefault(run.config, run.failure)
            sys.stderr.write(run.stderr[-3000:])
            print(f"bench_train.py: {run.failure}", file=sys.stderr, flush=True)
        document()

    if runs:
        runner.run_interleaved([config(label, args) for label in runs], args.rounds, check=False, on_run=show)
    print(json.dumps(document()))
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    """One configuration in this process, its JSON line printed (2: refused), or `--configs` (`run_configs`)."""
    spec = runner.child_spec(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv) if spec is None else argparse.Namespace(**spec)
    if args.configs:
        return run_configs(args)
    try:
        print(json.dumps(measure(args)))
    except ValueError as err:
        print(f"bench_train.py: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
