"""The names a user types (project, voice, run, export, evaluation): checked so that no path can leave its folder.

A name follows f5lite's name rule (`f5lite.infer.names`, the one `f5lite-serve` applies to voice names, so a studio
voice folder is a server voice folder): one path component of letters, digits, `_`, `-` and `.` (not first), at
most 64 characters. `..`, `/`, a leading dot (hidden files, `.`), an empty name and anything else are refused with
one line naming the rule. What the user typed is stripped first.
"""

from __future__ import annotations

from pathlib import Path

from f5lite.infer import names


def typed_name(name: str, what: str) -> str:
    """`name`, stripped, if it is a valid name.

    Args:
        name: what the user typed.
        what: what it names ("project", "voice", ...), for the message.

    Returns:
        The name without surrounding whitespace.

    Raises:
        ValueError: one line naming the rule.
    """
    return names.check_name((name or "").strip(), what)


def inside(folder: Path, relative: str, what: str) -> Path:
    """`folder / relative`, if it stays inside `folder` once resolved (links followed).

    For paths the page sends back (a clip of the proofreading table), which are relative to a project folder.

    Raises:
        ValueError: the path leaves the folder.
    """
    base = folder.resolve()
    path = (base / relative).resolve()
    if path != base and base not in path.parents:
        raise ValueError(f"{what} {relative!r} is outside {folder}")
    return path
