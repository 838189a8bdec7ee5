"""`sample.*` keys on the command line of a tool that has flags of its own: `f5lite-serve` and `f5lite-studio`.

`f5lite-infer` and `f5lite-eval` take their whole config as `key=value` arguments, the sampler's settings among them
(`sample.steps=7 sample.cfg_strength=0`). The server and the studio keep flags for their own settings (host, port,
key, queue) and take the sampler's settings spelled the same way: the same `SampleConfig` section, composed by the
same machinery (`compose_tool_config`, primary config `configs/sample_args.yaml`), so a key means the same and a bad
one is refused with the same line in every tool. Their `--help` lists the keys from the schema (`sample_keys_help`).
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field

from f5lite.config.compose import SAMPLE_ALIASES, compose_tool_config
from f5lite.config.reference import config_reference
from f5lite.config.schema import SampleConfig

SAMPLE_LITERAL_KEYS = {"sample.vocoder_source"}
"""Sampler keys whose values are paths, taken verbatim (no Hydra quoting)."""


@dataclass
class SampleArgs:
    """The `sample.*` keys of a tool with flags of its own."""

    sample: SampleConfig = field(default_factory=SampleConfig)
    """Sampler settings, as in `f5lite-infer`."""


def compose_sample_args(args: Sequence[str], tool: str) -> SampleConfig:
    """The sampler section from `sample.KEY=VALUE` arguments (and the tools' short spellings, `seed=`, `vocoder=`).

    Args:
        args: the arguments, e.g. ``["sample.steps=7", "sample.vocoder=griffin_lim"]``.
        tool: the tool's command, named in the error about an unknown key.

    Returns:
        The validated section (`SampleConfig()` for no arguments).

    Raises:
        ValueError: an argument that is no sampler key, or a bad value, in one line naming the key.
    """
    for arg in args:
        key = arg.partition("=")[0]
        if not key.startswith("sample.") and key not in SAMPLE_ALIASES:
            raise ValueError(f"{arg}: not a sampler key (give sample.KEY=VALUE; see {tool} --help)")
    config = compose_tool_config(
        args, name="sample_args", schema=SampleArgs, literal_keys=SAMPLE_LITERAL_KEYS, listing=f"{tool} --help"
    )
    return config.sample


def sample_keys_help(width: int = 100) -> str:
    """The `sample.*` keys with their defaults and docstrings, for a tool's `--help`."""
    short = ", ".join(f"{alias} for {key}" for alias, key in SAMPLE_ALIASES.items())
    lines = [f"sampler keys (sample.KEY=VALUE, as in f5lite-infer; also {short}):"]
    for key in config_reference(SampleArgs):
        text = f"{key.key} (default {key.default}): {key.doc}"
        lines.extend(textwrap.wrap(text, width, initial_indent="  ", subsequent_indent="      "))
    return "\n".join(lines)
