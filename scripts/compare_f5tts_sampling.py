"""Sampling time of F5-TTS's own `CFM.sample` and of `f5lite.sample` on the same weights, at equal precision.

    PYTHONPATH=.f5tts python scripts/compare_f5tts_sampling.py --rounds 3 --out-dir scripts/results
    make bench-gpu-sampling   # --defaults and --fewstep on a CUDA GPU

Every configuration (a side, a precision, f5lite's settings) runs in its own process once per round, the order
reversed every other round. Both sides run the mid-size DiT with the same random weights, cfg 2, sway -1, seed 0, at
batch 1 (2 s reference + 3 s generated) and 8 (generated lengths falling to half: padded as a real batch). "bf16" is
bf16 weights, as each side's own inference casts a model; no autocast. Each worker times a 1-step warm-up, then
`--reps` calls; medians over the rounds, f5lite / F5-TTS ratios and the issue's two targets; the outputs are
compared. `--defaults`: F5-TTS at its defaults (32 steps) against f5lite's paths, every output against f5lite's
32-step fp32 one; `--fewstep`: against a distilled student at 4 steps.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

import f5lite
from benchmarks import results, runner
from benchmarks.models import DITS, F5TTS_VOCAB_SIZE, MID_DIT, shared_weights
from f5lite.audio.constants import HOP_LENGTH, SAMPLE_RATE
from f5lite.models.distill import StudentBackbone
from f5lite.sampling import SamplerOptions

FRAMES_PER_SECOND = SAMPLE_RATE / HOP_LENGTH
STEPS, DEFAULT_STEPS, STUDENT_STEPS = 7, 32, 4
"""7 EPSS steps; F5-TTS's default 32 steps (with sway -1 and cfg 2: its `infer_process`); the student's 4."""
CFG_STRENGTH, SWAY, SEED, TOKENS_PER_SECOND = 2.0, -1.0, 0, 15
TARGET_ZERO_STAR, TARGET_BEST = 0.75, 0.5


@dataclass(frozen=True)
class Config:
    """One timed configuration: whose sampler (`F5-TTS` or `f5lite`), in which precision (`fp32` or `bf16` weights).

    f5lite only: `zero_star` (CFG-Zero*: 1 zero-init step, optimized scale), `compiled` (`apply_inference_compile`),
    `student` (a distilled student: one pass per step, guidance as an input). `steps`: 7 is EPSS, 32 a uniform grid.
    """

    side: str
    precision: str
    zero_star: bool = False
    compiled: bool = False
    steps: int = STEPS
    student: bool = False

    @property
    def name(self) -> str:
        """The label used in the results, e.g. `f5lite 7 EPSS + CFG-Zero*, bf16`."""
        if self.student:
            settings = f"student {self.steps} steps"
        else:
            grid = f"{self.steps} EPSS" if self.steps == STEPS else f"{self.steps} steps"
            settings = grid + (" + CFG-Zero*" if self.zero_star else "")
        return f"{self.side} {settings}, {self.precision}" + (", compiled" if self.compiled else "")


def configurations(*, f5tts: bool = True, compiled: bool = False) -> list[Config]:
    """Every configuration of one batch size, F5-TTS's first (both precisions), then f5lite's."""
    configs = [Config("F5-TTS", p) for p in ("fp32", "bf16")] if f5tts else []
    configs += [Config("f5lite", p, zero) for p in ("fp32", "bf16") for zero in (False, True)]
    return configs + ([Config("f5lite", p, True, True) for p in ("fp32", "bf16")] if compiled else [])


def every_config() -> dict[str, Config]:
    """Every configuration of every suite by its name (a worker's `--worker NAME`)."""
    every = configurations(compiled=True) + defaults_configurations() + fewstep_configurations()
    return {c.name: c for c in every}


REFERENCE = Config("f5lite", "fp32", steps=DEFAULT_STEPS)
"""The output every path of `--defaults` and `--fewstep` is compared with: f5lite's 32 steps in fp32, eager."""


def defaults_configurations(*, f5tts: bool = True) -> list[Config]:
    """`--defaults`: F5-TTS at its defaults (32 steps, fp32) against f5lite's paths.

    f5lite's 32 steps eager and compiled, its fastest recommended setting (7 EPSS + CFG-Zero*) in fp32, compiled and
    with bf16 weights, and both again with bf16 weights, eager and compiled (the path `f5lite-infer` picks where bf16
    is native).
    """
    configs = [Config("F5-TTS", "fp32", steps=DEFAULT_STEPS)] if f5tts else []
    configs += [Config("f5lite", "fp32", steps=DEFAULT_STEPS), Config("f5lite", "fp32", False, True, DEFAULT_STEPS)]
    configs += [Config("f5lite", "fp32", True), Config("f5lite", "fp32", True, True), Config("f5lite", "bf16", True)]
    configs += [Config("f5lite", "bf16", steps=DEFAULT_STEPS), Config("f5lite", "bf16", False, True, DEFAULT_STEPS)]
    return configs + [Config("f5lite", "bf16", True, True)]


def fewstep_configurations(*, f5tts: bool = True) -> list[Config]:
    """`--fewstep`: F5-TTS at its defaults against a distilled student at 4 steps, f5lite's 32 guided steps beside.

    The student is the same DiT with its step and guidance embeddings (zero at start: the time of a call does not
    depend on what the weights learned): 4 Euler steps, one pass each, no unconditional pass.
    """
    configs = [Config("F5-TTS", "fp32", steps=DEFAULT_STEPS)] if f5tts else []
    configs += [Config("f5lite", "fp32", steps=DEFAULT_STEPS)]
    return configs + [Config("f5lite", p, steps=STUDENT_STEPS, student=True) for p in ("fp32", "bf16")]


def build_parser() -> argparse.ArgumentParser:
    """The command line (also the workers')."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--rounds", type=int, default=3)
    add("--reps", type=int, default=1, help="timed calls per process (default 1)")
    add("--threads", type=int, default=2)
    add("--batches", default="1,8", help="comma-separated batch sizes (default 1,8)")
    add("--seconds", type=float, default=3.0, help="longest generated audio (default 3)")
    add("--ref-seconds", type=float, default=2.0, help="reference audio (default 2)")
    add("--compiled", action="store_true", help="also f5lite with per-block compile (slow start)")
    add("--defaults", action="store_true", help="F5-TTS at its defaults (32 steps) against f5lite's paths; writes "
        "f5tts_sampling_defaults_DEVICE.*")  # fmt: skip
    add("--fewstep", action="store_true", help="F5-TTS at its defaults against a distilled student at 4 steps; writes "
        "f5tts_sampling_fewstep_DEVICE.*")  # fmt: skip
    add("--device", choices=("cpu", "cuda"), default="cpu", help="where both sides sample")
    add("--out-dir", type=Path, help="write f5tts_sampling_DEVICE.{json,md} here")
    add("--f5lite-only", action="store_true", help=argparse.SUPPRESS)  # the script's own test
    add("--tiny", action="store_true", help=argparse.SUPPRESS)  # the script's own test
    add("--worker", help=argparse.SUPPRESS)
    add("--batch", type=int, default=1, help=argparse.SUPPRESS)
    add("--save", type=Path, help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run every configuration in its own process, `--rounds` interleaved rounds; write JSON and Markdown."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no CUDA device here")
    if args.worker is not None:
        shape = Shape(args.batch, args.ref_seconds, args.seconds, args.tiny, args.device)
        print(json.dumps(run_worker(every_config()[args.worker], shape, args.reps, args.threads, args.save)))
        return 0
    if not args.f5lite_only and importlib.util.find_spec("f5_tts") is None:
        parser.error("F5-TTS is not importable (No module named 'f5_tts'); see benchmarks/f5tts.py")
    f5tts_version = None if args.f5lite_only else importlib.metadata.version("f5-tts")
    batches = [int(b) for b in args.batches.split(",")]
    suite = "fewstep" if args.fewstep else "defaults" if args.defaults else None
    suites = {"fewstep": fewstep_configurations, "defaults": defaults_configurations}
    f5tts = not args.f5lite_only
    configs = suites[suite](f5tts=f5tts) if suite else configurations(f5tts=f5tts, compiled=args.compiled)
    times: dict[int, dict[str, list[float]]] = {b: {c.name: [] for c in configs} for b in batches}
    first: dict[int, dict[str, list[float]]] = {b: {c.name: [] for c in configs} for b in batches}
    rss: dict[int, dict[str, float]] = {b: {} for b in batches}
    with tempfile.TemporaryDirectory() as tmp:
        pairs = [(b, c) for b in batches for c in configs]
        children = [child(c, b, args, Path(tmp, f"{b}-{c.name}.pt")) for b, c in pairs]
        which = {ch.name: pair for ch, pair in zip(children, pairs, strict=True)}

        def show(run: runner.Run) -> None:
            batch, config = which[run.config]
            record = run.result or {}
            times[batch][config.name] += record["times"]
            first[batch][config.name].append(record["first_call_s"])
            rss[batch][config.name] = max(rss[batch].get(config.name, 0.0), record["peak_rss_gb"])
            print(f"round {run.round + 1} batch {batch} {config.name}: {record['times']}", flush=True)

        try:
            runner.run_interleaved(children, args.rounds, alternate=True, on_run=show)
        except runner.ChildFailedError as err:
            print(f"{err.run.stderr[-3000:]}compare_f5tts_sampling.py: {err}", file=sys.stderr)
            return 1
        diffs = {b: differences(Path(tmp), b, configs, args, suite) for b in batches}
    result = summarize(times, first, rss, diffs, args, f5tts_version, suite)
    text, stem = markdown(result), f"f5tts_sampling_{suite}_{args.device}" if suite else f"f5tts_sampling_{args.device}"
    print(json.dumps(result, indent=1))
    if args.out_dir:
        results.write_results(args.out_dir / f"{stem}.json", result, text)
    return 0


def child(config: Config, batch: int, args: argparse.Namespace, save: Path | None) -> runner.Config:
    """`config` at batch size `batch` as a configuration of the runner: this script's `--worker` mode."""
    command = [sys.executable, __file__, "--worker", config.name, "--batch", str(batch), "--reps", str(args.reps)]
    command += ["--threads", str(args.threads), "--seconds", str(args.seconds), "--ref-seconds", str(args.ref_seconds)]
    command += ["--tiny"] * args.tiny + ["--device", getattr(args, "device", "cpu")]
    return runner.Config(f"batch {batch}: {config.name}", command + (["--save", str(save)] if save else []))


@dataclass(frozen=True)
class Shape:
    """The inputs of one batch size: reference and generated seconds, the model size, and where they go."""

    batch: int
    ref_seconds: float
    seconds: float
    tiny: bool = False
    device: str = "cpu"

    def inputs(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Reference mel `[b, n_ref, 100]`, text ids `[b, nt]` padded with -1, total frames `[b]`; seeded."""
        n_ref, n_gen = round(self.ref_seconds * FRAMES_PER_SECOND), round(self.seconds * FRAMES_PER_SECOND)
        # Batch > 1: generated lengths from n_gen down to n_gen / 2, so the batch is padded as a real one is.
        totals = torch.tensor([n_ref + round(n_gen * (1 - i / (2 * self.batch))) for i in range(self.batch)])
        g = torch.Generator().manual_seed(0)
        cond = torch.randn(self.batch, n_ref, 100, generator=g) - 5
        lengths = [round(TOKENS_PER_SECOND * int(total) / FRAMES_PER_SECOND) for total in totals]
        text = torch.full((self.batch, max(lengths)), -1, dtype=torch.long)
        for i, length in enumerate(lengths):
            text[i, :length] = torch.randint(0, F5TTS_VOCAB_SIZE, (length,), generator=g)
        return cond.to(self.device), text.to(self.device), totals.to(self.device)


def sampler_options(steps: int, zero: bool) -> SamplerOptions:
    """f5lite's settings matching F5-TTS's run of `steps` steps (EPSS where it has a table), CFG-Zero* when `zero`."""
    return SamplerOptions(steps=steps, schedule="auto" if steps >= 5 else "uniform", cfg_strength=CFG_STRENGTH,
                          sway=SWAY, cfg_zero_init_steps=1 if zero else 0, cfg_zero_star=zero)  # fmt: skip


def sampler(config: Config, shape: Shape) -> Callable[[int], torch.Tensor]:
    """`run(steps) -> mel [b, N, 100]` (fp32) for `config`, with the weights loaded and the precision set."""
    dtype = torch.bfloat16 if config.precision == "bf16" else torch.float32
    cond, text, totals = shape.inputs()
    dims = DITS["tiny"] if shape.tiny else MID_DIT  # tiny: the script's own test, never a result
    duration: int | torch.Tensor = int(totals[0]) if shape.batch == 1 else totals
    if config.side == "F5-TTS":
        from f5_tts.model.backbones.dit import DiT as F5DiT
        from f5_tts.model.cfm import CFM as F5CFM

        theirs = F5DiT(**dims, text_num_embeds=F5TTS_VOCAB_SIZE, mel_dim=100)
        theirs.load_state_dict(shared_weights(dims))
        cfm = F5CFM(transformer=theirs, mel_spec_kwargs={"n_mel_channels": 100}).to(shape.device, dtype).eval()

        def run_f5tts(steps: int) -> torch.Tensor:
            with torch.no_grad():  # as F5-TTS's own `infer_batch_process` calls it
                out, _ = cfm.sample(cond, text, duration, steps=steps, use_epss=steps >= 5, cfg_strength=CFG_STRENGTH,
                                    sway_sampling_coef=SWAY, seed=SEED)  # fmt: skip
            return out.float()

        return run_f5tts
    model = f5lite.build_backbone("dit", **dims, text_num_embeds=F5TTS_VOCAB_SIZE)
    model.load_state_dict(shared_weights(dims))
    model = model.to(shape.device, dtype).eval()
    if config.student:  # the sampler steps it once per step with its step size and guidance, no unconditional pass
        model = StudentBackbone(model).to(shape.device, dtype).eval()
    if config.compiled:
        f5lite.apply_inference_compile(model)

    def run_f5lite(steps: int) -> torch.Tensor:
        # Zero-init with a single step would leave nothing to integrate: the warm-up runs plain CFG.
        options = sampler_options(steps, config.zero_star and steps > 1)
        return f5lite.sample(model, cond, text, duration, options, seed=SEED).float()

    return run_f5lite


def run_worker(config: Config, shape: Shape, reps: int, threads: int, save: Path | None) -> dict[str, Any]:
    """In this process: warm up, time `reps` calls of `config`; optionally save the last output.

    The warm-up call's time is kept as `first_call_s`: for a compiled model it is the full call plus compilation.
    """
    torch.set_num_threads(threads)
    cuda, run = shape.device == "cuda", sampler(config, shape)

    def timed(steps: int) -> tuple[torch.Tensor, float]:
        start = time.perf_counter()
        out = run(steps)
        if cuda:  # the call returns when its GPU work is queued, not done
            torch.cuda.synchronize()
        return out, time.perf_counter() - start

    _, first = timed(config.steps if config.compiled else 1)  # a compiled model compiles at its first full call
    calls = [timed(config.steps) for _ in range(reps)]
    if save is not None and calls:
        torch.save(calls[-1][0].cpu(), save)
    record: dict[str, Any] = {"times": [round(t, 4) for _, t in calls], "first_call_s": round(first, 4),
                              "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 3)}  # fmt: skip
    if cuda:
        record |= {
            "peak_gpu_gb": round(torch.cuda.max_memory_allocated() / 1e9, 3),
            "gpu": torch.cuda.get_device_name(),
        }
    return record


def _document(args: argparse.Namespace, f5tts_version: str | None, **fields: Any) -> dict[str, Any]:
    header = results.run_header()
    header["versions"]["f5-tts"] = f5tts_version  # None: F5-TTS did not run (installed or not)
    return {**header, "threads": args.threads, "rounds": args.rounds, "reps_per_process": args.reps, **fields}


def base_of(config: Config, suite: str | None) -> Config:
    """The configuration `config` is compared with: F5-TTS at its defaults in `--defaults` and `--fewstep`, else
    F5-TTS's 7 EPSS at the same precision."""
    return Config("F5-TTS", "fp32", steps=DEFAULT_STEPS) if suite else Config("F5-TTS", config.precision)


def differences(tmp: Path, batch: int, configs: list[Config], args: argparse.Namespace, suite: str | None) -> dict:
    """Max and mean |output - its reference| over the generated frames, from the saved outputs.

    The reference is f5lite's 32 steps in fp32 in `--defaults` and `--fewstep`, else F5-TTS's 7 EPSS at the same
    precision (in bf16 the two differ by design: F5-TTS's ODE state and time grid are bf16, f5lite's stay fp32).
    """
    n_ref, out = round(args.ref_seconds * FRAMES_PER_SECOND), {}
    for config in configs:
        reference = REFERENCE if suite else base_of(config, suite)
        if reference in configs and config != reference:
            a, b = (torch.load(tmp / f"{batch}-{c.name}.pt", weights_only=True)[:, n_ref:] for c in (config, reference))
            out[config.name] = {"max": float((a - b).abs().max()), "mean": float((a - b).abs().mean())}
    return out


def targets(medians: dict[str, float]) -> dict[str, Any]:
    """The issue's two sampling targets, per precision and for the fastest settings, with whether each is met."""
    out: dict[str, Any] = {}
    for precision in ("fp32", "bf16"):
        base, ours = (medians.get(c.name) for c in (Config("F5-TTS", precision), Config("f5lite", precision, True)))
        if base and ours:
            ratio = ours / base
            out[f"7 EPSS + CFG-Zero* vs F5-TTS 7 EPSS, {precision}"] = {
                "ratio": round(ratio, 3), "target": TARGET_ZERO_STAR, "met": ratio <= TARGET_ZERO_STAR}  # fmt: skip
    theirs = {k: v for k, v in medians.items() if k.startswith("F5-TTS")}
    mine = {k: v for k, v in medians.items() if k.startswith("f5lite")}
    if theirs and mine:
        best_theirs, best_mine = min(theirs, key=theirs.__getitem__), min(mine, key=mine.__getitem__)
        ratio = mine[best_mine] / theirs[best_theirs]
        out["best vs best"] = {"f5lite": best_mine, "F5-TTS": best_theirs, "ratio": round(ratio, 3),
                               "target": TARGET_BEST, "met": ratio <= TARGET_BEST}  # fmt: skip
    return out


def summarize(times: dict[int, dict[str, list[float]]], first: dict[int, dict[str, list[float]]],
              rss: dict[int, dict[str, float]], diffs: dict[int, dict[str, dict[str, float]]],
              args: argparse.Namespace, f5tts_version: str | None, suite: str | None = None) -> dict[str, Any]:  # fmt: skip
    """The result: medians, ratios to each one's base (`base_of`), RTF, first calls, mel differences, targets."""
    per_batch = {}
    names = every_config()
    for batch, by_name in times.items():
        medians = {name: statistics.median(ts) for name, ts in by_name.items()}
        bases = {k: medians.get(base_of(names[k], suite).name) for k in medians}
        generated = batch * args.seconds  # the longest; a padded batch generates less, so this RTF is a lower bound
        per_batch[str(batch)] = {
            "median_s": {k: round(v, 3) for k, v in medians.items()},
            "ratio_to_base": {k: round(v / base, 3) for k, v in medians.items() if (base := bases[k])},
            "rtf": {k: round(v / generated, 4) for k, v in medians.items()},
            "first_call_s": {name: round(statistics.median(ts), 3) for name, ts in first[batch].items() if ts},
            "mel_diff": diffs[batch], "peak_rss_gb": rss[batch], "runs_s": by_name,
            **({} if suite else {"targets": targets(medians)}),
        }  # fmt: skip
    return _document(args, f5tts_version, suite=suite, seconds={"reference": args.ref_seconds,
                     "generated_longest": args.seconds}, model="TINY_DIT (test only)" if args.tiny else "MID_DIT",
                     settings="cfg 2, sway -1; 32 steps: uniform grid; 7 EPSS: F5-TTS's EPSS table; CFG-Zero*: 1 "
                     "zero-init step + optimized scale; bf16 = bf16 weights on both sides, no autocast",
                     batches=per_batch)  # fmt: skip


def markdown(result: dict[str, Any]) -> str:
    """The result as Markdown: one table per batch size, then the targets (without `--defaults` or `--fewstep`)."""
    base = "F5-TTS at its defaults" if result.get("suite") else "F5-TTS 7 EPSS, same precision"
    reference = "f5lite's own 32-step fp32 output" if result.get("suite") else "F5-TTS's output at the same precision"
    lines = [
        f"# Sampling: f5lite against F5-TTS ({result.get('suite') or 'equal precision'}), same weights", "",
        f"{results.describe(result)}; {result['threads']} threads; {result['model']}; {result['settings']}; "
        f"{result['seconds']['reference']} s reference + up to {result['seconds']['generated_longest']} s generated; "
        f"every configuration in its own process, {result['rounds']} interleaved rounds x {result['reps_per_process']} "
        "timed call(s), medians. First call: the warm-up (1 step eager; the full call with compilation when compiled). "
        f"Mel difference: over the generated frames, against {reference} (log-mel units).",
    ]  # fmt: skip
    head = ["configuration", "seconds", f"vs {base}", "RTF", "first call s", "max / mean mel diff", "peak RSS GB"]
    for batch, data in result["batches"].items():
        rows = []
        for name, seconds in data["median_s"].items():
            ratio, diff = data["ratio_to_base"].get(name), data["mel_diff"].get(name, {})
            rows.append([name, f"{seconds:.3f}", "" if ratio is None else f"{ratio:.2f}x", f"{data['rtf'][name]:.3f}",
                         f"{data['first_call_s'].get(name, 0):.2f}", f"{diff['max']:.3g} / {diff['mean']:.3g}" if diff else "",
                         f"{data['peak_rss_gb'].get(name, 0):.2f}"])  # fmt: skip
        lines += ["", f"## Batch {batch}", "", *results.table(head, rows, " rrrrrr")]
        for label, target in data.get("targets", {}).items():
            extra = f" ({target['f5lite']} / {target['F5-TTS']})" if "f5lite" in target else ""
            verdict = "met" if target["met"] else "not met"
            lines.append(f"- {label}{extra}: {target['ratio']:.2f}x, target <= {target['target']}x: {verdict}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
