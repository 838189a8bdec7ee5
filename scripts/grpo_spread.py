"""How much of a GRPO group's reward spread can the trained steps be credited with?

    python scripts/grpo_spread.py --start runs/speak_cpu/export --corpus runs/speak_corpus_ipa --prompts 6

On the same prompts of `grpo.prompts`, two kinds of group are scored: `independent` takes differ only in their start
(the ODE sampler at `grpo.sample.steps`, no guidance, a seed per take: the spread no step can be credited with), `window`
takes are GRPO's own rollouts with `grpo.likelihood=sde` (the spread its loss sees). For each: the mean WER, the mean
best-of-group WER, and the mean within-group spread of the WER and of the reward. Float32, on the CPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from f5lite.config import compose_config
from f5lite.infer.plan import Piece
from f5lite.train import Trainer
from f5lite.train.grpo import Grpo


def independent(grpo: Grpo, piece: Piece, seed: int) -> torch.Tensor:
    """Reward terms `[group, terms]` of takes of `piece` that differ only in their start."""
    s = grpo.settings
    waves = [grpo.synthesizer.generate([piece], grpo.options, seed=seed * 1_000 + j)[0] for j in range(s.group)]
    return grpo.rewards.terms(waves, [piece.text] * s.group, [piece.reference.wave] * s.group)


def summary(groups: list[torch.Tensor], grpo: Grpo) -> dict[str, float]:
    """Mean WER, best-of-group WER and within-group spreads of `groups` (each `[group, terms]`)."""
    terms = torch.stack(groups)  # [prompts, group, terms]
    wer = -terms[..., grpo.rewards.names.index("wer")]
    total = (terms * grpo.rewards.weights).sum(dim=-1)
    return {
        "wer": float(wer.mean()),
        "best_of_group_wer": float(wer.min(dim=1).values.mean()),
        "wer_spread": float(wer.std(dim=1, unbiased=False).mean()),
        "reward_spread": float(total.std(dim=1, unbiased=False).mean()),
    }


def measure(args: argparse.Namespace) -> dict[str, object]:
    torch.set_num_threads(args.threads)
    corpus = args.corpus.resolve()
    with tempfile.TemporaryDirectory() as run:
        cfg = compose_config([
            "+recipe=grpo", f"init.weights={args.start.resolve()}", f"data.dir={corpus}", f"run_dir={run}",
            f"grpo.prompts={corpus / 'rl' / 'prompts.txt'}", f"eval.asr=pocketsphinx:{corpus / 'asr'}",
            "perf.precision=no", "logger.backend=none", "grpo.likelihood=sde", *args.overrides,
        ])  # fmt: skip
        grpo = Trainer(cfg).net.module
    assert isinstance(grpo, Grpo)
    if "wer" not in grpo.rewards.names:
        raise SystemExit("grpo_spread: the WER reward is off (grpo.rewards.wer=0); it measures the WER's spread")
    picks = torch.linspace(0, len(grpo.pieces) - 1, args.prompts).round().long().tolist()
    generator = torch.Generator().manual_seed(args.seed)
    kinds: dict[str, list[torch.Tensor]] = {"independent": [], "window": []}
    started = time.perf_counter()
    with torch.no_grad():
        for i in picks:
            kinds["independent"].append(independent(grpo, grpo.pieces[i], args.seed))
            kinds["window"].append(grpo.rollout([grpo.pieces[i]], generator).terms)
            print(f"grpo_spread: prompt {i} scored ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    s = grpo.settings
    return {
        "start": str(args.start), "prompts": picks, "group": s.group, "steps": s.sample.steps, "train_steps": s.train_steps,
        "noise_level": s.noise_level, "seed": args.seed, **{k: summary(v, grpo) for k, v in kinds.items()},
    }  # fmt: skip


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", type=Path, required=True, help="the model (an f5lite export)")
    parser.add_argument("--corpus", type=Path, default=Path("runs/speak_corpus_ipa"), help="make speak-corpus's")
    parser.add_argument("--prompts", type=int, default=6, help="prompts, spread evenly over grpo.prompts")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, help="also write the result here (JSON)")
    parser.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE", dest="overrides",
                        help="config overrides, e.g. grpo.noise_level=0.7")  # fmt: skip
    args = parser.parse_args(argv)
    if args.prompts < 1:
        parser.error("--prompts must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        result = measure(args)
    except ValueError as err:  # a bad --start, --corpus or --set: one line, as the trainer words it
        print(f"grpo_spread: {err}", file=sys.stderr)
        return 2
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
