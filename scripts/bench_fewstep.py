"""A distilled student against its teacher: distance to the teacher's 32 guided steps, speech metrics, sampling time.

    python scripts/bench_fewstep.py --teacher runs/demo/export --student runs/demo_student/export \\
        --second-stage runs/demo_student2/export --eval --out-dir scripts/results

For every row of a test set (the demo's `val/testset.txt` by default) the teacher's 32 guided steps are the reference;
the teacher at 4 steps and the student (and `--second-stage`) at 2, 4 and 8 steps sample the same row with the same
noise and duration. Reported per setting: the mean |mel - teacher's 32-step mel| over the generated frames, the median
sampling time per row (one process, the settings interleaved row by row), and with `--eval` the means of `f5lite-eval`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from benchmarks import results
from f5lite.audio import load_audio, log_mel
from f5lite.data.testset import read_testset
from f5lite.infer import Synthesizer
from f5lite.infer.chunking import prepare_ref_text
from f5lite.paths import demo_dir
from f5lite.sampling import SamplerOptions, sample


@dataclass(frozen=True)
class Setting:
    """One sampled configuration."""

    name: str
    model: str  # "teacher", "student" or "second stage"
    steps: int


SETTINGS = (
    Setting("teacher 32 steps", "teacher", 32),
    Setting("teacher 4 steps", "teacher", 4),
    Setting("student 2 steps", "student", 2),
    Setting("student 4 steps", "student", 4),
    Setting("student 8 steps", "student", 8),
)
SECOND_STAGE = tuple(Setting(f"second stage {n} steps", "second stage", n) for n in (2, 4, 8))


def measure(models: dict[str, Path], settings: tuple[Setting, ...], testset: Path, threads: int) -> dict[str, Any]:
    """Mel distance to the teacher's 32 steps and sampling time, per setting (`models`: name -> export)."""
    torch.set_num_threads(threads)
    synths = {
        name: Synthesizer.from_pretrained(path, "griffin_lim", device="cpu", dtype="fp32", compile=False)
        for name, path in models.items()
    }
    rows = read_testset(testset)
    distances: dict[str, list[float]] = {s.name: [] for s in settings}
    seconds: dict[str, list[float]] = {s.name: [] for s in settings}
    for i, row in enumerate(rows):
        synth = synths["teacher"]
        ref_mel = log_mel(load_audio(row.ref_audio)[None], kind=synth.mel_type)
        ref_text = prepare_ref_text(row.ref_text)
        ids = synth.encoder.encode([ref_text + row.gen_text]).ids
        total = synth.duration.total_frames(ref_mel.shape[1], ref_text, row.gen_text)
        mels = {}
        for setting in settings:
            model = synths[setting.model].backbone
            start = time.perf_counter()
            mels[setting.name] = sample(model, ref_mel, ids, total, SamplerOptions(steps=setting.steps), seed=i)
            seconds[setting.name].append(time.perf_counter() - start)
        reference = mels[settings[0].name][:, ref_mel.shape[1] :]
        for name, mel in mels.items():
            distances[name].append(float((mel[:, ref_mel.shape[1] :] - reference).abs().mean()))
    return {
        s.name: {
            "mel_l1_to_teacher_32": round(statistics.mean(distances[s.name]), 4),
            "median_sampling_s": round(statistics.median(seconds[s.name]), 4),
            "backbone_calls": s.steps * (2 if s.model == "teacher" else 1),
        }
        for s in settings
    }


def evaluate(
    models: dict[str, Path], settings: tuple[Setting, ...], testset: Path, work: Path
) -> dict[str, dict[str, float]]:
    """`f5lite-eval` of every setting, each in its own process; the means of its summary."""
    out = {}
    for setting in settings:
        model = models[setting.model]
        folder = work / setting.name.replace(" ", "_")
        command = [sys.executable, "-m", "f5lite.eval", f"model={model}", f"testset={testset}", f"output={folder}"]
        command += ["sample.vocoder=griffin_lim", f"sample.steps={setting.steps}", "device=cpu", "dtype=fp32"]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"bench_fewstep.py: f5lite-eval of {setting.name} failed: {done.stderr.strip()[-500:]}")
        means = json.loads((folder / "summary.json").read_text())["means"]
        out[setting.name] = {k: round(float(v), 4) for k, v in means.items() if isinstance(v, (int, float))}
    return out


def markdown(result: dict[str, Any]) -> str:
    """The result as a Markdown page."""
    second = f", second stage {result['second_stage']}" if result.get("second_stage") else ""
    keys = result["eval_keys"]
    rows = [[name, row["backbone_calls"], f"{row['mel_l1_to_teacher_32']:.4f}", f"{row['median_sampling_s']:.3f}",
             *(f"{e[k]:.3f}" if k in (e := result["eval"].get(name, {})) else "" for k in keys)]
            for name, row in result["settings"].items()]  # fmt: skip
    head = ["setting", "backbone calls", "mel L1 to teacher 32", "median sampling s", *keys]
    lines = ["# Few-step student against its teacher", "",
             f"{results.describe(result)}; teacher {result['teacher']}, student {result['student']}{second}; test set "
             f"{result['testset']} ({result['rows']} rows); {result['threads']} threads, fp32, Griffin-Lim. Distance: "
             "mean |mel - teacher's 32-step mel| over the generated frames (log-mel units), same noise and duration per "
             f"row. Distillation: {result['distillation']}.", "", *results.table(head, rows, " " + "r" * (3 + len(keys)))]  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Measure, then write `OUT_DIR/fewstep_cpu.{json,md}`."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--teacher", type=Path, required=True, help="the teacher's export")
    add("--student", type=Path, required=True, help="the distilled student's export")
    add("--second-stage", type=Path, help="a second-stage student's export (distilled from --student)")
    add("--testset", type=Path, default=demo_dir() / "val" / "testset.txt")
    add("--threads", type=int, default=2)
    add("--eval", action="store_true", help="also run f5lite-eval for every setting (minutes)")
    add("--distillation", default="", help="what the distillation cost, for the page")
    add("--out-dir", type=Path)
    args = parser.parse_args(argv)
    models = {"teacher": args.teacher, "student": args.student}
    chosen: tuple[Setting, ...] = SETTINGS
    if args.second_stage:
        models["second stage"] = args.second_stage
        chosen += SECOND_STAGE
    settings = measure(models, chosen, args.testset, args.threads)
    evals: dict[str, dict[str, float]] = {}
    if args.eval:
        with tempfile.TemporaryDirectory() as work:
            evals = evaluate(models, chosen, args.testset, Path(work))
    l1 = {name: settings[name]["mel_l1_to_teacher_32"] for name in ("student 4 steps", "teacher 4 steps")}
    result = {
        **results.run_header(), "teacher": str(args.teacher), "student": str(args.student),
        "second_stage": str(args.second_stage) if args.second_stage else None, "testset": str(args.testset),
        "rows": len(read_testset(args.testset)), "threads": args.threads, "distillation": args.distillation,
        "settings": settings, "eval": evals,
        "eval_keys": [k for k in ("wer", "sim", "mos", "mel_l1") if any(k in e for e in evals.values())],
        "student_4_closer_than_teacher_4": l1["student 4 steps"] < l1["teacher 4 steps"],
    }  # fmt: skip
    print(json.dumps(result, indent=1))
    if args.out_dir:
        results.write_results(args.out_dir / "fewstep_cpu.json", result, markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
