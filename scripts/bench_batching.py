"""How much of a batch is real speech: f5lite's batching against F5-TTS's on the same utterance lengths.

    python scripts/bench_batching.py                                  # Emilia-like: log-normal around 8 s, 3-30 s
    python scripts/bench_batching.py --f5tts .f5tts                    # beside F5-TTS (`make .f5tts/.installed`)
    python scripts/bench_batching.py --data data/my_set --f5tts ~/F5-TTS   # the lengths of a prepared dataset

One epoch of batches from the same lengths (`--lognormal MEDIAN_S,SIGMA` clipped to `--clip`, or a dataset's with
`--data`; metadata-only cuts) by f5lite's `CutBatchSampler` (with and without topping up), Lhotse's dynamic bucketing
(f5lite's former batching) and, given `--f5tts PATH` (a checkout or installation put on `sys.path`), F5-TTS's
`DynamicBatchSampler`; each batch at most `--max-samples` utterances and `--frames-per-gpu` frames. Reported per
sampler: batches, utterances per batch, real frames per batch, padding efficiency (real frames / padded frames), the
largest batch, utterances left out, and seconds; written to `--out-dir` as `NAME.json` and `.md`.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks import results

SAMPLE_RATE, HOP_LENGTH = 24000, 256


def lognormal_lengths(median_s: float, sigma: float, low: float, high: float, count: int, seed: int) -> list[int]:
    """`count` utterance lengths in frames: seconds log-normal around `median_s`, clipped to [`low`, `high`]."""
    import numpy as np

    seconds = np.clip(np.random.default_rng(seed).lognormal(np.log(median_s), sigma, size=count), low, high)
    return [1 + int(s * SAMPLE_RATE) // HOP_LENGTH for s in seconds]


def metadata_cuts(lengths: Sequence[int]) -> list[Any]:
    """Metadata-only cuts of these lengths in frames (`frames` recorded as `f5lite-prepare` does)."""
    from f5lite.data import make_cut

    return [make_cut(f"u{i:08d}", f"/nowhere/{i}.wav", sample_rate=SAMPLE_RATE, num_samples=(n - 1) * HOP_LENGTH,
                     channels=1, text="x", frames=n) for i, n in enumerate(lengths)]  # fmt: skip


def f5lite_batches(
    cuts: list[Any], budget: int, max_samples: int, window: int, fill: float, seed: int
) -> list[list[int]]:
    """One epoch of `CutBatchSampler`, as the batches' lengths."""
    from lhotse import CutSet

    from f5lite.data import CutBatchSampler
    from f5lite.data.cuts import frames_of

    sampler = CutBatchSampler(lambda epoch: CutSet.from_cuts(cuts), frames_per_gpu=budget, max_samples=max_samples,
                              window=window, fill_efficiency=fill, seed=seed)  # fmt: skip
    sampler.set_epoch(0)
    return [[frames_of(cut) for cut in batch] for batch in sampler]


def lhotse_batches(cuts: list[Any], budget: int, max_samples: int, buckets: int, seed: int) -> list[list[int]]:
    """One epoch of Lhotse's `DynamicBucketingSampler`, set up as f5lite's former batching was."""
    from lhotse import CutSet
    from lhotse.dataset import DynamicBucketingSampler

    from f5lite.data.cuts import frames_of

    with warnings.catch_warnings():  # an eager CutSet: its lengths are all this measures
        warnings.filterwarnings("ignore", message=".*eagerly read CutSet", category=UserWarning)
        sampler = DynamicBucketingSampler(CutSet.from_cuts([c for c in cuts if frames_of(c) <= budget]),
                                          max_duration=budget * HOP_LENGTH / SAMPLE_RATE, max_cuts=max_samples,
                                          num_buckets=buckets, shuffle=True, drop_last=False, seed=seed)  # fmt: skip
    sampler.set_epoch(0)
    return [[frames_of(cut) for cut in batch] for batch in sampler]


def f5tts_sampler_class(path: Path) -> type:
    """F5-TTS's `DynamicBatchSampler`, imported from a checkout (`src/f5_tts`) or an installation (`f5_tts`)."""
    path = path.expanduser().resolve()
    root = next(
        (r for r in (path / "src", path, path.parent) if (r / "f5_tts" / "model" / "dataset.py").is_file()), None
    )
    if root is None:
        raise SystemExit(f"bench_batching.py: no f5_tts/model/dataset.py under {path} (nor {path}/src)")
    sys.path.insert(0, str(root))
    from f5_tts.model.dataset import DynamicBatchSampler  # type: ignore[import-not-found]

    return DynamicBatchSampler


def f5tts_batches(sampler_class: type, lengths: list[int], budget: int, max_samples: int, seed: int) -> list[list[int]]:
    """One epoch of F5-TTS's `DynamicBatchSampler` over the lengths, as the batches' lengths."""
    from torch.utils.data import SequentialSampler

    class Lengths:
        """What the sampler reads of a dataset: its size and each item's frames."""

        def __len__(self) -> int:
            return len(lengths)

        def get_frame_len(self, index: int) -> int:
            return lengths[index]

    sampler = sampler_class(SequentialSampler(Lengths()), budget, max_samples=max_samples, random_seed=seed)
    sampler.set_epoch(0)
    return [[lengths[i] for i in batch] for batch in sampler]


def figures(name: str, make: Callable[[], list[list[int]]], total: int) -> dict[str, Any]:
    """One sampler's row: its epoch's batches made and measured."""
    start = time.perf_counter()
    batches = make()
    seconds, used = time.perf_counter() - start, sum(len(b) for b in batches)
    real, padded = sum(sum(b) for b in batches), sum(len(b) * max(b) for b in batches)
    return {"sampler": name, "batches": len(batches), "utterances": used, "left_out": total - used,
            "utterances_per_batch": round(used / len(batches), 2), "real_frames_per_batch": round(real / len(batches), 1),
            "padding_efficiency": round(real / padded, 4), "largest_batch_frames": max(sum(b) for b in batches),
            "seconds": round(seconds, 2)}  # fmt: skip


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Measure every sampler on the same lengths; the results document."""
    from f5lite.config import DataConfig

    window = args.window if args.window is not None else DataConfig().window
    fill = args.fill_efficiency if args.fill_efficiency is not None else DataConfig().fill_efficiency
    sampler_class = f5tts_sampler_class(args.f5tts) if args.f5tts is not None else None
    if args.data is not None:
        from f5lite.data import open_source
        from f5lite.data.cuts import frames_of

        lengths = [frames_of(cut) for cut in open_source(args.data).cuts()]
        source: dict[str, Any] = {"data": str(args.data)}
    else:
        (median, sigma), (low, high) = args.lognormal, args.clip
        lengths = lognormal_lengths(median, sigma, low, high, args.count, args.seed)
        source = {"lognormal_median_s": median, "lognormal_sigma": sigma, "clip_s": [low, high], "seed": args.seed}
    if not lengths:
        raise SystemExit("bench_batching.py: no utterances")
    cuts, budget, most, n = metadata_cuts(lengths), args.frames_per_gpu, args.max_samples, len(lengths)
    makers: dict[str, Callable[[], list[list[int]]]] = {
        f"f5lite (window {window}, fill_efficiency {fill:g})": partial(
            f5lite_batches, cuts, budget, most, window, fill, args.seed
        )
    }
    if fill < 1:
        makers[f"f5lite (window {window}, no top-up)"] = partial(
            f5lite_batches, cuts, budget, most, window, 1.0, args.seed
        )
    for buckets in args.lhotse_buckets:
        makers[f"Lhotse dynamic bucketing ({buckets} buckets)"] = partial(
            lhotse_batches, cuts, budget, most, buckets, args.seed
        )
    if sampler_class is not None:
        makers["F5-TTS DynamicBatchSampler"] = partial(f5tts_batches, sampler_class, lengths, budget, most, args.seed)
    rows = [figures(name, make, n) for name, make in makers.items()]
    if args.f5tts is not None:
        for row in rows[:-1]:
            row["real_frames_vs_f5tts"] = round(row["real_frames_per_batch"] / rows[-1]["real_frames_per_batch"], 4)
    stats = {
        "count": n,
        "mean_frames": round(sum(lengths) / n, 1),
        "min_frames": min(lengths),
        "max_frames": max(lengths),
    }
    return {**results.run_header(["f5-tts", "lhotse"]), "lengths": {**source, **stats}, "frames_per_gpu": budget,
            "max_samples": most, "f5tts": str(args.f5tts) if args.f5tts is not None else None, "samplers": rows}  # fmt: skip


def markdown(result: dict[str, Any]) -> str:
    """The results as a Markdown page."""
    lengths = result["lengths"]
    if "data" in lengths:
        what = f"the {lengths['count']} utterances of `{lengths['data']}`"
    else:
        low, high = lengths["clip_s"]
        what = (f"{lengths['count']} lengths log-normal around {lengths['lognormal_median_s']:g} s (sigma "
                f"{lengths['lognormal_sigma']:g}), clipped to {low:g}-{high:g} s, seed {lengths['seed']}")  # fmt: skip
    lines = ["# Batching: real frames per batch and padding", "", f"{results.describe(result)}.", "",
             f"One epoch of batches of {what} (mean {lengths['mean_frames']} frames), at most {result['max_samples']} "
             f"utterances and {result['frames_per_gpu']} frames per batch (`python scripts/bench_batching.py`).", ""]  # fmt: skip
    if result["f5tts"] is None:
        lines += ["F5-TTS was not given (`--f5tts PATH`): f5lite's figures alone.", ""]
    versus = any("real_frames_vs_f5tts" in row for row in result["samplers"])
    head = ["sampler", "batches", "utterances / batch", "real frames / batch", "padding efficiency", "left out"]
    rows = [[r["sampler"], r["batches"], f"{r['utterances_per_batch']:.2f}", f"{r['real_frames_per_batch']:,.1f}",
             f"{r['padding_efficiency']:.4f}", r["left_out"], *([f"{r.get('real_frames_vs_f5tts', 1.0):.4f}x"] * versus)]
            for r in result["samplers"]]  # fmt: skip
    return "\n".join(lines + results.table(head + ["real frames vs F5-TTS"] * versus, rows, " rrrrrr")) + "\n"


def _pair(text: str) -> tuple[float, float]:
    try:
        a, b = (float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected two numbers A,B, got {text!r}") from None
    return a, b


def _counts(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected counts N[,N...], got {text!r}") from None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    lengths = parser.add_mutually_exclusive_group()
    lengths.add_argument("--lognormal", type=_pair, default=(8.0, 0.5), metavar="MEDIAN_S,SIGMA",
                         help="log-normal lengths (default 8,0.5: Emilia-like)")  # fmt: skip
    lengths.add_argument("--data", help="read the lengths of a prepared dataset (anything data.dir takes)")
    add("--clip", type=_pair, default=(3.0, 30.0), metavar="LOW,HIGH", help="seconds (default 3,30)")
    add("--count", type=int, default=20000, help="log-normal lengths drawn (default 20000)")
    add("--seed", type=int, default=0, help="seed of the lengths and of the samplers (default 0)")
    add("--frames-per-gpu", type=int, default=38400, help="frame budget (default F5-TTS's 38400)")
    add("--max-samples", type=int, default=64, help="utterances per batch at most (default 64)")
    add("--window", type=int, default=None, help="f5lite's data.window (default: the schema's)")
    add("--fill-efficiency", type=float, default=None, help="f5lite's data.fill_efficiency (default: the schema's)")
    add("--lhotse-buckets", type=_counts, default=[20], metavar="N[,N...]",
        help="Lhotse dynamic bucketing with these bucket counts (default 20; empty: none)")  # fmt: skip
    add("--f5tts", type=Path, default=None, metavar="PATH", help="an F5-TTS checkout or installation holding f5_tts/")
    add("--out-dir", type=Path, default=Path(__file__).resolve().parent / "results", help="where NAME.json/.md go")
    add("--name", default="batching", help="the results' file name (default batching)")
    args = parser.parse_args(argv)
    if args.count < 1 or args.frames_per_gpu < 1 or args.max_samples < 1:
        parser.error("--count, --frames-per-gpu and --max-samples must be >= 1")
    if args.clip[0] <= 0 or args.clip[0] > args.clip[1] or args.lognormal[0] <= 0 or args.lognormal[1] < 0:
        parser.error("--clip needs 0 < LOW <= HIGH; --lognormal needs MEDIAN_S > 0 and SIGMA >= 0")
    return args


def main(argv: list[str] | None = None) -> int:
    """Measure, print the page and write `NAME.json` and `.md`."""
    args = parse_args(argv)
    result = run(args)
    page = markdown(result)
    results.write_results(args.out_dir / f"{args.name}.json", result, page)
    print(page, end="")
    print(f"written to {args.out_dir / args.name}.json and .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
