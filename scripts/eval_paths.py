"""Inference paths scored by `f5lite-eval` on one model and test set; or a few-step student against its teacher.

    make demo                                    # a trained model: runs/demo/export
    python scripts/eval_paths.py --model runs/demo/export --out runs/eval_paths \\
        sample.vocoder=griffin_lim               # key=value: added to every f5lite-eval run
    python scripts/eval_paths.py --model runs/demo/export --student runs/demo_student/export \\
        --second-stage runs/demo_student2/export --eval --out runs/fewstep --results scripts/results
    python scripts/eval_paths.py --testset runs/clone_corpus/test/testset.txt --prompt-clips 2 3

A faster path must never be a worse one unseen. Each path (steps, schedule, CFG-Zero*, dtype) is scored by
`f5lite-eval` in its own process with the same seed, then against the first path's audio (F5-TTS's defaults: 32
steps, fp32) (`eval_paths`). With `--student` the model is its teacher: the teacher at 32 (the reference) and 4
steps and the student (and `--second-stage`) at 2, 4 and 8 sample the same rows with the same noise and duration,
interleaved row by row in this process: mean |mel - teacher's 32-step mel| over the generated frames, median
sampling time per row, and with `--eval` f5lite-eval's means (`fewstep_cpu`). Writes OUT/NAME.{json,md} (and into
`--results`). `--prompt-clips K` writes `testset_promptK.txt` beside the test set, each row's prompt K clips of its
voice read one after another: the prompt's length alone, for f5lite-eval (issue 55's lever).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks import results
from benchmarks.arms import evaluate, tool
from f5lite.data.testset import TestRow, read_testset, write_testset
from f5lite.paths import demo_dir

ZERO = ["sample.steps=7", "sample.cfg_zero_init_steps=1", "sample.cfg_zero_star=true"]
PATHS: dict[str, tuple[str, list[str]]] = {
    "32_fp32": ("32 steps, fp32 (F5-TTS's defaults)", ["sample.steps=32", "dtype=fp32"]),
    "32_bf16": ("32 steps, bf16", ["sample.steps=32", "dtype=bf16"]),
    "7zero_fp32": ("7 EPSS + CFG-Zero*, fp32", [*ZERO, "dtype=fp32"]),
    "7zero_bf16": ("7 EPSS + CFG-Zero*, bf16 (recommended)", [*ZERO, "dtype=bf16"]),
}
"""Each path: its label and its `f5lite-eval` overrides. The first is the reference of the mel distances."""
REFERENCE = next(iter(PATHS))
SHOWN = ("wer", "sim", "mos", "mel_l1", "mcd", "f0_rmse")
"""The summary means shown per path (as `f5lite-eval` names them)."""
FEWSTEP = (("teacher", 32), ("teacher", 4), *(("student", n) for n in (2, 4, 8)))
SECOND_STAGE = tuple(("second stage", n) for n in (2, 4, 8))
"""The few-step settings, (model, steps), named "MODEL STEPS steps"; the first is the reference."""


def run_eval(overrides: Sequence[str], output: Path) -> dict[str, Any]:
    """`f5lite-eval` with `overrides` into `output`, in its own process; its `summary.json`.

    Raises:
        SystemExit: it failed (its last line of output ends the message).
    """
    try:
        return evaluate([tool("f5lite-eval"), *overrides, f"output={output}"], output, threads=os.cpu_count() or 1)
    except RuntimeError as err:
        raise SystemExit(f"eval_paths.py: {err}") from None


def longer_prompts(rows: Sequence[TestRow], clips: int, folder: Path) -> list[TestRow]:
    """The rows of voices with `clips` distinct prompts, each prompt now `clips` of them (FLAC under `folder`).

    A ValueError when a row has no voice, or no voice has `clips` distinct prompts.
    """
    import torch

    from f5lite.audio import SAMPLE_RATE, load_audio, save_audio

    prompts: dict[str, list[tuple[Path, str]]] = {}
    for row in rows:
        if row.voice is None:
            raise ValueError(f"row {row.id} has no voice column")
        if (row.ref_audio, row.ref_text) not in prompts.setdefault(row.voice, []):
            prompts[row.voice].append((row.ref_audio, row.ref_text))
    out = []
    for row in rows:
        own = prompts[str(row.voice)]
        if len(own) < clips:
            continue
        start = own.index((row.ref_audio, row.ref_text))
        chosen = [own[(start + k) % len(own)] for k in range(clips)]
        path = folder / str(row.voice) / f"{row.id}.flac"
        path.parent.mkdir(parents=True, exist_ok=True)
        save_audio(path, torch.cat([load_audio(audio) for audio, _ in chosen]), SAMPLE_RATE)
        out.append(replace(row, ref_audio=path, ref_text=" ".join(text for _, text in chosen)))
    if not out:
        raise ValueError(f"no voice has {clips} distinct prompts")
    return out


def testset_against(testset: Path, audio_dir: Path, out: Path) -> Path:
    """A copy of `testset` whose ground truth of each row is `audio_dir/<id>.wav`."""
    rows = [replace(row, gt_audio=(audio_dir / f"{row.id}.wav").resolve()) for row in read_testset(testset)]
    write_testset(out, rows)
    return out


def paths(args: argparse.Namespace, keys: list[str]) -> dict[str, Any]:
    """Every path scored by `f5lite-eval`, then against the reference path's audio."""
    common = [f"model={args.model}", f"testset={args.testset}", "sample.seed=0", *args.extra]
    found: dict[str, dict[str, Any]] = {}
    for key in keys:
        label, overrides = PATHS[key]
        summary = run_eval([*common, *overrides], args.out / key)
        found[key] = {"label": label, "overrides": overrides, "means": summary["means"]}
        print(f"{label}: {json.dumps(summary['means'])}", flush=True)
    against = testset_against(args.testset, args.out / REFERENCE / "audio", args.out / "testset_vs_32_fp32.txt")
    for key in keys[1:]:
        scored = args.out / f"{key}_vs_32_fp32"
        shutil.rmtree(scored, ignore_errors=True)  # a fresh scoring: the reference audio may have changed
        summary = run_eval([f"audio_dir={args.out / key / 'audio'}", f"testset={against}", "metrics=[mel]"], scored)
        found[key]["mel_l1_to_reference"] = summary["means"].get("mel_l1")
    return {"extra": args.extra, "paths": found}


def paths_page(result: dict[str, Any]) -> str:
    """The paths as a Markdown page."""
    rows = []
    for data in result["paths"].values():
        to_ref = data.get("mel_l1_to_reference")
        cells = [f"{data['means'][k]:.4g}" if k in data["means"] else "-" for k in SHOWN]
        rows.append([data["label"], *cells, "-" if to_ref is None else f"{to_ref:.4g}"])
    lines = ["# Inference paths scored by f5lite-eval", "",
             f"Machine: {results.describe(result)}. Model `{result['model']}`, test set `{result['testset']}` "
             f"({result['rows']} rows), seed 0, every path in its own `f5lite-eval` process; extra settings: "
             f"{' '.join(result['extra']) or 'none'}. Mel L1 to 32 steps: the path's audio against the 32-step fp32 "
             "audio of the same rows (log-mel units). Lower is better except for sim and mos.", "",
             *results.table(["path", *SHOWN, "mel L1 to 32 steps, fp32"], rows, " " + "r" * (len(SHOWN) + 1))]  # fmt: skip
    return "\n".join(lines) + "\n"


def fewstep(args: argparse.Namespace, settings: Sequence[tuple[str, int]]) -> dict[str, Any]:
    """Mel distance to the teacher's 32 steps and sampling time per setting; with `--eval` f5lite-eval's means."""
    import torch

    from f5lite.audio import load_audio, log_mel
    from f5lite.infer import Synthesizer
    from f5lite.infer.chunking import prepare_ref_text
    from f5lite.sampling import SamplerOptions, sample

    torch.set_num_threads(args.threads)
    models = {"teacher": args.model, "student": args.student, "second stage": args.second_stage}
    models = {name: path for name, path in models.items() if path is not None}
    load = Synthesizer.from_pretrained
    synths = {name: load(models[name], "griffin_lim", device="cpu", dtype="fp32", compile=False) for name in models}
    names = [f"{model} {steps} steps" for model, steps in settings]
    distances, seconds = ({name: [] for name in names} for _ in range(2))
    for i, row in enumerate(read_testset(args.testset)):
        synth = synths["teacher"]
        ref_mel = log_mel(load_audio(row.ref_audio)[None], kind=synth.mel_type)
        ref_text = prepare_ref_text(row.ref_text)
        ids = synth.encoder.encode([ref_text + row.gen_text]).ids
        total = synth.duration.total_frames(ref_mel.shape[1], ref_text, row.gen_text)
        mels = {}
        for name, (model, steps) in zip(names, settings, strict=True):
            start = time.perf_counter()
            mels[name] = sample(synths[model].backbone, ref_mel, ids, total, SamplerOptions(steps=steps), seed=i)
            seconds[name].append(time.perf_counter() - start)
        for name, mel in mels.items():
            distances[name].append(float((mel - mels[names[0]])[:, ref_mel.shape[1] :].abs().mean()))
    measured, evals = {}, {}
    for name, (model, steps) in zip(names, settings, strict=True):
        measured[name] = {"mel_l1_to_teacher_32": round(statistics.mean(distances[name]), 4)}
        measured[name]["median_sampling_s"] = round(statistics.median(seconds[name]), 4)
        measured[name]["backbone_calls"] = steps * (2 if model == "teacher" else 1)
        if args.eval:
            overrides = [f"model={models[model]}", f"testset={args.testset}", "sample.vocoder=griffin_lim"]
            overrides += [f"sample.steps={steps}", "device=cpu", "dtype=fp32"]
            means = run_eval(overrides, args.out / name.replace(" ", "_"))["means"]
            evals[name] = {k: round(float(v), 4) for k, v in means.items() if isinstance(v, (int, float))}
    l1 = {name: measured[name]["mel_l1_to_teacher_32"] for name in ("student 4 steps", "teacher 4 steps")}
    return {
        "teacher": str(args.model), "student": str(args.student), "testset": str(args.testset),
        "second_stage": str(args.second_stage) if args.second_stage else None, "threads": args.threads,
        "distillation": args.distillation, "settings": measured, "eval": evals,
        "eval_keys": [k for k in ("wer", "sim", "mos", "mel_l1") if any(k in e for e in evals.values())],
        "student_4_closer_than_teacher_4": l1["student 4 steps"] < l1["teacher 4 steps"],
    }  # fmt: skip


def fewstep_page(result: dict[str, Any]) -> str:
    """The few-step settings as a Markdown page."""
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


def main(argv: Sequence[str] | None = None) -> int:
    """Score every path (or few-step setting); write, copy and print the page."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--model", type=Path, help="an f5lite export or run directory (with --student: the teacher)")
    add("--testset", type=Path, default=demo_dir() / "val" / "testset.txt", help="default: the demo's held-out rows")
    add("--out", type=Path, help="a directory for every f5lite-eval output and the results")
    add("--results", type=Path, help="also copy the results here (e.g. scripts/results)")
    add("--paths", default=",".join(PATHS), help=f"comma-separated, of {', '.join(PATHS)}")
    add("extra", nargs="*", help="key=value added to every path's f5lite-eval run")
    add("--student", type=Path, help="a few-step student of --model (its teacher): the few-step settings instead")
    add("--second-stage", type=Path, help="with --student: a second-stage student's export (distilled from it)")
    add("--eval", action="store_true", help="with --student: also run f5lite-eval for every setting (minutes)")
    add("--threads", type=int, default=2, help="with --student: torch threads of the sampling (default 2)")
    add("--distillation", default="", help="with --student: what the distillation cost, for the page")
    add("--prompt-clips", type=int, nargs="+", help="write the test set with prompts of these many clips, score none")
    args = parser.parse_args(argv)
    if args.prompt_clips:
        return prompt_testsets(parser, args)
    if args.model is None or args.out is None:
        parser.error("--model and --out are needed (unless --prompt-clips)")
    keys = [k.strip() for k in args.paths.split(",") if k.strip()]
    if not keys or any(k not in PATHS for k in keys) or keys[0] != REFERENCE:
        parser.error(f"--paths takes keys of {', '.join(PATHS)}, starting with {REFERENCE}")
    if not args.testset.is_file():
        parser.error(f"--testset {args.testset}: no such file")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.student:
        name, result = "fewstep_cpu", fewstep(args, FEWSTEP + (SECOND_STAGE if args.second_stage else ()))
    else:
        name, result = "eval_paths", paths(args, keys)
    result = {**results.run_header(), "model": str(args.model), "testset": str(args.testset),
              "rows": len(read_testset(args.testset)), **result}  # fmt: skip
    page = (fewstep_page if args.student else paths_page)(result)
    print(page)
    for directory in [args.out, *([args.results] if args.results else [])]:
        results.write_results(directory / f"{name}.json", result, page)
    return 0


def prompt_testsets(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """`--prompt-clips`: write `testset_promptK.txt` beside the test set for each K."""
    if min(args.prompt_clips) < 2:
        parser.error(f"--prompt-clips must be at least 2 (1 is the test set itself), got {min(args.prompt_clips)}")
    try:  # a missing or bad test set or prompt clip: one line, not a traceback
        rows = read_testset(args.testset)
        for clips in args.prompt_clips:
            target = args.testset.with_name(f"testset_prompt{clips}.txt")
            write_testset(target, kept := longer_prompts(rows, clips, args.testset.parent / f"refs_prompt{clips}"))
            print(f"{target}: {len(kept)} of {len(rows)} rows, prompts of {clips} clips")
    except ValueError as err:  # AudioError is one
        parser.exit(2, f"eval_paths.py: {err}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
