"""Small validators used by the config schemas: each raises a `ValueError` that names the offending key."""

from __future__ import annotations

from collections.abc import Collection


def check_choice(key: str, value: object, choices: Collection[object]) -> None:
    """Raise unless `value` is one of `choices`.

    Args:
        key: Dotted config key, e.g. ``"perf.precision"``, used in the message.
        value: The value found in the config.
        choices: The allowed values (a mapping offers its keys).

    Raises:
        ValueError: Naming the key, the bad value and the allowed ones.
    """
    if value not in choices:
        allowed = ", ".join(str(c) for c in choices)
        raise ValueError(f"{key}={value!r} is not valid; choose one of: {allowed}")


def check_at_least(key: str, value: float | None, minimum: float, *, allow_none: bool = False) -> None:
    """Raise unless `value >= minimum` (or `value is None` when `allow_none`).

    Args:
        key: Dotted config key used in the message.
        value: The value found in the config.
        minimum: Smallest allowed value.
        allow_none: Accept ``None`` as "not set".

    Raises:
        ValueError: Naming the key, the bad value and the bound.
    """
    if value is None and allow_none:
        return
    if value is None or value < minimum:
        raise ValueError(f"{key}={value!r} is not valid; it must be >= {minimum}")


def check_range(key: str, value: float, low: float, high: float) -> None:
    """Raise unless `low <= value <= high`.

    Args:
        key: Dotted config key used in the message.
        value: The value found in the config.
        low: Smallest allowed value.
        high: Largest allowed value.

    Raises:
        ValueError: Naming the key, the bad value and the interval.
    """
    if not low <= value <= high:
        raise ValueError(f"{key}={value!r} is not valid; it must be in [{low}, {high}]")
