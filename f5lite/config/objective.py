"""Which way a run trains (`objective`), and which settings each way reads.

A run has one objective, named by one key (recipes set it): `flow` (the flow-matching loss; fine-tuning and LoRA are
`flow` from `init.weights`), `distill`, `grpo`, `duration` (the duration predictor alone) and `duration_grpo` (the
predictor by RL). Each is a module of `f5lite.train`; this module only names them and says which settings each needs
and which only some of them read, so that a setting no chosen objective reads is refused rather than ignored.
"""

from __future__ import annotations

from typing import Any

OBJECTIVES = ("flow", "distill", "grpo", "duration", "duration_grpo")
"""`objective`."""
PREDICTOR_ONLY = ("duration", "duration_grpo")
"""The objectives whose run trains the duration predictor and no flow model."""

NEEDS: dict[str, tuple[str, ...]] = {
    "distill": ("distill.teacher",),
    "grpo": ("grpo.prompts", "init.weights"),
    "duration_grpo": ("grpo.prompts", "init.weights", "duration.init"),
}
"""The settings an objective cannot run without."""

READERS: dict[str, tuple[str, ...]] = {
    "distill.teacher": ("distill",),
    "grpo.prompts": ("grpo", "duration_grpo"),
    "duration.init": ("duration", "duration_grpo"),
    "duration.train": ("flow",),
    "finetune.lora.rank": ("flow",),
}
"""Settings only some objectives read, by key: set to anything but their default under another, they are refused."""

REMOVED = {"alone": "duration", "grpo": "duration_grpo"}
"""`duration.train` values that became objectives: `duration.train=alone` is now `objective=duration`."""


def check_needs(objective: str, settings: dict[str, Any]) -> None:
    """Refuse a run whose objective lacks a setting it needs (checked at launch: a recipe composes without them).

    Args:
        objective: the run's `objective`.
        settings: the run's value of each key of `NEEDS[objective]` (dotted keys).

    Raises:
        ValueError: one line naming the keys and the objective.
    """
    missing = [key for key in NEEDS.get(objective, ()) if not settings[key]]
    if missing:
        raise ValueError(f"objective={objective} needs {' and '.join(missing)}")


def check_readers(objective: str, settings: dict[str, Any], defaults: dict[str, Any]) -> None:
    """Refuse a setting that the objective would ignore.

    Args:
        objective: the run's `objective`.
        settings: the run's value of each key of `READERS` (dotted keys).
        defaults: the default of each key of `READERS`.

    Raises:
        ValueError: one line naming the key and the objectives that read it.
    """
    for key, readers in READERS.items():
        if objective not in readers and settings[key] != defaults[key]:
            wanted = " or ".join(f"objective={name}" for name in readers)
            raise ValueError(f"{key}={settings[key]!r} is read only with {wanted}, not with objective={objective}")


STORED_SAMPLER_KEYS = {"grpo": {"steps": "steps", "cfg_strength": "cfg_strength"},
                       "distill": {"student_steps": "steps", "student_guidance": "cfg_strength"}}  # fmt: skip
"""Sampler keys of earlier versions' `grpo` and `distill` sections, by their key in the section's `sample`."""


def upgrade_stored(raw: dict[str, Any]) -> dict[str, Any]:
    """A run directory's frozen config from an earlier version, in today's keys.

    A run from before `objective` existed said how it trained by which settings it had: `distill.teacher`,
    `grpo.prompts`, or `duration.train=alone|grpo`; its objective is named. The `grpo` and `distill` sections' sampler
    keys move into their `sample` sections, with the run's `sample.schedule` and `sample.sway` that they used then.

    Args:
        raw: the config as read from `RUN_DIR/config.yaml` (plain containers).

    Returns:
        The config as today's schema reads it.
    """
    raw = dict(raw)
    for section, keys in STORED_SAMPLER_KEYS.items():
        old = dict(raw.get(section) or {})
        if not keys.keys() & old.keys():
            continue
        grid = {key: (raw.get("sample") or {})[key] for key in ("schedule", "sway") if key in (raw.get("sample") or {})}
        nested = {**grid, **{new: old.pop(key) for key, new in keys.items() if key in old}}
        raw[section] = {**old, "sample": nested}
    if "objective" in raw:
        return raw
    duration = dict(raw.get("duration") or {})
    objective = "flow"
    if duration.get("train") in REMOVED:
        objective = REMOVED[duration["train"]]
        duration["train"] = "none"
    elif (raw.get("distill") or {}).get("teacher"):
        objective = "distill"
    elif (raw.get("grpo") or {}).get("prompts"):
        objective = "grpo"
    return {**raw, "duration": duration, "objective": objective}
