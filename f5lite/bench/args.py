"""Command-line argument types shared by the benchmarks in `scripts/`."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def int_list(minimum: int) -> Callable[[str], list[int]]:
    """An argparse `type` for comma-separated integers, each at least `minimum` (e.g. `--mel-lengths 300,340`).

    Args:
        minimum: the smallest value accepted (1 for lengths, 0 for worker counts).

    Returns:
        A callable that parses the text or raises `argparse.ArgumentTypeError` naming it.
    """

    def parse(text: str) -> list[int]:
        try:
            values = [int(v) for v in text.split(",") if v]
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None
        if not values or min(values) < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} needs integers >= {minimum}")
        return values

    return parse
