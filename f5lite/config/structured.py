"""Config nodes from the schemas: open to merges, and checked by key where a section nests the sampler's settings.

OmegaConf makes a frozen dataclass's node read-only; `grpo.sample` and `distill.sample` are `SamplerOptions`.
"""

from __future__ import annotations

from typing import Any, cast

from omegaconf import DictConfig, OmegaConf

from f5lite.sampling.options import SamplerOptions


def open_structured(schema: Any) -> DictConfig:
    """`OmegaConf.structured(schema)` with every section open to merges, frozen dataclasses included.

    OmegaConf marks a frozen dataclass's node read-only, which would turn every override of it (`sample.steps=7`)
    into an error. The objects made from the merged config are frozen dataclasses again, so nothing can change them
    after composition.

    Args:
        schema: a dataclass type or instance.

    Returns:
        The config node.
    """
    node = OmegaConf.structured(schema)
    _open(node)
    return node


def _open(node: DictConfig) -> None:
    OmegaConf.set_readonly(node, None)
    for key in node:
        child = node._get_node(key)
        if isinstance(child, DictConfig):
            _open(child)


def check_sampler_sections(node: DictConfig, prefix: str = "") -> None:
    """Build every nested `SamplerOptions` section of a merged config once, so that an error names its whole key.

    The sampler's own messages name the field only (`steps=0 is not valid; ...`), which is ambiguous where its
    settings are nested in several sections (`grpo.sample`, `distill.sample`).

    Args:
        node: the merged config.
        prefix: the key of `node`, with a trailing dot ("" at the top).

    Raises:
        ValueError: `grpo.sample.steps=0 is not valid; ...`.
    """
    for key in node:
        child, name = node._get_node(key), str(key)
        if not isinstance(child, DictConfig):
            continue
        if OmegaConf.get_type(child) is SamplerOptions:
            try:
                SamplerOptions(**cast(dict[str, Any], OmegaConf.to_container(child, resolve=True)))
            except ValueError as err:
                raise ValueError(f"{prefix}{name}.{err}") from None
        else:
            check_sampler_sections(child, f"{prefix}{name}.")
