"""A tiny model and small test sets from the demo data, for the `f5lite-eval` tests."""

from __future__ import annotations

import csv
from pathlib import Path

import torch

import f5lite
from f5lite.config import compose_config
from f5lite.data.testset import TestRow, write_testset
from f5lite.models import build_backbone_from_config
from f5lite.paths import demo_dir

VOICES = ("us_male", "us_female", "gb_male")
"""One test-set row per voice: the voice's first demo clip is the reference, its second the ground truth."""


def demo_clips() -> dict[str, list[tuple[Path, str]]]:
    """The demo dataset's clips and transcripts by speaker, in metadata order."""
    root = demo_dir()
    clips: dict[str, list[tuple[Path, str]]] = {}
    with open(root / "metadata.csv", encoding="utf-8") as file:
        for row in csv.DictReader(file, delimiter="|"):
            clips.setdefault(row["speaker"], []).append((root / row["audio_file"], row["text"]))
    return clips


def eval_rows(with_gt: int = 2) -> list[TestRow]:
    """Three rows, one per voice; the first `with_gt` have ground truth."""
    clips = demo_clips()
    rows = []
    for i, voice in enumerate(VOICES):
        (ref, ref_text), (gt, gen_text) = clips[voice][:2]
        rows.append(TestRow(f"{i:02d}_{voice}", ref, ref_text, gen_text, gt if i < with_gt else None))
    return rows


def make_testset(path: Path, with_gt: int = 2) -> Path:
    """Write `eval_rows` to `path` (paths relative to it, as f5lite-prepare would)."""
    write_testset(path, eval_rows(with_gt))
    return path


def make_tiny_export(root: Path) -> Path:
    """The `debug_tiny` DiT with random weights and the demo vocab, as an f5lite export."""
    cfg = compose_config(["+recipe=debug_tiny"]).model
    vocab = f5lite.load_vocab(demo_dir() / "vocab.txt")
    torch.manual_seed(0)
    model = build_backbone_from_config(cfg, len(vocab)).eval()
    for param in model.parameters():
        torch.nn.init.normal_(param, std=0.1)
    return f5lite.save_pretrained(root / "export", model, cfg, vocab, tokenizer="char")
