"""scripts/bench_speaks.py --start (bench_reward): what its arms run, and how it reads their scores (seeds, pairs, reward hacking)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.scripts import load_script

from benchmarks import arms as bench_arms

bench = load_script("bench_speaks")


def write_eval(work: Path, name: str, seed: int, rows: dict[str, tuple[float, float, float]]) -> None:
    out = work / "eval" / f"{name}-seed{seed}"
    out.mkdir(parents=True)
    lines = [json.dumps({"id": i, "wer": w, "sim": s, "mos": m}) for i, (w, s, m) in rows.items()]
    (out / "results.jsonl").write_text("\n".join(lines) + "\n")


def test_a_change_is_paired_by_seed_and_by_row(tmp_path: Path) -> None:
    for seed in (0, 1):
        write_eval(tmp_path, "start", seed, {"a": (0.5 + seed, 0.8, 2.0), "b": (0.3, 0.7, 2.0)})
        write_eval(tmp_path, "grpo", seed, {"a": (0.3 + seed, 0.8, 2.0), "b": (0.1, 0.7, 2.5), "c": (9, 9, 9)})
    diff = bench.paired(tmp_path, "grpo", "start", [0, 1])
    assert diff["rows"] == 2  # a row only one side scored is left out
    assert diff["wer"]["mean"] == pytest.approx(-0.2) and diff["wer"]["ci95"] == pytest.approx([-0.2, -0.2])
    assert diff["mos"]["mean"] == pytest.approx(0.25)
    assert diff["mos"]["ci95"][0] == pytest.approx(0.0) and diff["mos"]["ci95"][1] == pytest.approx(0.5)


def scores(wer: list[float], sim: list[float], mos: list[float]) -> dict[int, dict[str, float]]:
    return {s: {"wer": w, "sim": v, "mos": m} for s, (w, v, m) in enumerate(zip(wer, sim, mos, strict=True))}


def test_a_wer_gain_bought_with_the_voice_is_flagged() -> None:
    summary = bench.summarize({
        "start": scores([0.5, 0.6, 0.55], [0.80, 0.81, 0.80], [2.0, 2.1, 2.0]),
        "grpo": scores([0.3, 0.4, 0.35], [0.60, 0.62, 0.61], [2.0, 2.1, 2.0]),  # WER down, SIM collapsed
        "finetune": scores([0.45, 0.5, 0.5], [0.80, 0.81, 0.80], [2.0, 2.1, 2.05]),  # WER down, nothing lost
        "worse": scores([0.6, 0.7, 0.6], [0.60, 0.62, 0.61], [2.0, 2.1, 2.0]),  # WER up: nothing was bought
    })  # fmt: skip
    assert summary["grpo"]["hacked"] == ["sim"]
    assert summary["finetune"]["hacked"] == [] and summary["worse"]["hacked"] == []
    assert summary["grpo"]["wer"]["change"] == pytest.approx({"mean": -0.2, "min": -0.2, "max": -0.2})
    assert summary["start"]["wer"]["mean"] == pytest.approx(0.55) and "hacked" not in summary["start"]


def test_both_arms_share_the_learning_rate_ema_and_start_and_only_grpo_gets_prompts(tmp_path: Path) -> None:
    args = bench.parse_args(["--start", str(tmp_path / "export"), "--corpus", str(tmp_path), "--lr", "3e-5"])
    grpo, plain = bench.arm_settings("grpo", args), bench.arm_settings("finetune", args)
    shared = [f"init.weights={tmp_path / 'export'}", "optim.lr=3e-05", "ema.decay=0.9", "eval.every=0"]
    assert all(key in grpo and key in plain for key in shared)
    assert f"grpo.prompts={tmp_path / 'rl' / 'prompts.txt'}" in grpo
    assert not any(key.startswith("grpo.") for key in plain)


def test_with_a_predictor_the_arms_train_it_from_there_and_each_is_scored_with_the_start_s_model(
    tmp_path: Path,
) -> None:
    start, predictor = tmp_path / "export", tmp_path / "predictor"
    start.mkdir()
    (start / "config.json").write_text(json.dumps({"tokenizer": "ipa"}))
    args = bench.parse_args(["--start", str(start), "--duration", str(predictor), "--corpus", str(tmp_path),
                             "--lr", "3e-4"])  # fmt: skip
    grpo, plain = bench.arm_settings("grpo", args), bench.arm_settings("finetune", args)
    shared = [f"duration.init={predictor}", "duration.lr=0.0003", "data.tokenizer=ipa", "eval.every=0"]
    assert all(key in grpo and key in plain for key in shared)
    assert f"init.weights={start}" in grpo and f"grpo.prompts={tmp_path / 'rl' / 'prompts.txt'}" in grpo
    assert not any(key.startswith(("grpo.", "init.", "optim.lr")) for key in plain)
    for name in bench.REWARD_ARMS:
        (tmp_path / "work" / "exports" / name).mkdir(parents=True)  # exported before: not exported again
    arms = [bench.Arm(name=n, run_dir=str(tmp_path / n), recipe="", corpus="", overrides=[]) for n in bench.REWARD_ARMS]
    models = bench.model_keys(arms, start, predictor, tmp_path / "work")
    assert models == {
        "start": [f"model={start}", f"duration={predictor}"],
        **{n: [f"model={start}", f"duration={tmp_path / 'work' / 'exports' / n}"] for n in bench.REWARD_ARMS},
    }


def test_a_folder_scored_before_is_scored_again_not_read_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The start's scores of an earlier run (30 rows) copied into a run asked for 100: f5lite-eval runs again (it
    # keeps the rows it has and scores the rest), so the start is scored on the arms' rows, not read from before.
    stale = tmp_path / "eval" / "start-seed0"
    stale.mkdir(parents=True)
    (stale / "summary.json").write_text(json.dumps({"means": {"wer": 0.9, "sim": 0.1, "mos": 1.0}}))
    calls = []

    def f5lite_eval(command: list[str], threads: int = 1) -> None:
        calls.append(command)
        keys = dict(arg.split("=", 1) for arg in command[1:])
        means = {"wer": int(keys["limit"]) / 1000, "sim": 0.8, "mos": 2.0}
        (Path(keys["output"]) / "summary.json").write_text(json.dumps({"means": means}))

    monkeypatch.setattr(bench_arms, "run_tool", f5lite_eval)  # where `evaluate` looks it up
    args = bench.parse_args(["--start", str(tmp_path / "export"), "--corpus", str(tmp_path), "--work", str(tmp_path)])
    args.seeds, args.limit, args.jobs = [0], 100, 1
    scores = bench.score_seeds({"start": [f"model={tmp_path / 'export'}"]}, args)
    assert len(calls) == 1 and scores["start"][0]["wer"] == pytest.approx(0.1)
