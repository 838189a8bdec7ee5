"""Sampling speed: real-time factor and backbone calls of `f5lite.sample` for four step settings, batch 1 and 8.

What is timed. Inputs are made once per batch size: a reference mel of `--ref-seconds` (random values), random text
ids (`TEXT_IDS_PER_SECOND` per second of reference plus generated audio), and a duration of reference frames plus
`round(--seconds * 93.75)` generated frames for every utterance of the batch. One timed run is one call of
`f5lite.sample(backbone, cond, text, duration, options, seed=0)`: text conditioning, noise, the ODE loop with CFG
(cfg_strength 2, sway -1) and the reference overwrite, with a CUDA synchronize after it on a GPU. The vocoder
(Vocos with the architecture of `charactr/vocos-mel-24khz`, random weights: the same cost as trained ones) decodes
the generated frames only, as F5-TTS's pipeline does; it is timed on its own and added. Every number is the median
of `--repeats` runs after `--warmup` untimed runs. Not timed: building the model, text tokenization, loading or
resampling a reference clip, and writing audio.

The four settings: 32 uniform steps; 16 steps (schedule `auto`, which is F5-TTS's EPSS table for 16); 7 EPSS steps;
7 EPSS steps with CFG-Zero* (first step zero-initialized, so 6 backbone calls, and the optimized scale). Backbone calls
and their batch size are counted with a forward hook over all runs (with CFG every call is one batch of 2b).

Real-time factor = time / seconds of generated audio in the whole batch (a batch of 8 divides by 8 times the audio).

Output: one JSON line per setting and batch size on stdout, and `scripts/results/infer_<device>.json` plus
`infer_<device>.md` (with the machine: CPU model or GPU name, threads, torch version, load average). `--quick` uses a
tiny DiT and 1 repeat (files `infer_<device>_quick.*`), for tests and CI.

Usage:
    python scripts/bench_infer.py --device cpu --threads 2 --batches 1,8
    python scripts/bench_infer.py --recipe dit_base --device cuda --dtype bf16
    python scripts/bench_infer.py --quick --seconds 1 depth=4      # key=value: backbone constructor overrides
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

import f5lite
from f5lite.audio.constants import HOP_LENGTH, N_MELS, SAMPLE_RATE
from f5lite.audio.vocoder import VocosVocoder
from f5lite.bench import F5TTS_VOCAB_SIZE
from f5lite.bench import MID_DIT as BENCH_MID_DIT
from f5lite.bench import sidebyside as sbs
from f5lite.infer.loading import resolve_device
from f5lite.models import apply_inference_compile, backbone_kwargs
from f5lite.models.dtypes import WEIGHT_DTYPES
from f5lite.sampling import SamplerOptions

REPO = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO / "scripts" / "results"
VOCOS_CONFIG = REPO / "tests" / "assets" / "vocos" / "config.yaml"

TEXT_NUM_EMBEDS = F5TTS_VOCAB_SIZE  # also for recipes that take it from a vocab.txt
# The mid-size DiT, the model of the side-by-side F5-TTS comparisons (scripts/compare_f5tts_*.py).
MID_DIT: dict[str, Any] = {**BENCH_MID_DIT, "text_num_embeds": TEXT_NUM_EMBEDS}
QUICK_DIT: dict[str, Any] = {
    "dim": 64,
    "depth": 2,
    "heads": 4,
    "dim_head": 16,
    "ff_mult": 2,
    "text_dim": 32,
    "conv_layers": 1,
    "text_num_embeds": TEXT_NUM_EMBEDS,
}
TEXT_IDS_PER_SECOND = 15  # about the characters per second of read English speech
CFG_STRENGTH = 2.0
SWAY = -1.0
FRAMES_PER_SECOND = SAMPLE_RATE / HOP_LENGTH


BASE_OPTIONS = SamplerOptions(cfg_strength=CFG_STRENGTH, sway=SWAY)
"""What every setting shares; each one replaces the fields in `VARIED`."""
VARIED = ("steps", "schedule", "cfg_zero_init_steps", "cfg_zero_star")
"""The `SamplerOptions` fields the settings differ in (each report row lists them)."""


@dataclass(frozen=True)
class Setting:
    """One sampler setting of the benchmark: a name and the options `f5lite.sample` is given whole."""

    name: str
    options: SamplerOptions

    def row_fields(self) -> dict[str, Any]:
        """The varied option fields, for a report row."""
        return {name: getattr(self.options, name) for name in VARIED}


SETTINGS = (
    Setting("32 uniform", replace(BASE_OPTIONS, steps=32, schedule="uniform")),
    Setting("16", replace(BASE_OPTIONS, steps=16, schedule="auto")),
    Setting("7 EPSS", replace(BASE_OPTIONS, steps=7, schedule="epss")),
    Setting(
        "7 EPSS + CFG-Zero*",
        replace(BASE_OPTIONS, steps=7, schedule="epss", cfg_zero_init_steps=1, cfg_zero_star=True),
    ),
)


class CallCounter:
    """Counts a module's forward calls and the batch size of each, with a forward hook.

    Args:
        module: the module to watch (the backbone); the hook stays until `close`.
    """

    def __init__(self, module: nn.Module) -> None:
        self.batches: list[int] = []
        self._handle = module.register_forward_hook(self._hook)

    def _hook(self, module: nn.Module, args: tuple[Any, ...], output: Tensor) -> None:
        self.batches.append(int(output.shape[0]))

    def reset(self) -> None:
        """Forget the calls seen so far."""
        self.batches.clear()

    def close(self) -> None:
        """Remove the hook."""
        self._handle.remove()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse and check the command line; a bad value exits with one line and status 2."""
    parser = argparse.ArgumentParser(
        prog=Path(__file__).name,
        description="Sampling speed of f5lite.sample: real-time factor and backbone calls.",
        epilog="Timed: one f5lite.sample call (text conditioning, noise, ODE with CFG); the vocoder separately.",
    )
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="backbone constructor overrides")
    parser.add_argument("--recipe", help="take the model section of this recipe (default: the mid-size DiT)")
    parser.add_argument("--device", default="cpu", help="auto, cpu, cuda or cuda:N (default cpu)")
    parser.add_argument("--dtype", default="fp32", choices=tuple(WEIGHT_DTYPES), help="backbone weights' dtype")
    parser.add_argument("--threads", type=int, help="torch.set_num_threads (default: torch's choice)")
    parser.add_argument("--compile", action="store_true", help="apply_inference_compile (compiled in the warm-up)")
    parser.add_argument("--seconds", type=float, default=5.0, help="generated audio per utterance (default 5)")
    parser.add_argument("--ref-seconds", type=float, default=2.0, help="reference audio per utterance (default 2)")
    parser.add_argument("--batches", default="1,8", help="comma-separated batch sizes (default 1,8)")
    parser.add_argument("--repeats", type=int, help="timed runs per setting (default 3; 1 with --quick)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed runs before the timed ones (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights and inputs (default 0)")
    parser.add_argument("--vocos-config", type=Path, default=VOCOS_CONFIG, help="Vocos config.yaml (random weights)")
    parser.add_argument("--out-dir", type=Path, default=RESULTS_DIR, help="where infer_<device>.{json,md} go")
    parser.add_argument("--name", help="file name stem of the reports (default infer_<device>[_quick])")
    parser.add_argument("--no-write", action="store_true", help="print the JSON lines only")
    parser.add_argument("--note", default="", help="a line for the reports (e.g. what else ran on the machine)")
    parser.add_argument("--quick", action="store_true", help="tiny DiT and 1 repeat: for tests and CI")
    args = parser.parse_args(argv)

    try:
        args.batches = [int(b) for b in args.batches.split(",")]
    except ValueError:
        parser.error(f"--batches {args.batches!r} is not valid; give comma-separated integers such as 1,8")
    if args.repeats is None:
        args.repeats = 1 if args.quick else 3
    checks = [
        ("--batches", min(args.batches), 1),
        ("--repeats", args.repeats, 1),
        ("--warmup", args.warmup, 0),
        ("--threads", 1 if args.threads is None else args.threads, 1),
    ]
    for flag, value, least in checks:
        if value < least:
            parser.error(f"{flag} must be at least {least}, got {value}")
    if not 0 < args.seconds < math.inf or not 0 <= args.ref_seconds < math.inf:
        parser.error(f"--seconds must be > 0 and --ref-seconds >= 0, got {args.seconds} and {args.ref_seconds}")
    if args.quick and args.recipe:
        parser.error("--quick builds its own tiny DiT; leave out --recipe")
    if not args.vocos_config.is_file():
        parser.error(f"--vocos-config '{args.vocos_config}' is not a file")
    try:
        args.device = resolve_device(args.device)
        args.model_name, args.model_kwargs = model_spec(args.recipe, args.quick, args.overrides)
        with torch.device("meta"):  # checks the options without allocating weights
            f5lite.build_backbone(args.model_name, **args.model_kwargs)
    except ValueError as err:
        parser.error(str(err))
    return args


def model_spec(recipe: str | None, quick: bool, overrides: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """The backbone family and constructor arguments: a recipe's model section or a built-in DiT, then overrides.

    Args:
        recipe: a recipe name (`dit_base`, ...), or None for the mid-size DiT (the tiny one with `quick`).
        quick: use the tiny DiT.
        overrides: `key=value` strings; values are read as JSON where they parse (`4`, `true`, `null`), else text.

    Raises:
        ValueError: an unknown recipe, or an override that is not `key=value`.
    """
    if recipe is not None:
        model_cfg = f5lite.compose_config([f"+recipe={recipe}"]).model
        name, kwargs = model_cfg.backbone, backbone_kwargs(model_cfg, TEXT_NUM_EMBEDS)
    else:
        name, kwargs = "dit", dict(QUICK_DIT if quick else MID_DIT)
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise ValueError(f"override {item!r} is not valid; write key=value, e.g. depth=4")
        try:
            kwargs[key] = json.loads(text)
        except json.JSONDecodeError:
            kwargs[key] = text
    return name, kwargs


def build_model(name: str, kwargs: dict[str, Any], seed: int, device: torch.device, dtype: str) -> nn.Module:
    """The backbone with the constructor's random initialization under `seed`, in eval mode on `device`.

    Raises:
        ValueError: an unknown family or constructor option.
    """
    torch.manual_seed(seed)
    backbone = f5lite.build_backbone(name, **kwargs)
    return backbone.to(device=device, dtype=WEIGHT_DTYPES[dtype]).eval()


def make_inputs(
    batch: int, ref_frames: int, gen_frames: int, num_embeds: int, seed: int, device: torch.device
) -> tuple[Tensor, Tensor, int]:
    """A random reference mel `[batch, ref_frames, N_MELS]`, random text ids and the total duration in frames."""
    generator = torch.Generator().manual_seed(seed)
    total = ref_frames + gen_frames
    cond = torch.randn(batch, ref_frames, N_MELS, generator=generator) - 5.0  # about a log-mel's level
    text = torch.randint(0, num_embeds, (batch, num_text_ids(total)), generator=generator)
    return cond.to(device), text.to(device), total


def num_text_ids(total_frames: int) -> int:
    """Text ids for an utterance of `total_frames` (reference included): `TEXT_IDS_PER_SECOND`, below the frames."""
    return max(1, min(total_frames - 1, round(TEXT_IDS_PER_SECOND * total_frames / FRAMES_PER_SECOND)))


def median_time(fn: Callable[[], Any], device: torch.device, repeats: int, warmup: int) -> tuple[float, list[float]]:
    """Median and all wall times in seconds of `repeats` calls of `fn` after `warmup` untimed ones."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def calls_per_run(batches: list[int], runs: int) -> list[int]:
    """The backbone calls (their batch sizes) of one run, out of those of `runs` identical runs.

    Raises:
        RuntimeError: the runs did not all make the same calls.
    """
    per_run, extra = divmod(len(batches), runs)
    if extra or batches != batches[:per_run] * runs:
        raise RuntimeError(f"{runs} runs of the same setting made different backbone calls: {batches}")
    return batches[:per_run]


def machine_info(device: torch.device) -> dict[str, Any]:
    """The machine the numbers come from: processor, GPU, cores, versions, date, threads, load average."""
    info: dict[str, Any] = {
        **sbs.flat_header(sbs.run_header()),
        "cpu_count": os.cpu_count(),  # the name this report has always used for `cores`
        "torch_threads": torch.get_num_threads(),
        "load_avg_1_5_15_before": [round(x, 2) for x in os.getloadavg()],
    }
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    return info


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Time every setting at every batch size; return the report (settings, machine, one row per measurement)."""
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    device: torch.device = args.device
    machine = machine_info(device)
    backbone = build_model(args.model_name, args.model_kwargs, args.seed, device, args.dtype)
    if args.compile:
        apply_inference_compile(backbone)
    vocoder = VocosVocoder.from_config(args.vocos_config).to(device)
    ref_frames = round(args.ref_seconds * FRAMES_PER_SECOND)
    gen_frames = max(2, round(args.seconds * FRAMES_PER_SECOND))  # a Vocos mel needs 2 frames
    audio_seconds = gen_frames / FRAMES_PER_SECOND
    counter = CallCounter(backbone)
    rows = []
    try:
        for batch in args.batches:
            cond, text, duration = make_inputs(
                batch, ref_frames, gen_frames, args.model_kwargs["text_num_embeds"], args.seed, device
            )
            # One step is enough: the vocoder's cost depends on the number of frames, not on their values.
            mel = f5lite.sample(backbone, cond, text, duration, replace(BASE_OPTIONS, steps=1), seed=args.seed)
            mel = mel[:, ref_frames:]
            vocoder_s, vocoder_runs = median_time(partial(vocoder.decode, mel), device, args.repeats, args.warmup)
            for setting in SETTINGS:
                generate = partial(f5lite.sample, backbone, cond, text, duration, setting.options, seed=args.seed)
                counter.reset()
                sample_s, sample_runs = median_time(generate, device, args.repeats, args.warmup)
                calls = calls_per_run(counter.batches, args.warmup + args.repeats)
                per_audio = batch * audio_seconds
                row = {
                    "setting": setting.name,
                    **setting.row_fields(),
                    "batch": batch,
                    "backbone_calls": len(calls),
                    "backbone_batch": sorted(set(calls)),
                    "sample_s": round(sample_s, 6),
                    "vocoder_s": round(vocoder_s, 6),
                    "total_s": round(sample_s + vocoder_s, 6),
                    "rtf": round(sample_s / per_audio, 6),
                    "rtf_with_vocoder": round((sample_s + vocoder_s) / per_audio, 6),
                    "sample_s_runs": [round(t, 6) for t in sample_runs],
                    "vocoder_s_runs": [round(t, 6) for t in vocoder_runs],
                }
                print(json.dumps(row), flush=True)
                rows.append(row)
    finally:
        counter.close()
    machine["load_avg_1_5_15_after"] = [round(x, 2) for x in os.getloadavg()]
    params = sum(p.numel() for p in backbone.parameters())
    report = {
        "device": str(device),
        "machine": machine,
        "model": {"backbone": args.model_name, **args.model_kwargs, "parameters": params},
        "recipe": args.recipe,
        "quick": args.quick,
        "dtype": args.dtype,
        "compile": args.compile,
        "ref_seconds": ref_frames / FRAMES_PER_SECOND,
        "audio_seconds": audio_seconds,
        "frames": {"reference": ref_frames, "generated": gen_frames},
        "text_ids": num_text_ids(ref_frames + gen_frames),
        "cfg_strength": CFG_STRENGTH,
        "sway": SWAY,
        "repeats": args.repeats,
        "warmup": args.warmup,
        "vocoder": "vocos (charactr/vocos-mel-24khz architecture, random weights)",
        "note": args.note,
        "results": rows,
    }
    return report


def markdown(report: dict[str, Any]) -> str:
    """A short markdown page: machine, settings and one table row per measurement."""
    machine = report["machine"]
    where = machine["gpu"] if report["device"].startswith("cuda") else f"{machine['cpu']}, {machine['cpu_count']} cores"
    model = report["model"]
    lines = [
        f"# Sampling speed on {report['device']}",
        "",
        f"Machine: {where}; torch {machine['torch']}, f5lite {machine['f5lite']}, {machine['torch_threads']} threads; "
        f"{machine['date']}; load average (1, 5, 15 min) {machine['load_avg_1_5_15_before']} before, "
        f"{machine['load_avg_1_5_15_after']} after.",
        f"Model: {model['backbone']} dim {model['dim']}, depth {model['depth']}, heads {model['heads']} "
        f"({model['parameters'] / 1e6:.1f}M parameters, random weights), {report['dtype']}"
        + (", compiled (apply_inference_compile)" if report.get("compile") else "")
        + (f", recipe {report['recipe']}" if report["recipe"] else "")
        + ".",
        f"Per utterance: {report['ref_seconds']:.2f} s reference + {report['audio_seconds']:.2f} s generated "
        f"({report['frames']['reference']} + {report['frames']['generated']} frames), {report['text_ids']} text ids; "
        f"cfg {report['cfg_strength']}, sway {report['sway']}. Median of {report['repeats']} runs "
        f"after {report['warmup']} warm-up. RTF = time / generated audio of the whole batch.",
        "",
        "| setting | batch | backbone calls x batch | sample s | vocoder s | RTF | RTF with vocoder |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in report["results"]:
        call_batch = "/".join(map(str, row["backbone_batch"]))
        lines.append(
            f"| {row['setting']} | {row['batch']} | {row['backbone_calls']} x {call_batch} | {row['sample_s']:.3f} "
            f"| {row['vocoder_s']:.3f} | {row['rtf']:.4f} | {row['rtf_with_vocoder']:.4f} |"
        )
    if report["note"]:
        lines[3:3] = [f"Note: {report['note']}"]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; print JSON lines and write `infer_<device>[_quick].{json,md}` unless `--no-write`."""
    args = parse_args(argv)
    report = run(args)
    if not args.no_write:
        stem = args.name or f"infer_{args.device.type}" + ("_quick" if args.quick else "")
        sbs.write_results(args.out_dir / f"{stem}.json", report, markdown(report), indent=2)
        print(f"wrote {args.out_dir / stem}.json and .md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
