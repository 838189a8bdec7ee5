"""Griffe extension: a module docstring that is a command's `--help` text is shown as written, in a text block.

`f5lite-infer --help` and `f5lite-eval --help` print their module's docstring (`Usage:`, `Examples:`, `Keys ...`
laid out in columns). Read as Markdown it would lose its line breaks and its `[key=value ...]` would look like links,
so the API reference shows everything after its first line verbatim.
"""

from __future__ import annotations

from typing import Any

import griffe


class HelpText(griffe.Extension):
    """Wrap the body of each module docstring holding a `Usage:` line in a fenced text block."""

    def on_module_members(self, *, mod: griffe.Module, **kwargs: Any) -> None:
        """Rewrite the module's docstring once its members are known."""
        docstring = mod.docstring
        if docstring is None or "Usage:" not in docstring.value.splitlines():
            return
        summary, _, body = docstring.value.partition("\n")
        docstring.value = f"{summary}\n\n```text\n{body.strip()}\n```\n"
