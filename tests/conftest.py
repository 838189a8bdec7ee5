"""Shared test set-up: marker handling and paths to the small assets the tests ship with."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from accelerate.state import AcceleratorState
from support.golden import report_rows

ASSETS = Path(__file__).parent / "assets"


def pytest_addoption(parser: pytest.Parser) -> None:
    """`--golden-report FILE`: write every golden comparison's largest difference and margin (see tests/support/golden.py)."""
    parser.addoption("--golden-report", metavar="FILE", help="write the golden comparisons made, as JSON lines")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Write the `--golden-report` file when one was asked for."""
    path = session.config.getoption("--golden-report")
    if path:
        Path(path).write_text("".join(json.dumps(row) + "\n" for row in report_rows()))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip `gpu` tests when no CUDA device is present, so nobody has to remember a decorator."""
    if torch.cuda.is_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


@pytest.fixture(autouse=True)
def isolate_process_state() -> Iterator[None]:
    """Undo process-wide settings a test may change, so that no result depends on the order tests run in.

    `AcceleratorState` is a singleton that keeps the first `mixed_precision` it was given (a bf16 `Trainer` after an
    fp32 one would fail), and the torch thread count changes float reduction order (a benchmark run with
    `--threads 1` would make a later same-seed comparison with a subprocess differ in the last bits).
    """
    threads = torch.get_num_threads()
    yield
    AcceleratorState._reset_state(reset_partial_state=True)
    torch.set_num_threads(threads)


@pytest.fixture
def assets() -> Path:
    """Directory of the small files the tests ship with (`tests/assets`)."""
    return ASSETS
