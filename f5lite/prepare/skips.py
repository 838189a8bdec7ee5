"""Why an utterance was left out: the reasons `f5lite-prepare` reports in `report.json`, one per skipped item."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

SkipReason = Literal[
    "malformed_row",
    "segment",
    "no_transcript",
    "duplicate",
    "empty_text",
    "missing_audio",
    "unreadable",
    "empty_audio",
    "too_short",
    "too_long",
    "non_finite",
    "speaking_rate",
    "unknown_chars",
]
"""Every reason code, in the order the checks run (an item is reported under the first check it fails)."""

SKIP_REASONS: tuple[SkipReason, ...] = get_args(SkipReason)
"""The reason codes as a tuple."""


@dataclass(frozen=True)
class Skip:
    """One item left out of the prepared cuts.

    Attributes:
        path: The audio file the item names (for an unparsable metadata line: the metadata file).
        reason: The reason code.
        detail: One human-readable line: the numbers or the error behind the reason.
    """

    path: Path
    reason: SkipReason
    detail: str
