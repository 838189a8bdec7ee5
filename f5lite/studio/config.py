"""Typed schema of `f5lite-studio`'s `key=value` arguments: where it runs models, and where Speak's sampler starts.

`device=` is `f5lite-infer`'s key and `sample.*` its section, composed by the same machinery (`compose_tool_config`,
`configs/studio.yaml`), so a key means the same and a bad one is refused with the same line. The studio's own settings
(workspace, host, port, login) are flags; `--device` of earlier versions is refused in one line naming `device=`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from f5lite.config.compose import compose_tool_config
from f5lite.config.sample import SampleConfig
from f5lite.infer.config import DEVICE_PATTERN

LITERAL_KEYS = {"sample.vocoder_source"}
"""Keys whose values are paths, taken verbatim (no Hydra quoting)."""
REMOVED_FLAGS = {"--device": "device"}
"""The flags of earlier versions, by the key that replaced each."""


@dataclass
class StudioConfig:
    """Where the studio runs models, and the sampler its Speak tab starts from."""

    device: str = "auto"
    """Where Speak and evaluations run the model: `auto` (cuda when available), `cpu`, `cuda` or `cuda:N`."""
    sample: SampleConfig = field(default_factory=SampleConfig)
    """Where Speak's sampler settings start, and the vocoder of Speak, training samples and evaluations."""

    def __post_init__(self) -> None:
        if not DEVICE_PATTERN.fullmatch(self.device):
            raise ValueError(f"device={self.device!r} is not valid; use auto, cpu, cuda or cuda:N")


def compose_studio_config(args: Sequence[str]) -> StudioConfig:
    """The studio's `key=value` arguments, composed and checked.

    Args:
        args: the arguments, e.g. ``["device=cpu", "sample.vocoder=griffin_lim"]``.

    Returns:
        The validated config.

    Raises:
        ValueError: an unknown key or a bad value, in one line naming the key.
    """
    return compose_tool_config(
        args, name="studio", schema=StudioConfig, literal_keys=LITERAL_KEYS, listing="f5lite-studio --help"
    )
