"""Model export from a training run: `f5lite-export RUN_DIR --out DIR [--step N | --best] [--dtype bf16] [--format ...]`.

Training checkpoints are for resuming; an export is what inference and sharing need: the EMA weights, the
architecture and the vocab. `--format f5lite` writes an f5lite export directory (`f5lite.storage.pretrained`), which
`f5lite-infer` and `Synthesizer.from_pretrained` load; `--format f5tts` writes F5-TTS's released layout
(`model_<step>.safetensors` with `ema_model.transformer.*`, `initted`, `step`, plus `vocab.txt`), which F5-TTS's own
inference and fine-tuning load. A LoRA run with `finetune.lora.export=adapter` exports its averaged adapters alone
(peft's files, plus the architecture and the base weights' path, so `f5lite.storage.model_sources` can load it). The
trainer exports once, at the end of training, into `RUN_DIR/export`. The run is read through
`f5lite.storage.model_sources`, like every other model source.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from safetensors.torch import save_file

from f5lite.atomic import atomic_directory
from f5lite.config import PREDICTOR_ONLY, TrainConfig
from f5lite.models import backbone_kwargs, to_f5tts_layout
from f5lite.models.dtypes import WEIGHT_DTYPES
from f5lite.storage.duration_files import has_duration, save_duration
from f5lite.storage.lora import LoraSettings, peft_config
from f5lite.storage.model_sources import (
    ADAPTER_MODEL_KEY,
    ADAPTER_WEIGHTS,
    SourceKind,
    identify,
    load_source,
    run_checkpoint,
    run_duration,
)
from f5lite.storage.names import CHECKPOINTS, CONFIG_FILE, EMA_GROUP, VOCAB_FILE
from f5lite.storage.pretrained import save_pretrained
from f5lite.storage.rundir import load_run_config
from f5lite.storage.store import CheckpointStore
from f5lite.text import load_vocab
from f5lite.text.tokenizers import BYTE_NUM_EMBEDS, tokenizer_family

FORMATS = ("f5lite", "f5tts")
"""Export formats (`--format`)."""


def export_run(
    run_dir: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    step: int | None = None,
    best: bool = False,
    dtype: str = "fp32",
    fmt: str = "f5lite",
) -> Path:
    """Export the EMA weights of a run's checkpoint.

    Args:
        run_dir: the training run directory.
        out: the directory to write (replaced if it is a previous export).
        step: the checkpoint's update count; default the newest intact one.
        best: export the checkpoint with the best `ckpt.best_metric` instead (see `ckpt.keep_best`).
        dtype: `fp32`, `bf16` or `fp16`.
        fmt: `f5lite` or `f5tts`.

    Returns:
        The written directory.

    Raises:
        ValueError: no such run, checkpoint, dtype or format.
    """
    if fmt not in FORMATS:
        raise ValueError(f"--format {fmt!r} is not valid; choose one of: {', '.join(FORMATS)}")
    if dtype not in WEIGHT_DTYPES:
        raise ValueError(f"--dtype {dtype!r} is not valid; choose one of: {', '.join(WEIGHT_DTYPES)}")
    root = Path(run_dir)
    kind = identify(root)
    if kind is not SourceKind.RUN:
        raise ValueError(f"{root} is {kind.value}, not a training run directory")
    cfg = load_run_config(root)
    if best:
        if step is not None:
            raise ValueError("give --step or --best, not both")
        step = CheckpointStore(root / CHECKPOINTS, writer=False).best_step(cfg.ckpt.best_metric)
    if cfg.objective in PREDICTOR_ONLY:
        if fmt != "f5lite":
            raise ValueError(f"{root} trained only a duration predictor, which has no {fmt} format")
        return _export_duration(root, Path(out), step)
    if cfg.finetune.lora.rank and cfg.finetune.lora.export == "adapter":
        return _export_adapter(root, Path(out), step)
    if fmt == "f5tts":
        _check_f5tts_can_load(root, cfg)
    loaded = load_source(root, step=step)
    out = Path(out)
    if fmt == "f5lite":
        return save_pretrained(
            out, loaded.backbone, loaded.model, loaded.vocab, tokenizer=loaded.tokenizer, mel_type=loaded.mel_type,
            dtype=dtype, replaceable=_is_previous_export, duration=loaded.duration,
        )  # fmt: skip
    state = loaded.backbone.state_dict()
    weights = {k: v.to(WEIGHT_DTYPES[dtype]) if v.is_floating_point() else v for k, v in state.items()}
    with atomic_directory(out, _is_previous_export, "an export") as staging:
        save_file(to_f5tts_layout(weights, step=loaded.step or 0), staging / f"model_{loaded.step}.safetensors")
        if loaded.vocab is not None:
            shutil.copyfile(root / VOCAB_FILE, staging / VOCAB_FILE)
    return out


def _check_f5tts_can_load(root: Path, cfg: TrainConfig) -> None:
    """Refuse an F5-TTS export of a model that F5-TTS would load and then run wrongly.

    That is a model whose text meets the frames another way (`model.text_fit`), or whose tokenizer F5-TTS lacks
    (IPA: F5-TTS would look up the letters).
    """
    fit = getattr(cfg.model, "text_fit", "pad")
    if fit != "pad":
        raise ValueError(
            f"{root} was trained with model.text_fit={fit}, which F5-TTS has no code for; keep --format f5lite"
        )
    if tokenizer_family(cfg.data.tokenizer) == "ipa":
        raise ValueError(
            f"{root} reads IPA ({cfg.data.tokenizer}), which F5-TTS has no tokenizer for; keep --format f5lite"
        )


def _is_previous_export(directory: Path) -> bool:
    """An export of any format f5lite-export writes (so a new export may replace it, and nothing else)."""
    with contextlib.suppress(ValueError):
        if identify(directory) in (SourceKind.EXPORT, SourceKind.ADAPTER):
            return True
    if has_duration(directory) and not (directory / CONFIG_FILE).exists():
        return True
    names = [p.name for p in directory.iterdir()]
    weights = [n for n in names if n.startswith("model_") and n.endswith(".safetensors")]
    return len(weights) == 1 and set(names) <= {weights[0], VOCAB_FILE}


def _export_duration(root: Path, out: Path, step: int | None) -> Path:
    """An `objective=duration` (or `duration_grpo`) run: its predictor, in a directory of its own with the run's vocab."""
    cfg = load_run_config(root)
    vocab = load_vocab(root / VOCAB_FILE) if (root / VOCAB_FILE).is_file() else None
    duration = run_duration(root, cfg, run_checkpoint(root, step), vocab)
    if duration is None:
        raise ValueError(f"{root}: its checkpoint holds no duration predictor")
    tokenizer, updates = cfg.data.tokenizer, duration.trained_updates
    return save_duration(out, duration.predictor, tokenizer, vocab, updates, replaceable=_is_previous_export)


def _export_adapter(root: Path, out: Path, step: int | None) -> Path:
    """The averaged LoRA adapters alone, in peft's file format, plus the vocab; the base stays `init.weights`."""
    cfg = load_run_config(root)
    ckpt = run_checkpoint(root, step)
    has_vocab = (root / VOCAB_FILE).is_file()
    num_embeds = len(load_vocab(root / VOCAB_FILE)) if has_vocab else BYTE_NUM_EMBEDS
    described = {
        "backbone": cfg.model.backbone,
        "model": backbone_kwargs(cfg.model, num_embeds),
        "tokenizer": cfg.data.tokenizer,
        "mel_type": cfg.data.mel_type,
        "base_weights": str(Path(str(cfg.init.weights)).resolve()),
        "use_ema": cfg.init.use_ema,
    }
    adapters = {k.replace(".default", ""): v.contiguous() for k, v in ckpt.tensors[EMA_GROUP].items()}
    metadata = {"base_weights": str(described["base_weights"]), ADAPTER_MODEL_KEY: json.dumps(described)}
    with atomic_directory(out, _is_previous_export, "an export") as staging:
        save_file(adapters, staging / ADAPTER_WEIGHTS, metadata=metadata)
        peft_config(LoraSettings.from_config(cfg.finetune.lora)).save_pretrained(str(staging))
        if has_vocab:
            shutil.copyfile(root / VOCAB_FILE, staging / VOCAB_FILE)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """`f5lite-export` entry point; returns the exit status (2 with a one-line error for bad input)."""
    parser = argparse.ArgumentParser(prog="f5lite-export", description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", help="training run directory (holds config.yaml and checkpoints/)")
    parser.add_argument("--out", required=True, help="directory to write")
    parser.add_argument("--step", type=int, default=None, help="checkpoint to export (default: the newest)")
    parser.add_argument("--best", action="store_true", help="export the checkpoint with the best ckpt.best_metric")
    parser.add_argument("--dtype", default="fp32", help=", ".join(WEIGHT_DTYPES))
    parser.add_argument("--format", default="f5lite", dest="fmt", help="f5lite (default) or f5tts")
    args = parser.parse_args(argv)
    try:
        out = export_run(args.run_dir, args.out, step=args.step, best=args.best, dtype=args.dtype, fmt=args.fmt)
    except (ValueError, OSError) as err:
        sys.stderr.write(f"f5lite-export: {err}\n")
        return 2
    sys.stdout.write(f"{out}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
