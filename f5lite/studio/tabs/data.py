"""The Data tab: raw recordings to a dataset (`f5lite.studio.data`), or a dataset prepared elsewhere.

Its routes: `add_recordings`, `transcribe` (a job), `link_dataset`, proofreading (`clips`, `open_clip`, `set_text`,
`drop_clip`), `check_vocab` against the model to fine-tune, and `prepare` (a job). The page polls the two jobs
(`data_status`) and stops them (`stop_job`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
import numpy as np
import pandas as pd

from f5lite.studio import data, jobs
from f5lite.studio import limits as lim
from f5lite.studio.project import StudioRoot
from f5lite.studio.tabs.shared import audio_of, job_text, number, open_project, page_errors


class _Routes:
    """The Data tab's handlers, on a workspace."""

    def __init__(self, workspace: StudioRoot) -> None:
        self.workspace = workspace

    @page_errors
    def add_recordings(self, name: str, files: list[str] | None) -> str:
        written = data.add_recordings(open_project(self.workspace, name), [Path(f) for f in files or []])
        return f"Added {len(written)} recording(s): {', '.join(written)}"

    @page_errors
    def start_transcribe(self, name: str, workers: float) -> str:
        p = open_project(self.workspace, name)
        data.start_transcribe(p, lim.WORKERS.whole(workers))
        return job_text(data.job_dir(p, "transcribe"), "Transcription")

    @page_errors
    def data_status(self, name: str | None) -> tuple[str, str, float | None]:
        if not name:
            return "", "", None
        p = open_project(self.workspace, name)
        tr = data.job_dir(p, "transcribe")
        done = data.progress(jobs.log_tail(tr, 3)) if jobs.state(tr).running else None
        return job_text(tr, "Transcription"), job_text(data.job_dir(p, "prepare"), "Preparation"), done

    @page_errors
    def clip_table(self, name: str) -> tuple[pd.DataFrame, Any]:
        found = data.clips(open_project(self.workspace, name))
        frame = pd.DataFrame(
            [(c.path, round(c.seconds, 2), c.text) for c in found], columns=["clip", "seconds", "text"]
        )
        names = [c.path for c in found]
        return frame, gr.update(choices=names, value=names[0] if names else None)

    @page_errors
    def open_clip(self, name: str, clip: str | None) -> tuple[tuple[int, np.ndarray] | None, str]:
        if not clip:
            return None, ""
        path = data.clip_path(open_project(self.workspace, name), clip)
        return audio_of(path), path.with_suffix(".txt").read_text(encoding="utf-8").strip()

    @page_errors
    def save_text(self, name: str, clip: str, text: str) -> str:
        data.set_text(open_project(self.workspace, name), clip, text)
        return f"Saved the text of {clip}."

    @page_errors
    def drop_clip(self, name: str, clip: str) -> str:
        data.drop(open_project(self.workspace, name), clip)
        return f"Dropped {clip}."

    @page_errors
    def check_vocab(self, name: str, base: str, tokenizer: str) -> str:
        p = open_project(self.workspace, name)
        if not base or not base.strip():
            raise ValueError("give the model to fine-tune (a model directory or a vocab.txt) to check against")
        found = p.models()
        check = data.vocab_check(p, found.get(base, Path(base.strip()).expanduser()), tokenizer)
        if not check.missing:
            return f"Every token of the transcripts is in {check.base}."
        rows = "\n".join(f"| `{m.token}` | {m.count} | {', '.join(m.examples)} |" for m in check.missing)
        return (
            f"{len(check.missing)} token(s) missing from {check.base}; the extended vocabulary is written "
            f"(prepare with it, below).\n\n| token | count | clips |\n|---|---|---|\n{rows}"
        )

    @page_errors
    def start_prepare(self, name: str, extend: bool, val_count: float) -> str:
        p = open_project(self.workspace, name)
        data.start_prepare(p, extend, lim.HELD_OUT.whole(val_count))
        return job_text(data.job_dir(p, "prepare"), "Preparation")

    @page_errors
    def link_dataset(self, name: str, folder: str) -> str:
        return f"Training will read the dataset at {data.link_dataset(open_project(self.workspace, name), folder)}."


@dataclass(frozen=True)
class DataTab:
    """What the page wires beyond the Data tab.

    Attributes:
        vocab_base: the picker of the model to check the vocabulary against (the project picker fills it).
        transcribe_info: the transcription job's state.
        prepare_info: the preparation job's state.
        transcribe_bar: the transcription's progress.
        stop_transcribe: the transcription's Stop button.
        stop_prepare: the preparation's Stop button.
        data_status: the handler that reads both jobs, as `(transcribe_info, prepare_info, transcribe_bar)`.
    """

    vocab_base: gr.Dropdown
    transcribe_info: gr.Markdown
    prepare_info: gr.Markdown
    transcribe_bar: gr.Slider
    stop_transcribe: gr.Button
    stop_prepare: gr.Button
    data_status: Callable[..., Any]


def build(workspace: StudioRoot, current: gr.Dropdown) -> DataTab:
    """Lay out the Data tab and wire its routes; call it inside the page's Blocks.

    Args:
        workspace: the studio's projects.
        current: the project picker.

    Returns:
        Its components and handler that the page wires beyond the tab.
    """
    routes = _Routes(workspace)
    with gr.Tab("Data", id="data"):
        with gr.Row():
            with gr.Column():
                uploads = gr.File(label="Raw recordings", file_count="multiple", type="filepath")
                add = gr.Button("Add recordings")
                workers = number(lim.WORKERS, "Transcription workers", 1)
                with gr.Row():
                    run_transcribe = gr.Button("Transcribe", variant="primary")
                    stop_transcribe = gr.Button("Stop", variant="stop", size="sm")
                transcribe_bar = gr.Slider(0, 1, label="Transcription progress", interactive=False)
                transcribe_info = gr.Markdown()
            with gr.Column():
                linked = gr.Textbox(label="…or a dataset prepared elsewhere (its folder)")
                link = gr.Button("Use this dataset")
                data_info = gr.Markdown()
        gr.Markdown("### Proofreading")
        load_clips = gr.Button("Load the clips")
        table = gr.Dataframe(headers=["clip", "seconds", "text"], interactive=False, wrap=True)
        with gr.Row():
            clip = gr.Dropdown(label="Clip", choices=[], allow_custom_value=True)
            clip_audio = gr.Audio(label="Listen", type="filepath", interactive=False)
        clip_text = gr.Textbox(label="Text")
        with gr.Row():
            keep_text = gr.Button("Save text")
            remove = gr.Button("Drop clip", variant="stop")
        gr.Markdown("### Vocabulary and preparation")
        with gr.Row():
            vocab_base = gr.Dropdown(
                label="Model to fine-tune (or type a model folder / vocab.txt)", choices=[], allow_custom_value=True
            )
            tokenizer = gr.Radio(["char", "pinyin"], value="char", label="Its tokens")
            run_vocab = gr.Button("Check the vocabulary")
        vocab_info = gr.Markdown()
        with gr.Row():
            extend = gr.Checkbox(label="Prepare with the checked vocabulary (for fine-tuning)", value=False)
            val_count = number(lim.HELD_OUT, "Held-out clips (validation and test set)", 2)
            run_prepare = gr.Button("Prepare the dataset", variant="primary")
            stop_prepare = gr.Button("Stop", variant="stop", size="sm")
        prepare_info = gr.Markdown()
        add.click(routes.add_recordings, [current, uploads], [data_info], api_name="add_recordings")
        run_transcribe.click(routes.start_transcribe, [current, workers], [transcribe_info], api_name="transcribe")
        link.click(routes.link_dataset, [current, linked], [data_info], api_name="link_dataset")
        load_clips.click(routes.clip_table, [current], [table, clip], api_name="clips")
        clip.change(routes.open_clip, [current, clip], [clip_audio, clip_text], api_name="open_clip")
        keep_text.click(routes.save_text, [current, clip, clip_text], [data_info], api_name="set_text")
        remove.click(routes.drop_clip, [current, clip], [data_info], api_name="drop_clip")
        run_vocab.click(routes.check_vocab, [current, vocab_base, tokenizer], [vocab_info], api_name="check_vocab")
        run_prepare.click(routes.start_prepare, [current, extend, val_count], [prepare_info], api_name="prepare")
    return DataTab(
        vocab_base, transcribe_info, prepare_info, transcribe_bar, stop_transcribe, stop_prepare, routes.data_status
    )
