"""Sampling time: `f5lite.sample`'s step settings alone (RTF, backbone calls) or beside F5-TTS's own `CFM.sample`.

    python scripts/compare_f5tts_sampling.py --rtf --threads 2 --batches 1,8 [--dtype bf16] [--compiled]
    PYTHONPATH=.f5tts python scripts/compare_f5tts_sampling.py --rounds 3 --out-dir scripts/results
    make bench-gpu-sampling   # --defaults and --fewstep on a CUDA GPU

Every configuration (a side, a precision, f5lite's settings; the suites are `suite_configs`'s) runs at each batch
size in its own process once per round, the order reversed every other round. Both sides run a DiT (`--model`) with
the same random weights, cfg 2, sway -1, seed 0, a 2 s reference + 3 s generated (batch > 1: generated lengths falling
to half, padded as a real batch). "bf16" is bf16 weights, as each side's own inference casts a model; no autocast. A
worker times a warm-up (1 step; the full call when compiled), then `--reps` calls, and counts the backbone's calls;
medians over the rounds; RTF = seconds / generated audio. Against F5-TTS: the ratios, the outputs' differences and
(default suite) the issue's two targets, in `f5tts_sampling[_SUITE]_DEVICE.{json,md}`. `--rtf` needs no F5-TTS and
times a Vocos decode (random weights: the same cost) of each output apart: `infer_DEVICE[_bf16].{json,md}`.
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
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch

import f5lite
from benchmarks import results, runner
from benchmarks.models import DITS, F5TTS_VOCAB_SIZE, shared_weights
from f5lite.audio.constants import HOP_LENGTH, N_MELS, SAMPLE_RATE
from f5lite.audio.vocoder import VocosVocoder
from f5lite.models.distill import StudentBackbone
from f5lite.sampling import SamplerOptions

FRAMES_PER_SECOND = SAMPLE_RATE / HOP_LENGTH
STEPS, DEFAULT_STEPS, STUDENT_STEPS = 7, 32, 4
"""7 EPSS steps; F5-TTS's default 32 steps (with sway -1 and cfg 2: its `infer_process`); the student's 4."""
CFG_STRENGTH, SWAY, SEED, TOKENS_PER_SECOND = 2.0, -1.0, 0, 15
TARGET_ZERO_STAR, TARGET_BEST = 0.75, 0.5
VOCOS_CONFIG = Path(__file__).resolve().parents[1] / "tests" / "assets" / "vocos" / "config.yaml"
GUIDED = SamplerOptions(cfg_strength=CFG_STRENGTH, sway=SWAY)  # f5lite's options but for steps and CFG-Zero*


@dataclass(frozen=True)
class Config:
    """One timed configuration: whose sampler (`F5-TTS` or `f5lite`), in which precision (`fp32` or `bf16` weights).

    f5lite only: `zero_star` (CFG-Zero*: 1 zero-init step, optimized scale), `compiled` (`apply_inference_compile`),
    `student` (a distilled student: one pass per step, guidance as an input). `steps` use EPSS where it has a table.
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


REFERENCE = Config("f5lite", "fp32", steps=DEFAULT_STEPS)
"""The output every other one is compared with outside the default suite: f5lite's 32 steps in fp32, eager."""


def suite_configs(
    suite: str | None, *, f5tts: bool = True, compiled: bool = False, dtype: str = "fp32"
) -> list[Config]:
    """The configurations of a suite, F5-TTS's first (none without `f5tts`); `compiled` adds f5lite compiled.

    - None: F5-TTS's 7 EPSS in both precisions against f5lite's with and without CFG-Zero*.
    - `defaults`: F5-TTS at its defaults (32 steps, fp32) against f5lite's 32 steps and 7 EPSS + CFG-Zero*, each
      eager and compiled, in fp32 and with bf16 weights (the path `f5lite-infer` picks where bf16 is native).
    - `fewstep`: F5-TTS at its defaults against a distilled student (the DiT with its step and guidance embeddings)
      at 4 steps, one pass each, no unconditional pass; f5lite's 32 guided steps beside.
    - `rtf`: f5lite's 32 steps (a uniform grid), 16 and 7 (EPSS), 7 + CFG-Zero*, in `dtype`.
    """
    if suite == "rtf":
        settings = [(DEFAULT_STEPS, False), (16, False), (STEPS, False), (STEPS, True)]
        return [Config("f5lite", dtype, z, c, n) for c in (False, True)[: 1 + compiled] for n, z in settings]
    if suite is None:
        configs = [Config("F5-TTS", p) for p in ("fp32", "bf16")] if f5tts else []
        configs += [Config("f5lite", p, zero) for p in ("fp32", "bf16") for zero in (False, True)]
        return configs + ([Config("f5lite", p, True, True) for p in ("fp32", "bf16")] if compiled else [])
    configs = [Config("F5-TTS", "fp32", steps=DEFAULT_STEPS)] if f5tts else []
    if suite == "fewstep":
        configs += [REFERENCE]
        return configs + [Config("f5lite", p, steps=STUDENT_STEPS, student=True) for p in ("fp32", "bf16")]
    for p in ("fp32", "bf16"):
        configs += [Config("f5lite", p, False, c, DEFAULT_STEPS) for c in (False, True)]
        configs += [Config("f5lite", p, True, c) for c in (False, True)]
    return configs


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = argparse.ArgumentParser(prog=Path(__file__).name, description=__doc__.split("\n\n")[0])
    add, suite = parser.add_argument, parser.add_mutually_exclusive_group().add_argument
    suite("--defaults", action="store_true", help="F5-TTS at its defaults (32 steps) against f5lite's paths")
    suite("--fewstep", action="store_true", help="F5-TTS at its defaults against a distilled student at 4 steps")
    suite("--rtf", action="store_true", help="f5lite's four step settings alone, with the vocoder")
    add("--rounds", type=runner.at_least(1), default=3)
    add("--reps", type=runner.at_least(1), default=1, help="timed calls per process (default 1)")
    add("--threads", type=runner.at_least(1), default=2)
    add("--batches", type=runner.int_list(1), default=[1, 8], help="comma-separated batch sizes (default 1,8)")
    add("--seconds", type=float, default=3.0, help="longest generated audio (default 3)")
    add("--ref-seconds", type=float, default=2.0, help="reference audio (default 2)")
    add("--model", choices=tuple(DITS), default="mid", help="the DiT's size (benchmarks/models.py; default mid)")
    add("--dtype", choices=("fp32", "bf16"), default="fp32", help="--rtf: the backbone weights' precision")
    add("--compiled", action="store_true", help="also f5lite with per-block compile (slow start)")
    add("--device", choices=("cpu", "cuda"), default="cpu", help="where both sides sample")
    add("--out-dir", type=Path, help="write the JSON and Markdown results here")
    add("--note", default="", help="a line for the Markdown page (e.g. what else ran on the machine)")
    add("--f5lite-only", action="store_true", help=argparse.SUPPRESS)  # the script's own test
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run every configuration in its own process, `--rounds` interleaved rounds; write JSON and Markdown."""
    argv = sys.argv[1:] if argv is None else argv
    if (spec := runner.child_spec(argv)) is not None:
        print(json.dumps(run_worker(spec)))
        return 0
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.seconds > 0 or not args.ref_seconds >= 0:
        parser.error(f"--seconds must be > 0 and --ref-seconds >= 0, got {args.seconds} and {args.ref_seconds}")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no CUDA device here")
    f5tts = not (args.f5lite_only or args.rtf)
    if f5tts and importlib.util.find_spec("f5_tts") is None:
        parser.error("F5-TTS is not importable (No module named 'f5_tts'); see benchmarks/f5tts.py")
    args.suite = "fewstep" if args.fewstep else "defaults" if args.defaults else "rtf" if args.rtf else None
    configs, batches = suite_configs(args.suite, f5tts=f5tts, compiled=args.compiled, dtype=args.dtype), args.batches
    records: dict[int, dict[str, list[dict[str, Any]]]] = {b: {c.name: [] for c in configs} for b in batches}
    with tempfile.TemporaryDirectory() as tmp:
        pairs = {f"batch {b}: {c.name}": (b, c) for b in batches for c in configs}
        children = [child(name, c, b, args, Path(tmp, f"{b}-{c.name}.pt")) for name, (b, c) in pairs.items()]

        def show(run: runner.Run) -> None:
            batch, config = pairs[run.config]
            record = run.result or {}  # a failed run raised before this
            records[batch][config.name].append(record)
            print(f"round {run.round + 1} batch {batch} {config.name}: {record['times']}", flush=True)

        try:
            runner.run_interleaved(children, args.rounds, alternate=True, on_run=show)
        except runner.ChildFailedError as err:
            print(f"{err.run.stderr[-3000:]}{Path(__file__).name}: {err}", file=sys.stderr)
            return 1
        n_ref = round(args.ref_seconds * FRAMES_PER_SECOND)
        diffs = {b: differences(Path(tmp), b, configs, n_ref, args.suite) for b in batches}
    result = summarize(records, diffs, configs, args, importlib.metadata.version("f5-tts") if f5tts else None)
    print(json.dumps(result, indent=1))
    if args.out_dir:
        stem = f"infer_{args.device}" + "_bf16" * (args.dtype == "bf16")
        if not args.rtf:
            stem = f"f5tts_sampling_{args.suite + '_' if args.suite else ''}{args.device}"
        results.write_results(args.out_dir / f"{stem}.json", result, markdown(result))
    return 0


def child(name: str, config: Config, batch: int, args: argparse.Namespace, save: Path | None) -> runner.Config:
    """`config` at batch size `batch` as the runner's configuration `name`: this script's `--child` mode."""
    shared = {k: getattr(args, k) for k in ("device", "model", "reps", "threads", "seconds", "ref_seconds", "rtf")}
    spec = {"config": asdict(config), "batch": batch, "save": save and str(save), **shared}
    return runner.child_config(name, __file__, spec)


def inputs(batch: int, ref_seconds: float, seconds: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Reference mel `[b, n_ref, 100]`, text ids `[b, nt]` padded with -1, total frames `[b]`; seeded.

    Batch > 1: generated lengths from `seconds` down to half of it, so that the batch is padded as a real one is.
    """
    n_ref, n_gen = round(ref_seconds * FRAMES_PER_SECOND), max(2, round(seconds * FRAMES_PER_SECOND))
    totals = torch.tensor([n_ref + round(n_gen * (1 - i / (2 * batch))) for i in range(batch)])
    g = torch.Generator().manual_seed(0)
    cond = torch.randn(batch, n_ref, N_MELS, generator=g) - 5  # about a log-mel's level
    lengths = [max(1, round(TOKENS_PER_SECOND * int(total) / FRAMES_PER_SECOND)) for total in totals]
    text = torch.full((batch, max(lengths)), -1, dtype=torch.long)
    for i, length in enumerate(lengths):
        text[i, :length] = torch.randint(0, F5TTS_VOCAB_SIZE, (length,), generator=g)
    return cond, text, totals


def sampler(
    config: Config, dims: dict[str, Any], cond: torch.Tensor, text: torch.Tensor, duration: int | torch.Tensor
) -> tuple[torch.nn.Module, Callable[[int], torch.Tensor]]:
    """The backbone and `run(steps) -> mel [b, N, 100]` (fp32) of `config`, with the weights loaded and cast."""
    dtype, device = torch.bfloat16 if config.precision == "bf16" else torch.float32, cond.device
    if config.side == "F5-TTS":
        from f5_tts.model.backbones.dit import DiT as F5DiT
        from f5_tts.model.cfm import CFM as F5CFM

        theirs = F5DiT(**dims, text_num_embeds=F5TTS_VOCAB_SIZE, mel_dim=N_MELS)
        theirs.load_state_dict(shared_weights(dims))
        cfm = F5CFM(transformer=theirs, mel_spec_kwargs={"n_mel_channels": N_MELS}).to(device, dtype).eval()
        guidance = {"cfg_strength": CFG_STRENGTH, "sway_sampling_coef": SWAY, "seed": SEED}

        def run_f5tts(steps: int) -> torch.Tensor:
            with torch.no_grad():  # as F5-TTS's own `infer_batch_process` calls it
                return cfm.sample(cond, text, duration, steps=steps, use_epss=steps >= 5, **guidance)[0].float()

        return cfm.transformer, run_f5tts
    model = f5lite.build_backbone("dit", **dims, text_num_embeds=F5TTS_VOCAB_SIZE)
    model.load_state_dict(shared_weights(dims))
    model = model.to(device, dtype).eval()
    if config.student:  # the sampler steps it once per step with its step size and guidance, no unconditional pass
        model = StudentBackbone(model).to(device, dtype).eval()
    if config.compiled:
        f5lite.apply_inference_compile(model)

    def run_f5lite(steps: int) -> torch.Tensor:
        zero = config.zero_star and steps > 1  # zero-init with a single step would leave nothing to integrate
        options = replace(GUIDED, steps=steps, cfg_zero_init_steps=int(zero), cfg_zero_star=zero)
        return f5lite.sample(model, cond, text, duration, options, seed=SEED).float()

    return model, run_f5lite


def timed(fn: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    """`fn(*args)` and its wall time in seconds, the GPU's queued work included."""
    sync = torch.cuda.synchronize if torch.cuda.is_initialized() else lambda: None
    sync()
    start = time.perf_counter()
    out = fn(*args)
    sync()
    return out, time.perf_counter() - start


def run_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """In this process: a warm-up, then `reps` timed calls of the spec's configuration; the vocoder's with `rtf`.

    The warm-up's time is kept as `first_call_s`: for a compiled model it is the full call plus compilation. The
    backbone calls (and their batch sizes) are those of the last call; the spec's `save` gets its output.
    """
    torch.set_num_threads(spec["threads"])
    config, batch, reps = Config(**spec["config"]), spec["batch"], spec["reps"]
    cond, text, totals = (t.to(spec["device"]) for t in inputs(batch, spec["ref_seconds"], spec["seconds"]))
    backbone, run = sampler(config, DITS[spec["model"]], cond, text, int(totals[0]) if batch == 1 else totals)
    calls: list[int] = []
    backbone.register_forward_hook(lambda module, args, output: calls.append(int(output.shape[0])))
    first = timed(run, config.steps if config.compiled else 1)[1]  # a compiled model compiles at its first full call
    times = []
    for _ in range(reps):
        calls.clear()
        out, seconds = timed(run, config.steps)
        times.append(round(seconds, 4))
    n_ref = cond.shape[1]
    generated = round(float((totals - n_ref).sum()) / FRAMES_PER_SECOND, 4)
    parameters = sum(p.numel() for p in backbone.parameters())
    record = {"times": times, "first_call_s": round(first, 4), "backbone_calls": len(calls), "parameters": parameters}
    record |= {"backbone_batch": sorted(set(calls)), "generated_s": generated}
    if spec["rtf"]:
        vocoder = VocosVocoder.from_config(VOCOS_CONFIG).to(spec["device"])
        vocode = [timed(vocoder.decode, out[:, n_ref:])[1] for _ in range(reps + 1)][1:]  # after a warm-up
        record["vocoder_s"] = round(statistics.median(vocode), 4)
    if spec["save"]:
        torch.save(out.cpu(), spec["save"])
    record["peak_rss_gb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 3)
    if torch.cuda.is_initialized():
        record["peak_gpu_gb"] = round(torch.cuda.max_memory_allocated() / 1e9, 3)
        record["gpu"] = torch.cuda.get_device_name()
    return record


def base_of(config: Config, suite: str | None) -> Config:
    """What `config`'s time is compared with: F5-TTS's 7 EPSS at its precision by default, else at its defaults."""
    return Config("F5-TTS", "fp32", steps=DEFAULT_STEPS) if suite else Config("F5-TTS", config.precision)


def differences(tmp: Path, batch: int, configs: list[Config], n_ref: int, suite: str | None) -> dict:
    """Max and mean |output - its reference| over the generated frames, from the saved outputs.

    The reference is F5-TTS's 7 EPSS at the same precision in the default suite (in bf16 the two differ by design:
    F5-TTS's ODE state and time grid are bf16, f5lite's stay fp32), else f5lite's 32 steps in fp32 (`REFERENCE`).
    """
    out = {}
    for config in configs:
        reference = REFERENCE if suite else base_of(config, suite)
        if reference in configs and config != reference:
            a, b = (torch.load(tmp / f"{batch}-{c.name}.pt", weights_only=True)[:, n_ref:] for c in (config, reference))
            out[config.name] = {"max": float((a - b).abs().max()), "mean": float((a - b).abs().mean())}
    return out


def verdict(ratio: float, target: float) -> dict[str, Any]:
    """A ratio to F5-TTS against its target."""
    return {"ratio": round(ratio, 3), "target": target, "met": ratio <= target}


def targets(medians: dict[str, float]) -> dict[str, Any]:
    """The issue's two sampling targets, per precision and for the fastest settings, with whether each is met."""
    out: dict[str, Any] = {}
    for precision in ("fp32", "bf16"):
        base, ours = (medians.get(c.name) for c in (Config("F5-TTS", precision), Config("f5lite", precision, True)))
        if base and ours:
            out[f"7 EPSS + CFG-Zero* vs F5-TTS 7 EPSS, {precision}"] = verdict(ours / base, TARGET_ZERO_STAR)
    theirs = {k: v for k, v in medians.items() if k.startswith("F5-TTS")}
    mine = {k: v for k, v in medians.items() if k.startswith("f5lite")}
    if theirs and mine:
        best_theirs, best_mine = min(theirs, key=theirs.__getitem__), min(mine, key=mine.__getitem__)
        ratio = mine[best_mine] / theirs[best_theirs]
        out["best vs best"] = {"f5lite": best_mine, "F5-TTS": best_theirs, **verdict(ratio, TARGET_BEST)}
    return out


def over_rounds(by_name: Mapping[str, list[dict[str, Any]]], key: str, how: Callable = statistics.median) -> dict:
    """Each configuration's `how` (median) of a worker's `key` over the rounds."""
    return {name: round(how(record[key] for record in records), 4) for name, records in by_name.items()}


def summarize(records: dict, diffs: dict, configs: list[Config], args: argparse.Namespace, f5tts: str | None) -> dict:
    """The result of the workers' `records` (by batch size and name, one a round) and the `diffs`: per batch size the
    medians, ratios to each one's base (`base_of`), RTF (also with the vocoder), backbone calls, first calls, output
    differences, peak RSS and (default suite) the targets; `f5tts` is F5-TTS's version, None where it did not run."""
    header, per_batch, named = results.run_header(), {}, {c.name: c for c in configs}
    header["versions"]["f5-tts"] = f5tts
    for batch, by_name in records.items():
        runs = {name: [t for r in recs for t in r["times"]] for name, recs in by_name.items()}
        medians = {name: statistics.median(ts) for name, ts in runs.items()}
        bases = {k: medians.get(base_of(named[k], args.suite).name) for k in medians}
        last = {name: recs[-1] for name, recs in by_name.items()}
        generated = next(iter(last.values()))["generated_s"]
        data = per_batch[str(batch)] = {
            "median_s": {k: round(v, 3) for k, v in medians.items()},
            "ratio_to_base": {k: round(v / base, 3) for k, v in medians.items() if (base := bases[k])},
            "rtf": {k: round(v / generated, 4) for k, v in medians.items()},
            "backbone_calls": over_rounds(by_name, "backbone_calls", max),
            "backbone_batch": {k: r["backbone_batch"] for k, r in last.items()},
            "first_call_s": over_rounds(by_name, "first_call_s"),
            "mel_diff": diffs[batch],
            "peak_rss_gb": over_rounds(by_name, "peak_rss_gb", max),
            "generated_s": generated,
            "runs_s": runs,
        }
        if args.suite is None:
            data["targets"] = targets(medians)
        if args.rtf:
            data["vocoder_s"] = over_rounds(by_name, "vocoder_s")
            data["rtf_with_vocoder"] = {k: round((medians[k] + v) / generated, 4) for k, v in data["vocoder_s"].items()}
    model = {"dit": args.model, **DITS[args.model], "parameters": next(iter(last.values()))["parameters"]}
    return {
        **header,
        **{k: getattr(args, k) for k in ("suite", "threads", "rounds", "note")},
        "reps_per_process": args.reps,
        "seconds": {"reference": args.ref_seconds, "generated_longest": args.seconds},
        "model": model,
        "settings": "cfg 2, sway -1; EPSS where F5-TTS has a table (7, 16 steps), else uniform; CFG-Zero*: 1 zero-init "
        "step + optimized scale; bf16 = bf16 weights on both sides, no autocast" + "; Vocos: random weights" * args.rtf,
        "batches": per_batch,
    }


def markdown(result: dict[str, Any]) -> str:
    """The result as Markdown: one table per batch size (columns without a value left out), then the targets."""
    base = "F5-TTS at its defaults" if result["suite"] else "F5-TTS 7 EPSS, same precision"
    reference = "f5lite's 32-step fp32 output" if result["suite"] else "F5-TTS's output at the same precision"
    title = "f5lite's step settings" if result["suite"] == "rtf" else "f5lite against F5-TTS, same weights"
    model = result["model"]
    lines = [
        f"# Sampling: {title} ({result['suite'] or 'equal precision'})",
        "",
        f"{results.describe(result)}; {result['threads']} threads; {model['dit']} DiT "
        f"({model['parameters'] / 1e6:.1f}M parameters); {result['settings']}; {result['seconds']['reference']} s "
        f"reference + up to {result['seconds']['generated_longest']} s generated; every configuration in its own "
        f"process, {result['rounds']} interleaved rounds x {result['reps_per_process']} timed call(s), medians. First "
        f"call: the warm-up (1 step eager; the full call with compilation when compiled). Mel difference: against "
        f"{reference}.",
        *([f"Note: {result['note']}"] if result["note"] else []),
    ]
    head = ["configuration", "seconds", f"vs {base}", "RTF", "vocoder s", "RTF with vocoder", "backbone calls x batch"]
    head += ["first call s", "max / mean mel diff", "peak RSS GB"]
    for batch, d in result["batches"].items():
        rows = []
        for k, seconds in d["median_s"].items():
            ratio, vocoder, diff = d["ratio_to_base"].get(k), d.get("vocoder_s", {}).get(k), d["mel_diff"].get(k)
            row = [k, f"{seconds:.3f}", f"{ratio:.2f}x" if ratio else "", f"{d['rtf'][k]:.3f}"]
            row += [f"{vocoder:.3f}", f"{d['rtf_with_vocoder'][k]:.3f}"] if vocoder is not None else ["", ""]
            row += [f"{d['backbone_calls'][k]} x {'/'.join(map(str, d['backbone_batch'][k]))}"]
            row += [f"{d['first_call_s'][k]:.2f}", f"{diff['max']:.3g} / {diff['mean']:.3g}" if diff else ""]
            rows.append([*row, f"{d['peak_rss_gb'][k]:.2f}"])
        keep = [i for i in range(len(head)) if any(row[i] for row in rows)]  # leave out the columns with no value
        table = results.table([head[i] for i in keep], ([row[i] for i in keep] for row in rows), " " + "r" * len(keep))
        lines += ["", f"## Batch {batch}", "", *table]
        for label, target in d.get("targets", {}).items():
            extra = f" ({target['f5lite']} / {target['F5-TTS']})" if "f5lite" in target else ""
            met = "met" if target["met"] else "not met"
            lines.append(f"- {label}{extra}: {target['ratio']:.2f}x, target <= {target['target']}x: {met}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
