"""Sampling speed: real-time factor and backbone calls of `f5lite.sample` for four step settings, batch 1 and 8.

    python scripts/bench_infer.py --device cpu --threads 2 --batches 1,8
    python scripts/bench_infer.py --recipe dit_base --device cuda --dtype bf16
    python scripts/bench_infer.py --quick --seconds 1 depth=4      # key=value: backbone constructor overrides

One timed run is one `f5lite.sample` call (text conditioning, noise, the ODE loop with CFG 2 and sway -1, the
reference overwrite) on random inputs: a `--ref-seconds` reference mel, `TEXT_IDS_PER_SECOND` text ids per second and
`--seconds` generated per utterance. Vocos (random weights: the same cost) decodes the generated frames, timed apart
and added. Medians of `--repeats` runs after `--warmup`; backbone calls are counted with a forward hook. The settings:
32 uniform steps, 16, 7 EPSS, 7 EPSS + CFG-Zero*. RTF = time / generated audio of the whole batch. Output: one JSON
line per setting and batch, and `infer_<device>[_quick].{json,md}` (`--quick`: the tiny DiT, 1 repeat).
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

import f5lite
from benchmarks import results
from benchmarks.models import DITS, F5TTS_VOCAB_SIZE
from f5lite.audio.constants import HOP_LENGTH, N_MELS, SAMPLE_RATE
from f5lite.audio.vocoder import VocosVocoder
from f5lite.infer.loading import resolve_device
from f5lite.models import apply_inference_compile, backbone_kwargs
from f5lite.models.dtypes import WEIGHT_DTYPES
from f5lite.sampling import SamplerOptions

REPO = Path(__file__).resolve().parent.parent
TEXT_NUM_EMBEDS = F5TTS_VOCAB_SIZE  # also for recipes that take it from a vocab.txt
TEXT_IDS_PER_SECOND = 15  # about the characters per second of read English speech
CFG_STRENGTH, SWAY, FRAMES_PER_SECOND = 2.0, -1.0, SAMPLE_RATE / HOP_LENGTH
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
    Setting("7 EPSS + CFG-Zero*", replace(BASE_OPTIONS, steps=7, schedule="epss", cfg_zero_init_steps=1,
                                          cfg_zero_star=True)),
)  # fmt: skip


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse and check the command line; a bad value exits with one line and status 2."""
    parser = argparse.ArgumentParser(prog=Path(__file__).name, description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("overrides", nargs="*", metavar="KEY=VALUE", help="backbone constructor overrides")
    add("--recipe", help="take the model section of this recipe (default: the mid-size DiT)")
    add("--device", default="cpu", help="auto, cpu, cuda or cuda:N (default cpu)")
    add("--dtype", default="fp32", choices=tuple(WEIGHT_DTYPES), help="backbone weights' dtype")
    add("--threads", type=int, help="torch.set_num_threads (default: torch's choice)")
    add("--compile", action="store_true", help="apply_inference_compile (compiled in the warm-up)")
    add("--seconds", type=float, default=5.0, help="generated audio per utterance (default 5)")
    add("--ref-seconds", type=float, default=2.0, help="reference audio per utterance (default 2)")
    add("--batches", default="1,8", help="comma-separated batch sizes (default 1,8)")
    add("--repeats", type=int, help="timed runs per setting (default 3; 1 with --quick)")
    add("--warmup", type=int, default=1, help="untimed runs before the timed ones (default 1)")
    add("--seed", type=int, default=0, help="seed of the random weights and inputs (default 0)")
    add("--vocos-config", type=Path, default=REPO / "tests" / "assets" / "vocos" / "config.yaml",
        help="Vocos config.yaml (random weights)")  # fmt: skip
    add("--out-dir", type=Path, default=REPO / "scripts" / "results", help="where infer_<device>.{json,md} go")
    add("--name", help="file name stem of the reports (default infer_<device>[_quick])")
    add("--no-write", action="store_true", help="print the JSON lines only")
    add("--note", default="", help="a line for the reports (e.g. what else ran on the machine)")
    add("--quick", action="store_true", help="tiny DiT and 1 repeat: for tests and CI")
    args = parser.parse_args(argv)
    try:
        args.batches = [int(b) for b in args.batches.split(",")]
    except ValueError:
        parser.error(f"--batches {args.batches!r} is not valid; give comma-separated integers such as 1,8")
    args.repeats = args.repeats if args.repeats is not None else 1 if args.quick else 3
    threads = 1 if args.threads is None else args.threads
    for flag, value, least in (("--batches", min(args.batches), 1), ("--repeats", args.repeats, 1),
                               ("--warmup", args.warmup, 0), ("--threads", threads, 1)):  # fmt: skip
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
        recipe: A recipe name (`dit_base`, ...), or None for the mid-size DiT (the tiny one with `quick`).
        quick: Use the tiny DiT.
        overrides: `key=value` strings; values are read as JSON where they parse (`4`, `true`, `null`), else text.

    Raises:
        ValueError: An unknown recipe, or an override that is not `key=value`.
    """
    if recipe is not None:
        model_cfg = f5lite.compose_config([f"+recipe={recipe}"]).model
        name, kwargs = model_cfg.backbone, backbone_kwargs(model_cfg, TEXT_NUM_EMBEDS)
    else:
        name, kwargs = "dit", {**DITS["tiny" if quick else "mid"], "text_num_embeds": TEXT_NUM_EMBEDS}
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise ValueError(f"override {item!r} is not valid; write key=value, e.g. depth=4")
        try:
            kwargs[key] = json.loads(text)
        except json.JSONDecodeError:
            kwargs[key] = text
    return name, kwargs


def num_text_ids(total_frames: int) -> int:
    """Text ids for an utterance of `total_frames` (reference included): `TEXT_IDS_PER_SECOND`, below the frames."""
    return max(1, min(total_frames - 1, round(TEXT_IDS_PER_SECOND * total_frames / FRAMES_PER_SECOND)))


def median_time(fn: Callable[[], Any], device: torch.device, repeats: int, warmup: int) -> tuple[float, list[float]]:
    """Median and all wall times in seconds of `repeats` calls of `fn` after `warmup` untimed ones."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = _now(device)
        fn()
        times.append(_now(device) - start)
    return statistics.median(times), times


def _now(device: torch.device) -> float:
    """`time.perf_counter()` once the device has done the work queued on it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


def calls_per_run(batches: list[int], runs: int) -> list[int]:
    """The backbone calls (their batch sizes) of one run, out of those of `runs` identical runs.

    Raises:
        RuntimeError: the runs did not all make the same calls.
    """
    per_run, extra = divmod(len(batches), runs)
    if extra or batches != batches[:per_run] * runs:
        raise RuntimeError(f"{runs} runs of the same setting made different backbone calls: {batches}")
    return batches[:per_run]


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Time every setting at every batch size; return the report (settings, machine, one row per measurement)."""
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    device: torch.device = args.device
    machine = {**results.flat_header(results.run_header()), "cpu_count": os.cpu_count(),  # this report's own name
               "torch_threads": torch.get_num_threads(), "load_avg_1_5_15_before": [round(x, 2) for x in os.getloadavg()]}  # fmt: skip
    if device.type == "cuda":
        machine["gpu"] = torch.cuda.get_device_name(device)
    torch.manual_seed(args.seed)  # the constructor's random initialization
    backbone = f5lite.build_backbone(args.model_name, **args.model_kwargs)
    backbone = backbone.to(device=device, dtype=WEIGHT_DTYPES[args.dtype]).eval()
    if args.compile:
        apply_inference_compile(backbone)
    vocoder = VocosVocoder.from_config(args.vocos_config).to(device)
    ref_frames = round(args.ref_seconds * FRAMES_PER_SECOND)
    gen_frames = max(2, round(args.seconds * FRAMES_PER_SECOND))  # a Vocos mel needs 2 frames
    total, audio_seconds = ref_frames + gen_frames, gen_frames / FRAMES_PER_SECOND
    calls: list[int] = []  # the batch size of each backbone call
    hook = backbone.register_forward_hook(lambda module, inputs, output: calls.append(int(output.shape[0])))
    rows = []
    try:
        for batch in args.batches:
            generator = torch.Generator().manual_seed(args.seed)
            cond = (torch.randn(batch, ref_frames, N_MELS, generator=generator) - 5.0).to(device)  # a log-mel's level
            text = torch.randint(0, args.model_kwargs["text_num_embeds"], (batch, num_text_ids(total)),
                                 generator=generator).to(device)  # fmt: skip
            # One step is enough: the vocoder's cost depends on the number of frames, not on their values.
            mel = f5lite.sample(backbone, cond, text, total, replace(BASE_OPTIONS, steps=1), seed=args.seed)
            vocoder_s, vocoder_runs = median_time(partial(vocoder.decode, mel[:, ref_frames:]), device, args.repeats,
                                                  args.warmup)  # fmt: skip
            for setting in SETTINGS:
                calls.clear()
                generate = partial(f5lite.sample, backbone, cond, text, total, setting.options, seed=args.seed)
                sample_s, sample_runs = median_time(generate, device, args.repeats, args.warmup)
                made = calls_per_run(calls, args.warmup + args.repeats)
                per_audio = batch * audio_seconds
                row = {"setting": setting.name, **setting.row_fields(), "batch": batch, "backbone_calls": len(made),
                       "backbone_batch": sorted(set(made)), "sample_s": round(sample_s, 6),
                       "vocoder_s": round(vocoder_s, 6), "total_s": round(sample_s + vocoder_s, 6),
                       "rtf": round(sample_s / per_audio, 6), "rtf_with_vocoder": round((sample_s + vocoder_s) / per_audio, 6),
                       "sample_s_runs": [round(t, 6) for t in sample_runs],
                       "vocoder_s_runs": [round(t, 6) for t in vocoder_runs]}  # fmt: skip
                print(json.dumps(row), flush=True)
                rows.append(row)
    finally:
        hook.remove()
    machine["load_avg_1_5_15_after"] = [round(x, 2) for x in os.getloadavg()]
    return {
        "device": str(device), "machine": machine,
        "model": {"backbone": args.model_name, **args.model_kwargs, "parameters": sum(p.numel() for p in backbone.parameters())},
        "recipe": args.recipe, "quick": args.quick, "dtype": args.dtype, "compile": args.compile,
        "ref_seconds": ref_frames / FRAMES_PER_SECOND, "audio_seconds": audio_seconds,
        "frames": {"reference": ref_frames, "generated": gen_frames}, "text_ids": num_text_ids(total),
        "cfg_strength": CFG_STRENGTH, "sway": SWAY, "repeats": args.repeats, "warmup": args.warmup,
        "vocoder": "vocos (charactr/vocos-mel-24khz architecture, random weights)", "note": args.note, "results": rows,
    }  # fmt: skip


def markdown(report: dict[str, Any]) -> str:
    """A short markdown page: machine, settings and one table row per measurement."""
    machine, model = report["machine"], report["model"]
    where = machine["gpu"] if report["device"].startswith("cuda") else f"{machine['cpu']}, {machine['cpu_count']} cores"
    compiled = ", compiled (apply_inference_compile)" if report.get("compile") else ""
    lines = [
        f"# Sampling speed on {report['device']}", "",
        f"Machine: {where}; torch {machine['torch']}, f5lite {machine['f5lite']}, {machine['torch_threads']} threads; "
        f"{machine['date']}; load average (1, 5, 15 min) {machine['load_avg_1_5_15_before']} before, "
        f"{machine['load_avg_1_5_15_after']} after.",
        f"Model: {model['backbone']} dim {model['dim']}, depth {model['depth']}, heads {model['heads']} "
        f"({model['parameters'] / 1e6:.1f}M parameters, random weights), {report['dtype']}{compiled}"
        + (f", recipe {report['recipe']}" if report["recipe"] else "") + ".",
        f"Per utterance: {report['ref_seconds']:.2f} s reference + {report['audio_seconds']:.2f} s generated "
        f"({report['frames']['reference']} + {report['frames']['generated']} frames), {report['text_ids']} text ids; "
        f"cfg {report['cfg_strength']}, sway {report['sway']}. Median of {report['repeats']} runs "
        f"after {report['warmup']} warm-up. RTF = time / generated audio of the whole batch.", "",
    ]  # fmt: skip
    rows = [[r["setting"], r["batch"], f"{r['backbone_calls']} x {'/'.join(map(str, r['backbone_batch']))}",
             f"{r['sample_s']:.3f}", f"{r['vocoder_s']:.3f}", f"{r['rtf']:.4f}", f"{r['rtf_with_vocoder']:.4f}"]
            for r in report["results"]]  # fmt: skip
    head = ["setting", "batch", "backbone calls x batch", "sample s", "vocoder s", "RTF", "RTF with vocoder"]
    lines += results.table(head, rows, " rrrrrr")
    if report["note"]:
        lines[3:3] = [f"Note: {report['note']}"]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; print JSON lines and write `infer_<device>[_quick].{json,md}` unless `--no-write`."""
    args = parse_args(argv)
    report = run(args)
    if not args.no_write:
        stem = args.name or f"infer_{args.device.type}" + ("_quick" if args.quick else "")
        results.write_results(args.out_dir / f"{stem}.json", report, markdown(report), indent=2)
        print(f"wrote {args.out_dir / stem}.json and .md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
