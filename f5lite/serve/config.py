"""Typed schema of `f5lite-serve`'s `key=value` arguments: the model, as `f5lite-infer` takes it, and the sampler.

`model=`, `device=`, `dtype=`, `recipe=`, `vocab=`, `compile=`, `threads=`, `duration=` are `f5lite-infer`'s keys
(`f5lite.infer.config.ModelSource`), composed by the same machinery (`compose_tool_config`, `configs/serve.yaml`), so a
key means the same and a bad one is refused with the same line. The server's own settings (host, port, key, queue)
are flags. The spellings of earlier versions (a positional model, `--device`, `--dtype`, ...) are refused in one line
naming the key to write.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from f5lite.config.compose import compose_tool_config
from f5lite.config.sample import SampleConfig
from f5lite.infer.config import ModelSource

LITERAL_KEYS = {"model", "recipe", "vocab", "duration", "sample.vocoder_source"}
"""Keys whose values are paths, taken verbatim (no Hydra quoting)."""
REMOVED_FLAGS = {f"--{key}": key for key in ("device", "dtype", "recipe", "vocab", "compile", "duration", "threads")}
"""The model's flags of earlier versions, by the key that replaced each."""


@dataclass
class ServeConfig(ModelSource):
    """The model `f5lite-serve` speaks with and the sampler of every request."""

    sample: SampleConfig = field(default_factory=SampleConfig)
    """Sampler settings of every request, as in `f5lite-infer` (a request's `speed` replaces `sample.speed`)."""


def compose_serve_config(args: Sequence[str]) -> ServeConfig:
    """The model and sampler of `f5lite-serve` from its `key=value` arguments.

    The flags of earlier versions (`--device cpu`, `REMOVED_FLAGS`) are refused by the command line before it parses.

    Args:
        args: the `key=value` arguments, e.g. ``["model=runs/x/export", "device=cpu", "sample.steps=16"]``.

    Returns:
        The validated config.

    Raises:
        ValueError: a removed spelling, an unknown key or a bad value, in one line naming the key.
    """
    for arg in args:
        if "=" not in arg:
            raise ValueError(f"the model as a positional argument is no longer accepted; write model={arg}")
    return compose_tool_config(
        args, name="serve", schema=ServeConfig, literal_keys=LITERAL_KEYS, listing="f5lite-serve --help"
    )
