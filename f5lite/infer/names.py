"""The name rule of voices (and of whatever else a user names that becomes one path component).

A name is letters, digits, `_`, `-` and `.` (not first), at most 64 characters: one path component that cannot
reach outside its folder (`..`, `/`, a leading dot and the empty name are refused). `f5lite-serve` applies it to the
voices a client names and uploads, the studio to its projects, voices, runs and exports, so that a studio voice
folder is a server voice folder.
"""

from __future__ import annotations

import re

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""What a name may be."""


def check_name(name: str, what: str = "voice") -> str:
    """`name` if it is a valid name (see the module docstring).

    Args:
        name: the name as given (not stripped: a caller that accepts typed text strips it first).
        what: what it names ("voice", "project", ...), for the message.

    Returns:
        `name`.

    Raises:
        ValueError: one line naming the rule.
    """
    if not NAME.fullmatch(name):
        raise ValueError(
            f"{what} name {name!r} is not valid: use 1 to 64 letters, digits, '_', '-' or '.', starting with a "
            "letter or digit"
        )
    return name
