"""The studio's page (Gradio Blocks): a project picker and four tabs, Speak, Data, Train, Evaluate & export.

Each tab is a module of `f5lite.studio.tabs` that lays it out and wires its buttons; `build` makes what the tabs share
(the workspace, the settings, the loaded models), the project picker, and the wiring from the picker and the running
jobs to the tabs. Each button calls one function of `f5lite.studio.{speak,data,training,evaluate}` under a named API
route (`api_name`), so `gradio_client` drives the page as a user does, and so may anyone who reaches the port: every
value a handler gets is checked there (numbers against `f5lite.studio.limits`, names, paths and overrides by the
library), whatever the page's widgets allow. Whatever a user gets wrong (no audio, an empty text, a name with a
path in it, a number out of range, a refused override, a dataset without speech, a second training) comes back as
one line in the page (`gr.Error`), never as a traceback or a spinner that does not stop. Long jobs run as
processes; the page polls their folders (`gr.Timer`), so a reload shows them as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gradio as gr

from f5lite.studio import data, jobs, speak, training
from f5lite.studio.project import StudioRoot
from f5lite.studio.settings import StudioSettings
from f5lite.studio.tabs import data as data_tab
from f5lite.studio.tabs import evaluate as evaluate_tab
from f5lite.studio.tabs import speak as speak_tab
from f5lite.studio.tabs import train as train_tab
from f5lite.studio.tabs.shared import open_project, page_errors

POLL_SECONDS = 2.0
"""How often the page reads the running jobs' folders."""


class _Routes:
    """The handlers of the project picker and of the jobs' Stop buttons, on a workspace."""

    def __init__(self, workspace: StudioRoot) -> None:
        self.workspace = workspace

    @page_errors
    def create_project(self, name: str) -> tuple[Any, str]:
        made = self.workspace.project(name, create=True)
        return gr.update(choices=self.workspace.projects(), value=made.name), f"Project **{made.name}** is ready."

    def list_projects(self) -> list[str]:
        return self.workspace.projects()

    @page_errors
    def project_picked(self, name: str | None) -> tuple[Any, ...]:
        p = open_project(self.workspace, name) if name else None
        found = list(p.models()) if p else []
        first = found[0] if found else None
        runs = p.runs() if p else []
        return (
            gr.update(choices=found, value=first),
            gr.update(choices=[speak_tab.PAGE_VOICE, *(p.voice_names() if p else [])], value=speak_tab.PAGE_VOICE),
            gr.update(choices=found), gr.update(choices=found), gr.update(choices=found, value=first),
            gr.update(choices=runs, value=(training.running_run(p) if p else None) or (runs[-1] if runs else None)),
            gr.update(choices=runs, value=runs[-1] if runs else None),
        )  # fmt: skip

    @page_errors
    def stop_job(self, name: str, kind: str) -> str:
        if kind not in ("transcribe", "prepare", "eval", "export"):
            raise ValueError(f"there is no {kind!r} job: choose transcribe, prepare, eval or export")
        stopped = jobs.stop(data.job_dir(open_project(self.workspace, name), kind))
        return f"Stopping the {kind} job." if stopped else f"No {kind} job is running."


def _bind_kind(fn: Callable[[str, str], str], kind: str) -> Callable[[str], str]:
    """`fn(project, kind)` as a function of the project alone (one Stop button per kind of job)."""

    def call(name: str) -> str:
        return fn(name, kind)

    return call


def _picker(workspace: StudioRoot, routes: _Routes) -> tuple[gr.Dropdown, gr.Markdown]:
    """The page's title and project picker (with its routes); returns the picker and the line under it."""
    gr.Markdown("# f5lite studio")
    with gr.Row():
        current = gr.Dropdown(
            label="Project", choices=workspace.projects(), value=None, scale=2, allow_custom_value=True
        )
        new_name = gr.Textbox(label="New project", placeholder="my_voice", scale=2)
        create = gr.Button("Create project", scale=1)
    message = gr.Markdown()
    create.click(routes.create_project, [new_name], [current, message], api_name="create_project")
    gr.Button(visible=False).click(routes.list_projects, None, gr.JSON(visible=False), api_name="list_projects")
    return current, message


def _remember(page: gr.Blocks, workspace: StudioRoot, current: gr.Dropdown) -> None:
    """Keep the picked project in the browser, and pick it again when the page loads."""
    # The project survives a reload (kept in the browser), and with it the view of its running jobs.
    remembered = gr.BrowserState(None, storage_key="f5lite-studio-project")
    current.change(lambda name: name, [current], [remembered])
    page.load(
        lambda name: gr.update(choices=workspace.projects(), value=name if name in workspace.projects() else None),
        [remembered],
        [current],
    )


def _jobs(
    routes: _Routes,
    current: gr.Dropdown,
    message: gr.Markdown,
    prepared: data_tab.DataTab,
    trained: train_tab.TrainTab,
    evaluated: evaluate_tab.EvaluateTab,
) -> None:
    """Poll the running jobs into the tabs, and wire the Stop buttons and the jobs' routes."""
    data_outputs = [prepared.transcribe_info, prepared.prepare_info, prepared.transcribe_bar]
    timer = gr.Timer(POLL_SECONDS)
    timer.tick(prepared.data_status, [current], data_outputs, show_progress="hidden")
    timer.tick(trained.run_status, [current, trained.run], trained.run_outputs, show_progress="hidden")
    timer.tick(evaluated.jobs_status, [current], [evaluated.eval_info, evaluated.export_info], show_progress="hidden")
    job_kind = gr.Textbox(visible=False)
    stop_job = routes.stop_job
    gr.Button(visible=False).click(stop_job, [current, job_kind], [message], api_name="stop_job")
    for button, job, shown in (
        (prepared.stop_transcribe, "transcribe", prepared.transcribe_info),
        (prepared.stop_prepare, "prepare", prepared.prepare_info),
        (evaluated.stop_eval, "eval", evaluated.eval_info),
        (evaluated.stop_export, "export", evaluated.export_info),
    ):
        button.click(_bind_kind(stop_job, job), [current], [shown], api_visibility="private")
    gr.Button(visible=False).click(prepared.data_status, [current], data_outputs, api_name="data_status")


def build(workspace: StudioRoot, settings: StudioSettings) -> gr.Blocks:
    """The page for a workspace.

    Args:
        workspace: the studio's projects.
        settings: how the studio runs models.

    Returns:
        The page, to be queued and launched.
    """
    models = speak.Models(settings.vocoder, settings.vocoder_source, settings.device)
    routes = _Routes(workspace)
    with gr.Blocks(title="f5lite studio", analytics_enabled=False) as page:
        current, message = _picker(workspace, routes)
        said = speak_tab.build(workspace, models, settings, current)
        prepared = data_tab.build(workspace, current)
        trained = train_tab.build(workspace, settings, current)
        evaluated = evaluate_tab.build(workspace, settings, current)
        current.change(
            routes.project_picked,
            [current],
            [
                said.model,
                said.voice,
                prepared.vocab_base,
                trained.base,
                evaluated.eval_model,
                trained.run,
                evaluated.export_run,
            ],
        )
        _remember(page, workspace, current)
        _jobs(routes, current, message, prepared, trained, evaluated)
    return page
