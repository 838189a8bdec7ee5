"""The ranges of the page's number fields: given to the fields (`minimum`, `maximum`) and checked again on arrival.

Gradio checks a number field's bounds itself, but not a NaN, and a client (`gradio_client`, a script) may send any
value to a route: each handler takes its numbers through `Limit.check` before any work starts, so a value out of
range is one line naming the field and its range.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Limit:
    """The range of one number field.

    Attributes:
        label: the field, as the page names it.
        low: the smallest value.
        high: the largest value.
        integer: whole numbers only.
    """

    label: str
    low: float
    high: float
    integer: bool = True

    def check(self, value: float | None) -> float:
        """`value`, if it is a number in range (a whole one for an integer field).

        Raises:
            ValueError: one line naming the field and its range.
        """
        # A NaN fails the range check (every comparison with it is false); so does an infinity.
        if (
            not isinstance(value, (int, float))
            or not self.low <= value <= self.high
            or (self.integer and value != int(value))
        ):
            kind = "a whole number" if self.integer else "a number"
            raise ValueError(f"{self.label} must be {kind} from {_show(self.low)} to {_show(self.high)}, not {value!r}")
        return value

    def whole(self, value: float | None) -> int:
        """`check` for an integer field, as an `int`."""
        return int(self.check(value))


def _show(number: float) -> str:
    return f"{int(number):,}" if float(number).is_integer() else f"{number:g}"


STEPS = Limit("Steps", 1, 64)
GUIDANCE = Limit("Guidance", 0, 5, integer=False)
SPEED = Limit("Speed", 0.5, 2.0, integer=False)
SEED = Limit("Seed", -1, 2**31 - 1)
SECONDS = Limit("Seconds of speech", 0, 120, integer=False)
SCRIPT_CHARS = 4096
"""The longest text Speak says in one go (as `f5lite-serve`'s default `max_input_chars`)."""
WORKERS = Limit("Transcription workers", 1, max(1, os.cpu_count() or 1))
HELD_OUT = Limit("Held-out clips", 0, 1000)
UPDATES = Limit("Updates", 1, 10_000_000)
LEARNING_RATE = Limit("Learning rate", 0, 1, integer=False)
FRAMES = Limit("Frames per batch", 0, 400_000)
LORA_RANK = Limit("LoRA rank", 1, 1024)
EVERY = Limit("Checkpoint, validation and samples every", 1, 10_000_000)
EVAL_STEPS = Limit("Steps", 1, 64)
