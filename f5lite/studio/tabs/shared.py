"""What the studio's tabs share: one-line errors in the page, number fields with their limits, audio, jobs as text.

The handlers of the tabs (the methods of each tab's `_Routes`) carry no docstrings on purpose: Gradio publishes a
handler's docstring as its route's description on the API page, and the studio's routes have none. Their parameter
names are the routes' parameter names (`gradio_client` may pass them by keyword), so they are part of the API too.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gradio as gr
import numpy as np
import soundfile as sf

from f5lite.studio import data, jobs
from f5lite.studio import limits as lim
from f5lite.studio.project import Project, StudioRoot


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def page_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn the library's refusals (ValueError, OSError, ImportError) into one line in the page."""

    @functools.wraps(fn)
    def call(*args: Any) -> Any:
        try:
            return fn(*args)
        except (ValueError, OSError, ImportError, RuntimeError) as err:
            raise gr.Error(_one_line(err), print_exception=False) from None

    return call


def page_errors_stream(fn: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
    """`page_errors` for a generator."""

    @functools.wraps(fn)
    def call(*args: Any) -> Iterator[Any]:
        try:
            yield from fn(*args)
        except (ValueError, OSError, ImportError, RuntimeError) as err:
            raise gr.Error(_one_line(err), print_exception=False) from None

    return call


def open_project(workspace: StudioRoot, name: str | None) -> Project:
    """The project picked at the top of the page.

    Raises:
        ValueError: none is picked, a name that is not valid, or no such project.
    """
    if not name:
        raise ValueError("no project: create or pick one at the top of the page")
    return workspace.project(name)


def model_path(p: Project, label: str | None) -> Path:
    """The project's model picked by its label in a model picker (an export or a checkpoint).

    Raises:
        ValueError: none is picked, or the project has no model of that label.
    """
    found = p.models()
    if not label or label not in found:
        raise ValueError("no model picked: export one, train one, or pick one of the project's models")
    return found[label]


def bounds(limit: lim.Limit) -> tuple[float, float]:
    """A limit's range, as a slider's `minimum, maximum`."""
    return limit.low, limit.high


def number(limit: lim.Limit, label: str, value: float) -> gr.Number:
    """A number field with the limit's range (whole numbers for an integer limit)."""
    precision = 0 if limit.integer else None
    return gr.Number(label=label, value=value, minimum=limit.low, maximum=limit.high, precision=precision)


def audio_of(path: Path) -> tuple[int, np.ndarray]:
    """An audio file as the page's `(rate, int16 samples)`."""
    # Audio goes to the page as samples, not as a path: for a path Gradio probes the file with ffprobe, which the
    # studio does not need otherwise.
    wave, rate = sf.read(str(path), dtype="int16")
    return rate, wave


def job_text(folder: Path, what: str) -> str:
    """A job's state (and its progress while it runs), then the last lines of its log, as Markdown."""
    state = jobs.state(folder)
    if state.state == "none":
        return f"{what}: not started"
    log = jobs.log_tail(folder, 12)
    done = data.progress(log)
    head = f"{what}: **{state.state}**" + (f" ({done:.0%})" if done is not None and state.running else "")
    if state.rc not in (None, 0):
        head += f", exit status {state.rc}"
    return f"{head}\n\n```\n{log}\n```" if log else head
