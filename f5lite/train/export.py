"""Model export from a training run: `f5lite-export RUN_DIR --out DIR [--step N] [--dtype bf16] [--format ...]`.

Training checkpoints are for resuming; an export is what inference and sharing need: the EMA weights, the
architecture and the vocab. `--format f5lite` writes an f5lite export directory (`f5lite.pretrained`), which
`f5lite-infer` and `Synthesizer.from_pretrained` load; `--format f5tts` writes F5-TTS's released layout
(`model_<step>.safetensors` with `ema_model.transformer.*`, `initted`, `step`, plus `vocab.txt`), which F5-TTS's own
inference and fine-tuning load. The trainer exports once, at the end of training, into `RUN_DIR/export`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException
from safetensors.torch import save_file
from torch import nn

from f5lite.config import MODEL_SCHEMAS, TrainConfig
from f5lite.models import build_backbone_from_config, load_backbone_weights, to_f5tts_layout
from f5lite.models.dtypes import WEIGHT_DTYPES
from f5lite.pretrained import save_pretrained
from f5lite.text import Vocab, load_vocab
from f5lite.text.tokenizers import BYTE_NUM_EMBEDS, VOCAB_TOKENIZERS
from f5lite.train.finetune import add_lora, init_from_pretrained, lora_scaling, merge_lora, peft_config
from f5lite.train.rundir import CHECKPOINTS, CONFIG_FILE, VOCAB_FILE
from f5lite.train.store import CheckpointStore

FORMATS = ("f5lite", "f5tts")


def load_run_config(run_dir: str | os.PathLike[str]) -> TrainConfig:
    """The config frozen in `RUN_DIR/config.yaml`, validated.

    Raises:
        ValueError: the directory is not a training run, or its config is malformed.
    """
    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        raise ValueError(f"{run_dir} is not a training run directory (no {CONFIG_FILE})")
    try:
        raw = OmegaConf.load(path)
        schema = OmegaConf.structured(TrainConfig(model=MODEL_SCHEMAS[str(raw.model.backbone)]()))
        cfg = OmegaConf.to_object(OmegaConf.merge(schema, raw))
    except (OmegaConfBaseException, KeyError, AttributeError) as err:
        raise ValueError(f"{path} is not a valid training config: {str(err).splitlines()[0]}") from None
    assert isinstance(cfg, TrainConfig)
    return cfg


def _run_vocab(run_dir: Path, tokenizer: str) -> tuple[Vocab | None, int]:
    if tokenizer not in VOCAB_TOKENIZERS:
        return None, BYTE_NUM_EMBEDS
    vocab = load_vocab(run_dir / VOCAB_FILE)
    return vocab, len(vocab)


def load_run_model(
    run_dir: str | os.PathLike[str], step: int | None = None
) -> tuple[nn.Module, TrainConfig, Vocab | None, int]:
    """The EMA weights of a run's checkpoint in a backbone.

    Args:
        run_dir: the training run directory.
        step: the checkpoint's update count; default the newest intact one.

    Returns:
        `(backbone in eval mode, the run's config, its vocab or None for bytes, the checkpoint's update count)`.

    Raises:
        ValueError: no such run or checkpoint.
    """
    root = Path(run_dir)
    cfg = load_run_config(root)
    store = CheckpointStore(root / CHECKPOINTS, writer=False)
    ckpt = store.load_latest() if step is None else store.load_step(step)
    if ckpt is None:
        raise ValueError(f"{root} has no intact checkpoint")
    vocab, num_embeds = _run_vocab(root, cfg.data.tokenizer)
    backbone = build_backbone_from_config(cfg.model, num_embeds)
    if not cfg.finetune.lora.rank:
        load_backbone_weights(backbone, ckpt.tensors["ema"])
        return backbone.eval(), cfg, vocab, ckpt.step
    # LoRA checkpoints hold the adapters only: rebuild the base from init.weights, then fold the averaged adapters in.
    grown = init_from_pretrained(cfg, backbone, vocab)
    adapted = build_backbone_from_config(cfg.model, num_embeds)
    adapted.load_state_dict(backbone.state_dict())
    add_lora(adapted, cfg.finetune.lora, train_text_table=grown > 0)
    state = adapted.state_dict()
    state.update(ckpt.tensors["ema"])
    load_backbone_weights(backbone, merge_lora(state, lora_scaling(cfg.finetune.lora)))
    return backbone.eval(), cfg, vocab, ckpt.step


def is_run_dir(path: str | os.PathLike[str]) -> bool:
    """Whether `path` looks like a training run directory (a frozen config and a checkpoints folder)."""
    return (Path(path) / CONFIG_FILE).is_file() and (Path(path) / CHECKPOINTS).is_dir()


def export_run(
    run_dir: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    step: int | None = None,
    dtype: str = "fp32",
    fmt: str = "f5lite",
) -> Path:
    """Export the EMA weights of a run's checkpoint.

    Args:
        run_dir: the training run directory.
        out: the directory to write (replaced if it is a previous export).
        step: the checkpoint's update count; default the newest intact one.
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
    cfg = load_run_config(root)
    if cfg.finetune.lora.rank and cfg.finetune.lora.export == "adapter":
        return _export_adapter(root, cfg, Path(out), step)
    backbone, cfg, vocab, ckpt_step = load_run_model(root, step)
    out = Path(out)
    if fmt == "f5lite":
        return save_pretrained(
            out, backbone, cfg.model, vocab, tokenizer=cfg.data.tokenizer, mel_type=cfg.data.mel_type, dtype=dtype
        )
    out.mkdir(parents=True, exist_ok=True)
    weights = {k: v.to(WEIGHT_DTYPES[dtype]) if v.is_floating_point() else v for k, v in backbone.state_dict().items()}
    target = out / f"model_{ckpt_step}.safetensors"
    tmp = target.with_name(target.name + ".tmp")
    save_file(to_f5tts_layout(weights, step=ckpt_step), tmp)
    os.replace(tmp, target)
    if vocab is not None:
        shutil.copyfile(root / VOCAB_FILE, out / VOCAB_FILE)
    return out


def _export_adapter(root: Path, cfg: TrainConfig, out: Path, step: int | None) -> Path:
    """The averaged LoRA adapters alone, in peft's file format, plus the vocab; the base stays `init.weights`."""
    store = CheckpointStore(root / CHECKPOINTS, writer=False)
    ckpt = store.load_latest() if step is None else store.load_step(step)
    if ckpt is None:
        raise ValueError(f"{root} has no intact checkpoint")
    lora = cfg.finetune.lora
    out.mkdir(parents=True, exist_ok=True)
    adapters = {k.replace(".default", ""): v.contiguous() for k, v in ckpt.tensors["ema"].items()}
    save_file(adapters, out / "adapter_model.safetensors", metadata={"base_weights": str(cfg.init.weights)})
    peft_config(lora).save_pretrained(str(out))
    if (root / VOCAB_FILE).is_file():
        shutil.copyfile(root / VOCAB_FILE, out / VOCAB_FILE)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """`f5lite-export` entry point; returns the exit status (2 with a one-line error for bad input)."""
    parser = argparse.ArgumentParser(prog="f5lite-export", description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", help="training run directory (holds config.yaml and checkpoints/)")
    parser.add_argument("--out", required=True, help="directory to write")
    parser.add_argument("--step", type=int, default=None, help="checkpoint to export (default: the newest)")
    parser.add_argument("--dtype", default="fp32", help="fp32, bf16 or fp16")
    parser.add_argument("--format", default="f5lite", dest="fmt", help="f5lite (default) or f5tts")
    args = parser.parse_args(argv)
    try:
        out = export_run(args.run_dir, args.out, step=args.step, dtype=args.dtype, fmt=args.fmt)
    except (ValueError, OSError) as err:
        sys.stderr.write(f"f5lite-export: {err}\n")
        return 2
    sys.stdout.write(f"{out}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
