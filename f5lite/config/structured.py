"""Config nodes from the schemas, open to merges even where a section is a frozen dataclass."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf


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
