"""Training on an F5-TTS prepared dataset (`raw.arrow`, `duration.json`, `vocab.txt`) without preparing it again.

It needs the optional `datasets` package (`pip install 'f5lite[f5tts]'`).

F5-TTS writes the rows `{audio_path, text, duration}` with `datasets`' ArrowWriter into `raw.arrow` (or a
`save_to_disk` folder `raw/`, which F5-TTS tries first), the durations again into `duration.json`
(`{"duration": [...]}`, same order), and the vocab into `vocab.txt`. `text` is a string, or a list of pinyin
tokens for datasets tokenized at preparation. The table is memory-mapped and read in slices, each row becoming a
cut as the sampler asks for it. Like F5-TTS's `CustomDataset`, rows outside 0.3 to 30 s are not used; here they are
counted in a warning at the end of each pass instead of being skipped silently.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lhotse.cut import Cut

from f5lite.audio import SAMPLE_RATE, frames_for_samples
from f5lite.data.cuts import row_to_cut
from f5lite.data.manifest import ManifestRow

logger = logging.getLogger(__name__)

F5TTS_EXTRA_HINT = "pip install 'f5lite[f5tts]'"
"""How to install what this module needs."""
F5TTS_MIN_SECONDS = 0.3
"""Shortest utterance F5-TTS's dataset uses."""
F5TTS_MAX_SECONDS = 30.0
"""Longest utterance F5-TTS's dataset uses."""
_SLICE = 1024  # rows converted to Python objects at a time


def open_f5tts_table(directory: Path) -> Any:
    """The memory-mapped `datasets.Dataset` of an F5-TTS prepared directory, after checking its columns and durations.

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
    durations = read_durations(directory / "duration.json")
    if len(durations) != len(table):
        raise ValueError(
            f"{directory / 'duration.json'} lists {len(durations)} durations for {len(table)} rows in raw.arrow"
        )
    return table


class F5TTSCuts:
    """The rows of an F5-TTS prepared directory as cuts, in file order (an iterable Lhotse reads lazily).

    Raises:
        ImportError, ValueError: see `open_f5tts_table` (checked when the object is made).
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        open_f5tts_table(self.directory)

    def __iter__(self) -> Iterator[Cut]:
        table = open_f5tts_table(self.directory)
        durations = read_durations(self.directory / "duration.json")
        out_of_range = 0
        for start in range(0, len(table), _SLICE):
            rows = table[start : start + _SLICE]
            for offset, (audio_path, text) in enumerate(zip(rows["audio_path"], rows["text"], strict=True)):
                duration = durations[start + offset]
                if not F5TTS_MIN_SECONDS <= duration <= F5TTS_MAX_SECONDS:
                    out_of_range += 1
                    continue
                row = ManifestRow(
                    audio_path=self.directory / str(audio_path),
                    text=text if isinstance(text, str) else tuple(text),
                    duration=float(duration),
                    frames=frames_for_samples(round(duration * SAMPLE_RATE)),
                )
                yield row_to_cut(row, self.directory)
        if out_of_range:
            logger.warning(
                "%s: %d of %d rows are outside %s-%s s and are not used, as in F5-TTS",
                self.directory,
                out_of_range,
                len(durations),
                F5TTS_MIN_SECONDS,
                F5TTS_MAX_SECONDS,
            )


def read_durations(path: Path) -> list[float]:
    """The `duration.json` list of an F5-TTS directory.

    Raises:
        ValueError: missing or malformed.
    """
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ValueError(f"cannot read {path}: {err}") from err
    durations = data.get("duration") if isinstance(data, dict) else None
    if not isinstance(durations, list) or not all(isinstance(d, (int, float)) for d in durations):
        raise ValueError(f'{path} must hold {{"duration": [seconds, ...]}}')
    return [float(d) for d in durations]
