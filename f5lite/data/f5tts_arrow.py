"""Reading an F5-TTS prepared dataset (`raw.arrow`, `duration.json`, `vocab.txt`) without preparing it again.

It needs the optional `datasets` package (`pip install 'f5lite[f5tts]'`).

F5-TTS writes the rows `{audio_path, text, duration}` with `datasets`' ArrowWriter into `raw.arrow` (or a
`save_to_disk` folder `raw/`, which F5-TTS tries first), the durations again into `duration.json`
(`{"duration": [...]}`, same order), and the vocab into `vocab.txt`. `text` is a string, or a list of pinyin
tokens for datasets tokenized at preparation. Like F5-TTS's `CustomDataset`, rows outside 0.3 to 30 s are not
used; here they are counted in a warning instead of being skipped silently at every epoch.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from f5lite.audio import SAMPLE_RATE, frames_for_samples
from f5lite.data.manifest import ManifestRow

logger = logging.getLogger(__name__)

F5TTS_EXTRA_HINT = "pip install 'f5lite[f5tts]'"
"""How to install what this module needs."""

F5TTS_MIN_SECONDS = 0.3
"""Shortest utterance F5-TTS's dataset uses."""

F5TTS_MAX_SECONDS = 30.0
"""Longest utterance F5-TTS's dataset uses."""


def read_f5tts_dataset(data_dir: str | Path) -> list[ManifestRow]:
    """Read the rows of an F5-TTS prepared directory.

    Args:
        data_dir: A directory holding `raw/` or `raw.arrow`, and `duration.json`.

    Returns:
        The rows between 0.3 and 30 s, in file order, with `frames` computed from the duration ("vocos" frames at
        24 kHz). Relative audio paths are resolved against `data_dir`.

    Raises:
        ImportError: `datasets` is not installed; the message says how to install it.
        ValueError: A file is missing or malformed, or `duration.json` does not match the rows.
    """
    try:
        import datasets
    except ImportError as err:
        raise ImportError(
            f"reading an F5-TTS dataset (raw.arrow) needs the optional `datasets` package: {F5TTS_EXTRA_HINT}"
        ) from err
    directory = Path(data_dir)
    try:
        if (directory / "raw").is_dir():
            table = datasets.load_from_disk(str(directory / "raw"))
        else:
            table = datasets.Dataset.from_file(str(directory / "raw.arrow"))
    except Exception as err:  # pyarrow and datasets raise many unrelated types for a bad file
        raise ValueError(f"cannot read the F5-TTS dataset in {directory}: {err}") from err
    missing = {"audio_path", "text"} - set(table.column_names)
    if missing:
        raise ValueError(f"F5-TTS dataset {directory} lacks column(s) {', '.join(sorted(missing))}")
    durations = _read_durations(directory / "duration.json")
    if len(durations) != len(table):
        raise ValueError(
            f"{directory / 'duration.json'} lists {len(durations)} durations for {len(table)} rows in raw.arrow"
        )
    rows = []
    out_of_range = 0
    for audio_path, text, duration in zip(table["audio_path"], table["text"], durations, strict=True):
        if not F5TTS_MIN_SECONDS <= duration <= F5TTS_MAX_SECONDS:
            out_of_range += 1
            continue
        rows.append(
            ManifestRow(
                audio_path=directory / str(audio_path),
                text=text if isinstance(text, str) else tuple(text),
                duration=float(duration),
                frames=frames_for_samples(round(duration * SAMPLE_RATE)),
            )
        )
    if out_of_range:
        logger.warning(
            "%s: %d of %d rows are outside %s-%s s and are not used, as in F5-TTS",
            directory,
            out_of_range,
            len(durations),
            F5TTS_MIN_SECONDS,
            F5TTS_MAX_SECONDS,
        )
    return rows


def _read_durations(path: Path) -> list[float]:
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ValueError(f"cannot read {path}: {err}") from err
    durations = data.get("duration") if isinstance(data, dict) else None
    if not isinstance(durations, list) or not all(isinstance(d, (int, float)) for d in durations):
        raise ValueError(f'{path} must hold {{"duration": [seconds, ...]}}')
    return [float(d) for d in durations]
