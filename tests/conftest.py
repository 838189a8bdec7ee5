"""Shared test set-up: marker handling and paths to the small assets the tests ship with."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

ASSETS = Path(__file__).parent / "assets"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip `gpu` tests when no CUDA device is present, so nobody has to remember a decorator."""
    if torch.cuda.is_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


@pytest.fixture
def assets() -> Path:
    """Directory of the small files the tests ship with (`tests/assets`)."""
    return ASSETS
