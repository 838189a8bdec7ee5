"""Reading the JSON config of a versioned f5lite directory (an export, a duration predictor), with one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_versioned_json(
    root: Path, name: str, fmt: str, version: int, what: str, error: type[ValueError] = ValueError
) -> dict[str, Any]:
    """Read `root/name`, a JSON object whose `format` is `fmt` and whose `format_version` is `version`.

    Args:
        root: the directory.
        name: the config file's name in it.
        fmt: the expected `format`.
        version: the `format_version` this f5lite reads.
        what: how messages name the directory, e.g. "an f5lite export".
        error: the `ValueError` subclass to raise.

    Returns:
        The parsed object.

    Raises:
        error: `root` is not a directory, the file cannot be read or is not JSON, or its format or version differ.
    """
    if not root.is_dir():
        raise error(f"{root} is not a directory")
    path = root / name
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise error(f"{root} is not {what}: cannot read {name} ({err.strerror})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise error(f"{path} is not valid JSON: {err}") from None
    if not isinstance(config, dict) or config.get("format") != fmt:
        raise error(f"{path} is not {what} config (its format is not {fmt!r})")
    found = config.get("format_version")
    if type(found) is not int or found != version:  # True == 1 in Python: a bool is no version
        raise error(f"{path} has format_version {found!r}; this f5lite reads version {version}")
    return config
