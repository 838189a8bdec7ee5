"""The reference-length lever of issue 55: the clone corpus's test set with longer voice prompts.

Usage: python scripts/clone_prompt_length.py --testset runs/clone_corpus/test/testset.txt --clips 2 3
       then f5lite-eval ... testset=runs/clone_corpus/test/testset_prompt2.txt (one file per K beside the test set)

Each row's prompt becomes `K` prompt clips of its voice read one after another (its own first, then the voice's next
ones in the test set's order), their texts joined; sentences, ground truth and voices are unchanged, so `f5lite-eval`
on each file measures the prompt's length alone. Only voices with `K` distinct prompts are kept (the held-out ones).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import torch

from f5lite.audio import SAMPLE_RATE, load_audio, save_audio
from f5lite.data.testset import TestRow, read_testset, write_testset


def longer_prompts(rows: Sequence[TestRow], clips: int, folder: Path) -> list[TestRow]:
    """The rows of voices with at least `clips` distinct prompts, each prompt made of `clips` of them (FLAC under
    `folder`).

    Raises:
        ValueError: a row has no voice, or no voice has `clips` distinct prompts.
    """
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


def main(argv: Sequence[str] | None = None) -> None:
    """Write `testset_promptK.txt` beside the test set for each `--clips K`."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--testset", type=Path, required=True, help="the clone corpus's test/testset.txt")
    parser.add_argument("--clips", type=int, nargs="+", required=True, help="prompt clips per row, each at least 2")
    args = parser.parse_args(argv)
    if min(args.clips) < 2:
        parser.error(f"--clips must be at least 2 (1 is the test set itself), got {min(args.clips)}")
    try:  # a missing or bad test set or prompt clip: one line, not a traceback
        rows = read_testset(args.testset)
        for clips in args.clips:
            target = args.testset.with_name(f"testset_prompt{clips}.txt")
            kept = longer_prompts(rows, clips, args.testset.parent / f"refs_prompt{clips}")
            write_testset(target, kept)
            print(f"{target}: {len(kept)} of {len(rows)} rows, prompts of {clips} clips")
    except ValueError as err:  # AudioError is one
        parser.exit(2, f"clone_prompt_length: {err}\n")


if __name__ == "__main__":
    main()
