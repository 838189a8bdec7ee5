"""The demo dataset shipped inside the package: a ready training directory, usable offline on a fresh clone.

It lives in `f5lite/demo_data/` (package data, so a wheel install has it too): about 200 short English utterances
in several synthetic voices, made by `scripts/make_demo_data.py` with espeak-ng from sentences written for this
project (see `ORIGIN.md` there). Configs point at it with the OmegaConf resolver `${f5lite.demo_dir:}`, which
resolves to its absolute path whatever the working directory; the `debug_tiny` recipe uses it.
"""

from __future__ import annotations

from pathlib import Path

from f5lite.data.manifest import MANIFEST_NAME

DEMO_RESOLVER = "f5lite.demo_dir"
"""Name of the OmegaConf resolver that gives the demo dataset's directory: `data.dir: ${f5lite.demo_dir:}`."""

_DEMO_DIR = Path(__file__).resolve().parent.parent / "demo_data"


def demo_dir() -> Path:
    """The demo dataset's directory (absolute).

    Returns:
        The directory holding `manifest.jsonl`, `vocab.txt`, `report.json` and the audio.

    Raises:
        FileNotFoundError: The package was installed without its demo data.
    """
    if not (_DEMO_DIR / MANIFEST_NAME).is_file():
        raise FileNotFoundError(f"f5lite's demo dataset is missing from {_DEMO_DIR}: reinstall f5lite")
    return _DEMO_DIR
