"""The Train tab: a run's plan (recipe, scratch / fine-tune / LoRA, numbers, more overrides), and the run as it goes.

Its routes: `propose` (settings for this machine), `start_training`, `stop_training`, `resume_training`, `list_runs`
and `run_status` (state, loss curves, newest sample and log of a run), which the page also polls.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr
import numpy as np
import pandas as pd

from f5lite.studio import limits as lim
from f5lite.studio import overrides, training
from f5lite.studio.machine import propose
from f5lite.studio.project import Project, StudioRoot
from f5lite.studio.settings import StudioSettings
from f5lite.studio.tabs.shared import audio_of, number, open_project, page_errors

CURVES = ("loss", "validation loss")
"""The Train tab's plotted series."""


class _Routes:
    """The Train tab's handlers, on a workspace; runs sample with the studio's vocoder."""

    def __init__(self, workspace: StudioRoot, settings: StudioSettings) -> None:
        self.workspace = workspace
        self.settings = settings

    @page_errors
    def propose_settings(self, recipe: str) -> tuple[float, str, str]:
        cfg = training.compose([f"+recipe={training.check_recipe(recipe)}"])
        proposal = propose(cfg.data.frames_per_gpu)
        return proposal.frames_per_gpu, proposal.precision, proposal.reason

    def plan_of(
        self, p: Project,
        recipe: str, mode: str, base: str, base_vocab: str, updates: float, lr: float | None, frames: float | None,
        precision: str, rank: float, every: float, extra: str,
    ) -> training.Plan:  # fmt: skip
        found = p.models()
        base_path = str(found.get(base, base)) if base else None
        return training.Plan(
            recipe=recipe, mode=mode, base=base_path, base_vocab=(base_vocab or "").strip() or None,
            max_updates=lim.UPDATES.whole(updates), lr=lim.LEARNING_RATE.check(lr or 0) or None,
            frames_per_gpu=lim.FRAMES.whole(frames or 0) or None, precision=precision,
            lora_rank=lim.LORA_RANK.whole(rank), every=lim.EVERY.whole(every), vocoder=self.settings.vocoder,
            vocoder_source=self.settings.vocoder_source, extra=tuple((extra or "").split()),
        )  # fmt: skip

    @page_errors
    def start_training(self, name: str, run: str, *plan: Any) -> tuple[Any, str]:
        p = open_project(self.workspace, name)
        training.start(p, run, self.plan_of(p, *plan))
        return gr.update(choices=p.runs(), value=run), f"Started run **{run}**."

    @page_errors
    def stop_training(self, name: str, run: str) -> str:
        stopped = training.stop(open_project(self.workspace, name), run or "")
        return "Stopping: the trainer saves a checkpoint, then exits." if stopped else "The run is not training."

    @page_errors
    def resume_training(self, name: str, run: str) -> str:
        training.resume(open_project(self.workspace, name), run or "")
        return f"Resumed run **{run}**."

    @page_errors
    def run_choices(self, name: str | None) -> Any:
        runs = open_project(self.workspace, name).runs() if name else []
        busy = training.running_run(open_project(self.workspace, name)) if name else None
        return gr.update(choices=runs, value=busy or (runs[-1] if runs else None))

    @page_errors
    def run_status(
        self, name: str | None, run: str | None
    ) -> tuple[str, pd.DataFrame, tuple[int, np.ndarray] | None, str]:
        # Gradio's plot fixes its series and their types from the first frame it gets: every frame names both curves
        # with a row of NaN (sent as null, not drawn), so an empty first frame does not leave the lines without colour.
        named = [(math.nan, math.nan, name) for name in CURVES]
        empty = pd.DataFrame(named, columns=["update", "value", "curve"])
        if not name or not run:
            return "No run picked.", empty, None, ""
        view = training.view(training.run_dir(open_project(self.workspace, name), run))
        rows = [(u, v, CURVES[0]) for u, v in view.updates] + [(u, v, CURVES[1]) for u, v in view.val]
        curve = pd.DataFrame(named + rows, columns=["update", "value", "curve"])
        head = f"Run **{run}**: **{view.state}**, update {view.last_update}"
        if view.checkpoints:
            head += f"; checkpoints at {', '.join(map(str, view.checkpoints))}"
        if view.exported:
            head += "; exported (runs/" + run + "/export)"
        if view.state == "failed":
            head += f"; it failed (exit status {view.rc}), the log's last lines are below"
        sample = audio_of(view.samples[-1]) if view.samples else None
        return head, curve, sample, view.log


@dataclass(frozen=True)
class TrainTab:
    """What the page wires beyond the Train tab.

    Attributes:
        base: the base model's picker (the project picker fills it).
        run: the run picker (the project picker fills it).
        run_outputs: what `run_status` fills: the run's state, its loss curves, its newest sample and its log.
        run_status: the handler that reads the picked run, from `[project picker, run]` to `run_outputs`.
    """

    base: gr.Dropdown
    run: gr.Dropdown
    run_outputs: list[Any]
    run_status: Callable[..., Any]


def build(workspace: StudioRoot, settings: StudioSettings, current: gr.Dropdown) -> TrainTab:
    """Lay out the Train tab and wire its routes; call it inside the page's Blocks.

    Args:
        workspace: the studio's projects.
        settings: the vocoder that a run's samples use.
        current: the project picker.

    Returns:
        Its components and handler that the page wires beyond the tab.
    """
    routes = _Routes(workspace, settings)
    run_status = routes.run_status  # one handler for the picker and the page's poll, as one concurrency group
    with gr.Tab("Train", id="train"):
        with gr.Row():
            with gr.Column():
                run_name = gr.Textbox(label="Run name", value="run1")
                names = training.recipes()
                recipe = gr.Dropdown(label="Recipe", choices=names, value="demo" if "demo" in names else names[0])
                mode = gr.Radio(list(training.MODES), value="scratch", label="Training")
                base = gr.Dropdown(label="Base model (fine-tuning)", choices=[], allow_custom_value=True)
                base_vocab = gr.Textbox(label="Its vocab.txt (only for an F5-TTS checkpoint file)")
                updates = number(lim.UPDATES, "Updates", 500)
                lr = number(lim.LEARNING_RATE, "Learning rate (0: the recipe's)", 0)
                with gr.Row():
                    frames = number(lim.FRAMES, "Frames per batch (0: the recipe's)", 0)
                    precision = gr.Dropdown(["auto", "no", "bf16", "fp16"], value="no", label="Precision")
                suggest = gr.Button("Propose for this machine", size="sm")
                machine_info = gr.Markdown()
                rank = number(lim.LORA_RANK, "LoRA rank", 16)
                every = number(lim.EVERY, "Checkpoint, validation and samples every (updates)", 100)
                extra = gr.Textbox(label="More overrides (key=value ...)", info=f"settings of: {overrides.SECTIONS}")
                with gr.Row():
                    start_button = gr.Button("Start", variant="primary", elem_id="train-start")
                    stop_button = gr.Button("Stop", variant="stop", elem_id="train-stop")
                    resume_button = gr.Button("Resume", elem_id="train-resume")
            with gr.Column():
                run = gr.Dropdown(label="Run", choices=[], allow_custom_value=True)
                run_info = gr.Markdown(elem_id="run-info")
                curve = gr.LinePlot(
                    x="update", y="value", color="curve", label="Loss", elem_id="loss-curve", height=360
                )
                sample = gr.Audio(label="Newest training sample", type="filepath", interactive=False)
                log = gr.Textbox(label="Log", lines=12, max_lines=12, autoscroll=True, elem_id="train-log")
                train_info = gr.Markdown()
        plan_inputs = [recipe, mode, base, base_vocab, updates, lr, frames, precision, rank, every, extra]
        suggest.click(routes.propose_settings, [recipe], [frames, precision, machine_info], api_name="propose")
        start_button.click(
            routes.start_training, [current, run_name, *plan_inputs], [run, train_info], api_name="start_training"
        )
        stop_button.click(routes.stop_training, [current, run], [train_info], api_name="stop_training")
        resume_button.click(routes.resume_training, [current, run], [train_info], api_name="resume_training")
        gr.Button(visible=False).click(routes.run_choices, [current], [run], api_name="list_runs")
        run_outputs = [run_info, curve, sample, log]
        run.change(run_status, [current, run], run_outputs, api_name="run_status")
    return TrainTab(base, run, run_outputs, run_status)
