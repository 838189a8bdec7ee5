"""The duration predictor's files: inside an f5lite export, or a directory of their own.

```
duration.safetensors   the predictor's weights (`f5lite.models.duration.DurationPredictor`), float32
duration.json          {"format": "f5lite-duration", "format_version": 1, "f5lite_version": "...",
                        "model": {"text_num_embeds": 54, "dim": 64, "depth": 3, "kernel_size": 5},
                        "tokenizer": "char", "vocab_sha256": "<sha256 of the token table, null for byte>",
                        "trained_updates": 500}
vocab.txt              the token table (the export's own, or, in a directory of their own, written beside them)
```

The two files are optional in an export: an export without them (every export written before the predictor existed)
loads as before and speaks with the byte-ratio rule. The predictor reads the same text ids as the export's model, so its
config records the hash of the token table it was trained with and loading refuses any other table.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from f5lite.atomic import atomic_directory
from f5lite.models.duration import DurationPredictor
from f5lite.text import TextEncoder, Vocab, load_vocab, write_vocab
from f5lite.text.tokenizers import check_tokenizer_name, uses_vocab
from f5lite.text.vocab import vocab_hash
from f5lite.version import __version__
from f5lite.versioned import read_versioned_json

FORMAT = "f5lite-duration"
FORMAT_VERSION = 1
WEIGHTS_FILE = "duration.safetensors"
CONFIG_FILE = "duration.json"
VOCAB_FILE = "vocab.txt"
ARCH_KEYS = ("text_num_embeds", "dim", "depth", "kernel_size")
"""The constructor arguments `duration.json` records."""


class DurationFileError(ValueError):
    """Duration predictor files that cannot be read, or that do not fit the model they are loaded with."""


@dataclass(frozen=True)
class LoadedDuration:
    """A duration predictor ready to estimate, and the encoder of its text ids.

    Attributes:
        predictor: in eval mode, float32, on the CPU.
        encoder: turns text into the ids the predictor was trained on.
        trained_updates: optimizer updates it was trained for (as recorded).
    """

    predictor: DurationPredictor
    encoder: TextEncoder
    trained_updates: int


def has_duration(directory: str | os.PathLike[str]) -> bool:
    """Whether `directory` holds a duration predictor's config (its files may still be broken)."""
    return (Path(directory) / CONFIG_FILE).is_file()


def write_duration_files(
    directory: str | os.PathLike[str], predictor: DurationPredictor, tokenizer: str, vocab: Vocab | None, updates: int
) -> None:
    """Write `duration.safetensors` and `duration.json` into an existing directory (an export being staged).

    Args:
        directory: where to write; the caller makes the directory appear atomically.
        predictor: the trained predictor.
        tokenizer: `char`, `pinyin` or `byte`: how its text ids were made.
        vocab: the token table of those ids, None for the byte tokenizer.
        updates: optimizer updates it was trained for.
    """
    root = Path(directory)
    config = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "f5lite_version": __version__,
        "model": architecture(predictor),
        "tokenizer": tokenizer,
        "vocab_sha256": vocab_hash(vocab),
        "trained_updates": int(updates),
    }
    weights = {k: v.detach().float().cpu().contiguous().clone() for k, v in predictor.state_dict().items()}
    save_file(weights, root / WEIGHTS_FILE, metadata={"format": "pt"})
    (root / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def save_duration(
    out_dir: str | os.PathLike[str],
    predictor: DurationPredictor,
    tokenizer: str,
    vocab: Vocab | None,
    updates: int,
    replaceable: Callable[[Path], bool] | None = None,
) -> Path:
    """Write a directory holding only a predictor (with its `vocab.txt`), atomically.

    Args:
        out_dir: the directory to create, or a previous predictor directory to replace.
        predictor: the trained predictor.
        tokenizer: how its text ids were made.
        vocab: their token table, None for the byte tokenizer.
        updates: optimizer updates it was trained for.
        replaceable: whether an existing non-empty `out_dir` may be replaced; default: when it holds a predictor.

    Returns:
        The directory.

    Raises:
        DurationFileError: `out_dir` is a file, or a non-empty directory that holds no predictor.
    """
    out = Path(out_dir)
    try:
        with atomic_directory(out, replaceable or has_duration, "a duration predictor directory") as staging:
            write_duration_files(staging, predictor, tokenizer, vocab, updates)
            if vocab is not None:
                write_vocab(staging / VOCAB_FILE, vocab)
    except ValueError as err:
        raise DurationFileError(str(err)) from None
    return out


def load_duration(
    directory: str | os.PathLike[str], *, tokenizer: str | None = None, vocab: Vocab | None = None
) -> LoadedDuration:
    """Read a predictor from an export, or from a directory of its own.

    Args:
        directory: holds `duration.json` and `duration.safetensors`.
        tokenizer: the tokenizer of the model it is loaded with (an export's); None: take the predictor's own.
        vocab: that model's token table; None: the directory's `vocab.txt` (when the tokenizer needs one).

    Returns:
        The predictor in eval mode, and its encoder.

    Raises:
        DurationFileError: one line: a missing or malformed file, an unknown format version, weights that do not fit
            the recorded architecture, or a tokenizer or token table other than the one it was trained with.
    """
    root = Path(directory)
    config = read_versioned_json(root, CONFIG_FILE, FORMAT, FORMAT_VERSION, "a duration predictor", DurationFileError)
    where = root / CONFIG_FILE
    try:
        arch = {key: int(config["model"][key]) for key in ARCH_KEYS}
        own_tokenizer = str(config["tokenizer"])
        expected = config["vocab_sha256"]
        updates = int(config.get("trained_updates", 0))
    except (KeyError, TypeError, ValueError) as err:
        missing = f"missing key {err}" if isinstance(err, KeyError) else str(err)
        raise DurationFileError(f"{where} does not describe a duration predictor: {missing}") from None
    try:
        check_tokenizer_name(own_tokenizer)
    except ValueError as err:
        raise DurationFileError(f"{where}: {err}") from None
    if tokenizer is not None and tokenizer != own_tokenizer:
        raise DurationFileError(
            f"the duration predictor in {root} reads {own_tokenizer!r} ids but the model reads {tokenizer!r} ids"
        )
    try:
        if vocab is None and uses_vocab(own_tokenizer):
            vocab = load_vocab(root / VOCAB_FILE)
        if vocab_hash(vocab if uses_vocab(own_tokenizer) else None) != expected:
            raise DurationFileError(
                f"the duration predictor in {root} was trained with another token table than the model's vocab.txt "
                "(its text ids would mean other tokens)"
            )
        predictor = DurationPredictor(**arch)
        state = load_file(root / WEIGHTS_FILE)
        try:
            predictor.load_state_dict(_as_float(state))
        except RuntimeError:
            raise DurationFileError(
                f"duration predictor {root}: {WEIGHTS_FILE} does not fit the architecture in {CONFIG_FILE} "
                f"({', '.join(f'{k}={v}' for k, v in arch.items())})"
            ) from None
    except DurationFileError:
        raise
    except (SafetensorError, OSError, RuntimeError, ValueError) as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise DurationFileError(f"duration predictor {root}: {reason}") from None
    encoder = TextEncoder(own_tokenizer, vocab if uses_vocab(own_tokenizer) else None)
    return LoadedDuration(predictor.eval(), encoder, updates)


def architecture(predictor: DurationPredictor) -> dict[str, int]:
    """The constructor arguments that rebuild `predictor`'s shapes (what `duration.json` records)."""
    return {key: int(getattr(predictor, key)) for key in ARCH_KEYS}


def _as_float(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.float() if v.is_floating_point() else v for k, v in state.items()}
