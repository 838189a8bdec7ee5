"""The `key=value` keys of the tools, listed for their `--help` from the schemas (`sample_keys_help`, `keys_help`).

Every tool takes the sampler's settings as the same `sample.*` keys of one `SampleConfig` section, composed by the
same machinery (`compose_tool_config`): `f5lite-infer` and `f5lite-eval` with their whole config, `f5lite-serve` and
`f5lite-studio` beside the flags of their own settings (host, port, key, queue). So a key means the same and a bad one
is refused with the same line in every tool.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

from f5lite.config.reference import config_reference
from f5lite.config.sample import SampleConfig


@dataclass
class SampleArgs:
    """The `sample.*` keys, as every tool takes them (listed by `sample_keys_help`)."""

    sample: SampleConfig = field(default_factory=SampleConfig)
    """Sampler settings, as in `f5lite-infer`."""


def sample_keys_help(width: int = 100) -> str:
    """The `sample.*` keys with their defaults and docstrings, for a tool's `--help`."""
    return keys_help(SampleArgs, "sampler keys (sample.KEY=VALUE, as in f5lite-infer)", width)


def keys_help(schema: type, heading: str, width: int = 100) -> str:
    """A schema's keys with their defaults and docstrings, under `heading`, for a tool's `--help`.

    Args:
        schema: the dataclass whose keys the tool takes as `KEY=VALUE`.
        heading: the first line, without its colon.
        width: the width the lines are wrapped to.

    Returns:
        The text, one wrapped paragraph per key.
    """
    lines = [f"{heading}:"]
    for key in config_reference(schema):
        text = f"{key.key} (default {key.default}): {key.doc}"
        lines.extend(textwrap.wrap(text, width, initial_indent="  ", subsequent_indent="      "))
    return "\n".join(lines)
