"""The run directory: deterministic from the config (the same command resumes), frozen config, vocab copy.

Layout:

    RUN_DIR/config.yaml     the composed config of the latest launch (resolved, every key present)
    RUN_DIR/vocab.txt       the training vocab, so that exports need nothing from the data directory
    RUN_DIR/checkpoints/    training checkpoints (see `f5lite.storage.store`)
    RUN_DIR/export/         the exported model, written once at the end of training
    RUN_DIR/logs/           tensorboard / wandb files
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from pathlib import Path

import yaml
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from f5lite.config import MODEL_SCHEMAS, TrainConfig, config_to_yaml
from f5lite.config.structured import open_structured

log = logging.getLogger(__name__)

CONFIG_FILE = "config.yaml"
VOCAB_FILE = "vocab.txt"
CHECKPOINTS = "checkpoints"
EXPORT = "export"
LOGS = "logs"

# Settings a checkpoint cannot be resumed under a different value of: they change the weights' meaning.
_IDENTITY_KEYS = ("model", "data.tokenizer", "data.mel_type")


def identity_hash(cfg: TrainConfig) -> str:
    """sha256 of the settings that must not change across a resume (architecture, tokenizer, mel type)."""
    conf = OmegaConf.create(config_to_yaml(cfg))
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
        raw = OmegaConf.load(path)
        schema = open_structured(TrainConfig(model=MODEL_SCHEMAS[str(raw.model.backbone)]()))
        cfg = OmegaConf.to_object(OmegaConf.merge(schema, raw))
    except (OmegaConfBaseException, KeyError, AttributeError, ValueError) as err:
        raise ValueError(f"{path} is not a valid training config: {str(err).splitlines()[0]}") from None
    assert isinstance(cfg, TrainConfig)
    return cfg


def freeze_config(run_dir: Path, cfg: TrainConfig) -> list[str]:
    """Write `config.yaml` (atomically), after checking it may replace the one already there.

    Args:
        run_dir: the run directory (created if needed).
        cfg: the composed config.

    Returns:
        Keys whose value differs from the previous launch's (empty for a new run).

    Raises:
        ValueError: the run directory holds a run of another architecture, tokenizer or mel type.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / CONFIG_FILE
    text = config_to_yaml(cfg)
    changed: list[str] = []
    if path.is_file():
        old = OmegaConf.create(path.read_text())
        new = OmegaConf.create(text)
        changed = _diff(OmegaConf.to_container(old), OmegaConf.to_container(new))
        fixed = [key for key in changed if any(key == k or key.startswith(k + ".") for k in _IDENTITY_KEYS)]
        if fixed:
            raise ValueError(
                f"run_dir={str(run_dir)!r} holds a run with other {', '.join(fixed)}; "
                "give another run_dir (or run_name) to start a new run"
            )
        if changed:
            log.warning("resuming %s with changed settings: %s", run_dir, ", ".join(changed))
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return changed


def copy_vocab(run_dir: Path, vocab: Path | None) -> None:
    """Keep the training vocab next to the checkpoints (a no-op for the byte tokenizer, which has none)."""
    if vocab is not None:
        shutil.copyfile(vocab, run_dir / VOCAB_FILE)


def _diff(old: object, new: object, prefix: str = "") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        keys = sorted(set(old) | set(new))
        return [d for k in keys for d in _diff(old.get(k), new.get(k), f"{prefix}{k}.")]
    return [] if old == new else [prefix.rstrip(".")]
