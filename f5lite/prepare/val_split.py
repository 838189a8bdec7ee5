"""The held-out validation split of `f5lite-prepare --val-count N | --val-fraction F [--val-by-speaker]`.

The kept utterances are ordered by a hash of their id (of their speaker, with `--val-by-speaker`) and the first
ones are held out, so the split is the same on every run, and adding utterances to a dataset moves few of them.
With `--val-by-speaker` whole speakers are held out (until at least N utterances are), so the validation loss
measures voices the model never trained on; utterances without a speaker count as a speaker each.

The split goes to `OUT_DIR/val/`: `cuts.jsonl.gz` (paths relative to it, pointing into OUT_DIR) and `testset.txt`,
a test set for `f5lite-eval` and `eval.prompts`: each held-out utterance is a row's ground truth, with another
utterance of the same speaker (another text) as the voice prompt. Utterances without a speaker, or whose speaker
has no other utterance, have no row. The training `cuts.jsonl.gz` holds the rest.
"""

from __future__ import annotations

import hashlib
import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lhotse import MonoCut

from f5lite.data.cuts import MEL_PATH, text_of
from f5lite.data.testset import TestRow


@dataclass(frozen=True)
class ValSplit:
    """How many utterances to hold out.

    Attributes:
        count: hold out this many utterances (0: none unless `fraction`).
        fraction: hold out this share of the kept utterances instead, rounded, at least one.
        by_speaker: hold out whole speakers.
    """

    count: int = 0
    fraction: float = 0.0
    by_speaker: bool = False

    def __post_init__(self) -> None:
        if self.count < 0:
            raise ValueError(f"--val-count {self.count} is not valid; it must be >= 0")
        if not 0.0 <= self.fraction < 1.0:
            raise ValueError(f"--val-fraction {self.fraction} is not valid; it must be in [0, 1)")
        if self.count and self.fraction:
            raise ValueError("give --val-count or --val-fraction, not both")
        if self.by_speaker and not self.active:
            raise ValueError("--val-by-speaker needs --val-count or --val-fraction")

    @property
    def active(self) -> bool:
        """Whether anything is held out."""
        return bool(self.count or self.fraction)

    def target(self, total: int) -> int:
        """Utterances to hold out of `total`."""
        return self.count if self.count else max(1, round(self.fraction * total))


def _rank(key: str) -> bytes:
    return hashlib.sha256(f"f5lite-val\0{key}".encode()).digest()


def _speaker(cut: MonoCut) -> str | None:
    speakers = [s.speaker for s in cut.supervisions if s.speaker]
    return speakers[0] if speakers else None


def split_validation(cuts: Sequence[MonoCut], split: ValSplit) -> tuple[list[MonoCut], list[MonoCut]]:
    """Divide the kept cuts into training and validation cuts (each in input order).

    Args:
        cuts: the kept cuts.
        split: how many to hold out.

    Returns:
        `(train, val)`.

    Raises:
        ValueError: the split would leave no training utterance.
    """
    target = split.target(len(cuts))
    groups: dict[str, list[MonoCut]] = defaultdict(list)
    for cut in cuts:
        speaker = _speaker(cut) if split.by_speaker else None
        groups[f"speaker\0{speaker}" if speaker is not None else f"cut\0{cut.id}"].append(cut)
    held: set[str] = set()
    for key in sorted(groups, key=_rank):
        if len(held) >= target:
            break
        held.update(cut.id for cut in groups[key])
    train = [cut for cut in cuts if cut.id not in held]
    if not train:
        what = f"--val-count {split.count}" if split.count else f"--val-fraction {split.fraction}"
        unit = " (whole speakers)" if split.by_speaker else ""
        raise ValueError(f"{what}{unit} holds out all {len(cuts)} kept utterances: nothing is left to train on")
    return train, [cut for cut in cuts if cut.id in held]


def relocate(cut: MonoCut, out: Path, folder: Path) -> MonoCut:
    """The cut with its relative audio and mel paths (relative to `out`) made relative to `folder` instead."""
    prefix = os.path.relpath(out, folder)
    moved = cut.with_recording_path_prefix(prefix)
    mel = (cut.custom or {}).get(MEL_PATH)
    if isinstance(mel, str) and not os.path.isabs(mel):
        moved.custom = {**(cut.custom or {}), MEL_PATH: (Path(prefix) / mel).as_posix()}
    return moved


def testset_rows(val: Sequence[MonoCut], train: Sequence[MonoCut], out: Path) -> list[TestRow]:
    """A test-set row per held-out utterance that has another utterance of its speaker to prompt with.

    Args:
        val: the held-out cuts (audio paths relative to `out`, or absolute).
        train: the training cuts (prompts may come from them when the speaker has no other held-out utterance).
        out: the output directory.

    Returns:
        The rows, in the order of `val`; ids are the cut ids with `/` made `_` (an id names a file).
    """
    by_speaker: dict[str, list[MonoCut]] = defaultdict(list)
    for cut in [*val, *train]:
        speaker = _speaker(cut)
        if speaker is not None:
            by_speaker[speaker].append(cut)
    held = {c.id for c in val}
    rows, taken = [], set()
    for cut in val:
        speaker = _speaker(cut)
        if speaker is None:
            continue
        others = [c for c in by_speaker[speaker] if c.id != cut.id and text_of(c) != text_of(cut)]
        if not others:
            continue
        # Prefer another held-out utterance: with --val-by-speaker the voice is then never trained on.
        prompt = min(others, key=lambda c: (c.id not in held, _rank(c.id)))
        ident = cut.id.replace("/", "_").replace("\\", "_")
        while ident in taken:
            ident += "_"
        taken.add(ident)
        rows.append(TestRow(ident, _audio(prompt, out), text_of(prompt), text_of(cut), _audio(cut, out)))
    return rows


def _audio(cut: MonoCut, out: Path) -> Path:
    assert cut.recording is not None
    return (out / str(cut.recording.sources[0].source)).resolve()
