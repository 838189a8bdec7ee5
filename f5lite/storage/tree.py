"""Split nested training state (optimizer and scheduler state dicts) into safetensors tensors and JSON.

Checkpoints hold no pickles: tensors go to a `.safetensors` file under generated names, everything else to JSON,
with markers for what JSON cannot say itself (tensors, dicts with non-string keys such as optimizer parameter ids).
"""

from __future__ import annotations

from typing import Any

import torch

_TENSOR = "__tensor__"
_ITEMS = "__items__"


def flatten(tree: Any, prefix: str = "t") -> tuple[Any, dict[str, torch.Tensor]]:
    """Replace every tensor in a nested structure by a reference.

    Args:
        tree: dicts, lists, tuples, tensors and JSON scalars.
        prefix: start of the tensor names, which follow the path to each tensor (`optimizer.state.0.exp_avg`).

    Returns:
        `(skeleton, tensors)`: a JSON-serializable skeleton and `{name: tensor}`.

    Raises:
        TypeError: a value that is neither a tensor nor JSON-serializable.
    """
    tensors: dict[str, torch.Tensor] = {}

    def walk(node: Any, path: str) -> Any:
        if isinstance(node, torch.Tensor):
            name = path if path not in tensors else f"{path}#{len(tensors)}"
            tensors[name] = node
            return {_TENSOR: name}
        if isinstance(node, dict):
            if all(isinstance(k, str) for k in node) and _TENSOR not in node and _ITEMS not in node:
                return {k: walk(v, f"{path}.{k}") for k, v in node.items()}
            return {_ITEMS: [[walk(k, f"{path}.key"), walk(v, f"{path}.{k}")] for k, v in node.items()]}
        if isinstance(node, list | tuple):
            return [walk(v, f"{path}.{i}") for i, v in enumerate(node)]
        if node is None or isinstance(node, bool | int | float | str):
            return node
        raise TypeError(f"cannot store a {type(node).__name__} in a checkpoint")

    return walk(tree, prefix), tensors


def unflatten(skeleton: Any, tensors: dict[str, torch.Tensor]) -> Any:
    """Inverse of `flatten` (tuples come back as lists).

    Raises:
        KeyError: a referenced tensor is missing.
    """
    if isinstance(skeleton, dict):
        if _TENSOR in skeleton:
            return tensors[skeleton[_TENSOR]]
        if _ITEMS in skeleton:
            return {_hashable(unflatten(k, tensors)): unflatten(v, tensors) for k, v in skeleton[_ITEMS]}
        return {k: unflatten(v, tensors) for k, v in skeleton.items()}
    if isinstance(skeleton, list):
        return [unflatten(v, tensors) for v in skeleton]
    return skeleton


def _hashable(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key
