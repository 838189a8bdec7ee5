"""The run directory: deterministic from the config (the same command resumes), frozen config, vocab copy, lock.

Layout:

    RUN_DIR/config.yaml     the composed config of the latest launch (resolved, every key present)
    RUN_DIR/vocab.txt       the training vocab, so that exports need nothing from the data directory
    RUN_DIR/checkpoints/    training checkpoints (see `f5lite.storage.store`)
    RUN_DIR/export/         the exported model, written once at the end of training
    RUN_DIR/logs/           tensorboard / wandb files
    RUN_DIR/run.lock        held by the launch training in it (see `f5lite.storage.lock`)

A launch first checks everything that could refuse it (`check_run_dir`, then the checkpoint), and only then writes
(`write_run_files`), so a refused launch leaves the directory as it was.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, cast

import yaml
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from f5lite.atomic import write_text_atomic
from f5lite.config import MODEL_SCHEMAS, TrainConfig
from f5lite.config.objective import upgrade_stored
from f5lite.config.structured import open_structured
from f5lite.storage.names import CHECKPOINTS, CONFIG_FILE, VOCAB_FILE
from f5lite.text import Vocab, load_vocab

# Settings a checkpoint cannot be resumed under a different value of: they change the weights' meaning.
_IDENTITY_KEYS = ("model", "data.tokenizer", "data.mel_type")


def identity_hash(config: str) -> str:
    """sha256 of the settings that must not change across a resume (architecture, tokenizer, mel type).

    Args:
        config: the run's composed config as YAML (`f5lite.config.config_to_yaml`).
    """
    conf = OmegaConf.create(config)
    picked = {}
    for key in _IDENTITY_KEYS:
        value = OmegaConf.select(conf, key)
        picked[key] = OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
    return hashlib.sha256(yaml.safe_dump(picked, sort_keys=True).encode()).hexdigest()


def is_run_dir(path: str | os.PathLike[str]) -> bool:
    """Whether `path` looks like a training run directory (a frozen config and a checkpoints folder)."""
    return (Path(path) / CONFIG_FILE).is_file() and (Path(path) / CHECKPOINTS).is_dir()


def load_run_config(run_dir: str | os.PathLike[str]) -> TrainConfig:
    """The config frozen in `RUN_DIR/config.yaml`, validated.

    Raises:
        ValueError: the directory is not a training run, or its config is malformed.
    """
    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        raise ValueError(f"{run_dir} is not a training run directory (no {CONFIG_FILE})")
    try:
        raw = OmegaConf.create(upgrade_stored(cast(dict[str, Any], OmegaConf.to_container(OmegaConf.load(path)))))
        schema = open_structured(TrainConfig(model=MODEL_SCHEMAS[str(raw.model.backbone)]()))
        cfg = OmegaConf.to_object(OmegaConf.merge(schema, raw))
    except (OmegaConfBaseException, KeyError, AttributeError, ValueError) as err:
        raise ValueError(f"{path} is not a valid training config: {str(err).splitlines()[0]}") from None
    assert isinstance(cfg, TrainConfig)
    return cfg


def check_run_dir(run_dir: Path, config: str, vocab: Vocab | None) -> list[str]:
    """Check, without writing anything, that this launch may use `run_dir` (a new run, or a resume of the same one).

    Args:
        run_dir: the run directory (it may not exist yet).
        config: the composed config of this launch as YAML (`f5lite.config.config_to_yaml`).
        vocab: the training data's vocab (None for bytes).

    Returns:
        Keys whose value differs from the previous launch's (empty for a new run).

    Raises:
        ValueError: the run directory holds a run of another architecture, tokenizer or mel type, or one whose
            vocab differs from the data's (same size in another order included).
    """
    changed: list[str] = []
    previous = run_dir / CONFIG_FILE
    if previous.is_file():
        stored = OmegaConf.to_container(OmegaConf.create(previous.read_text(encoding="utf-8")))
        old = upgrade_stored(cast(dict[str, Any], stored))
        changed = _diff(old, OmegaConf.to_container(OmegaConf.create(config)))
        fixed = [key for key in changed if any(key == k or key.startswith(k + ".") for k in _IDENTITY_KEYS)]
        if fixed:
            raise ValueError(
                f"run_dir={str(run_dir)!r} holds a run with other {', '.join(fixed)}; "
                "give another run_dir (or run_name) to start a new run"
            )
    kept = run_dir / VOCAB_FILE
    if kept.is_file() and vocab is not None:
        old_vocab = load_vocab(kept)
        if old_vocab.tokens != vocab.tokens:
            how = "another order" if sorted(old_vocab.tokens) == sorted(vocab.tokens) else "other tokens"
            raise ValueError(
                f"run_dir={str(run_dir)!r} was trained with another vocab ({len(old_vocab)} tokens in its vocab.txt, "
                f"{len(vocab)} in data.dir's, {how}): its text ids would mean other tokens; give another run_dir"
            )
    return changed


def write_run_files(run_dir: Path, config: str, vocab: Vocab | None) -> None:
    """Write `config.yaml` (this launch's config, as `check_run_dir` was given it) and `vocab.txt`, each atomically."""
    run_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(run_dir / CONFIG_FILE, config)
    if vocab is not None:
        write_text_atomic(run_dir / VOCAB_FILE, "".join(f"{token}\n" for token in vocab.tokens))


def _diff(old: object, new: object, prefix: str = "") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        keys = sorted(set(old) | set(new))
        return [d for k in keys for d in _diff(old.get(k), new.get(k), f"{prefix}{k}.")]
    return [] if old == new else [prefix.rstrip(".")]
