"""The quality side of the inference paths: `f5lite-eval` on one model and test set for each path, in one table.

    make demo                                    # a trained model: runs/demo/export
    python scripts/eval_paths.py --model runs/demo/export --testset f5lite/demo_data/val/testset.txt \\
        --out runs/eval_paths sample.vocoder=griffin_lim       # key=value: added to every f5lite-eval run

A faster path must never be a worse one unseen. Each path (steps, schedule, CFG-Zero*, dtype) is synthesized and
scored by `f5lite-eval` in its own process with the same seed (WER, SIM, MOS, mel distances to the recording); then
each other path's audio is scored against the first path's (F5-TTS's defaults: 32 steps, fp32) as the ground truth.
Speed is `compare_f5tts_sampling.py --defaults`'s. Writes `OUT/eval_paths.json` and `.md` (and a copy in `--results`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks import results
from f5lite.data.testset import read_testset, write_testset

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


def run_eval(overrides: Sequence[str], output: Path) -> dict[str, Any]:
    """`f5lite-eval` with `overrides` into `output`, in its own process; its `summary.json`.

    Raises:
        SystemExit: it failed (its last lines are printed).
    """
    command = [sys.executable, "-m", "f5lite.eval.cli", *overrides, f"output={output}"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-3000:])
        raise SystemExit(f"eval_paths.py: f5lite-eval failed ({done.returncode}): {' '.join(command[3:])}")
    summary: dict[str, Any] = json.loads((output / "summary.json").read_text(encoding="utf-8"))
    return summary


def testset_against(testset: Path, audio_dir: Path, out: Path) -> Path:
    """A copy of `testset` whose ground truth of each row is `audio_dir/<id>.wav`."""
    rows = [replace(row, gt_audio=(audio_dir / f"{row.id}.wav").resolve()) for row in read_testset(testset)]
    write_testset(out, rows)
    return out


def markdown(result: dict[str, Any]) -> str:
    """The result as a Markdown page."""
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


def main(argv: Sequence[str] | None = None) -> int:
    """Evaluate every path; write and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--model", required=True, help="an f5lite export or run directory")
    add("--testset", type=Path, required=True, help="id|ref_audio|ref_text|gen_text|gt_audio")
    add("--out", type=Path, required=True, help="a directory for every path's f5lite-eval output")
    add("--paths", default=",".join(PATHS), help=f"comma-separated, of {', '.join(PATHS)}")
    add("--results", type=Path, help="also copy eval_paths.json/.md here (e.g. scripts/results)")
    add("extra", nargs="*", help="key=value added to every f5lite-eval run")
    args = parser.parse_args(argv)
    keys = [k.strip() for k in args.paths.split(",") if k.strip()]
    if not keys or any(k not in PATHS for k in keys) or keys[0] != REFERENCE:
        parser.error(f"--paths takes keys of {', '.join(PATHS)}, starting with {REFERENCE}")
    if not args.testset.is_file():
        parser.error(f"--testset {args.testset}: no such file")
    args.out.mkdir(parents=True, exist_ok=True)
    common = [f"model={args.model}", f"testset={args.testset}", "sample.seed=0", *args.extra]
    paths: dict[str, dict[str, Any]] = {}
    for key in keys:
        label, overrides = PATHS[key]
        summary = run_eval([*common, *overrides], args.out / key)
        paths[key] = {"label": label, "overrides": overrides, "means": summary["means"]}
        print(f"{label}: {json.dumps(summary['means'])}", flush=True)
    against = testset_against(args.testset, args.out / REFERENCE / "audio", args.out / "testset_vs_32_fp32.txt")
    for key in keys[1:]:
        scored = args.out / f"{key}_vs_32_fp32"
        shutil.rmtree(scored, ignore_errors=True)  # a fresh scoring: the reference audio may have changed
        summary = run_eval([f"audio_dir={args.out / key / 'audio'}", f"testset={against}", "metrics=[mel]"], scored)
        paths[key]["mel_l1_to_reference"] = summary["means"].get("mel_l1")
    result = {**results.run_header(), "model": args.model, "testset": str(args.testset),
              "rows": len(read_testset(args.testset)), "extra": args.extra, "paths": paths}  # fmt: skip
    text = markdown(result)
    print(text)
    for directory in [args.out, *([args.results] if args.results else [])]:
        results.write_results(directory / "eval_paths.json", result, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
