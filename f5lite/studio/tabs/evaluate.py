"""The Evaluate & export tab: an evaluation of a project's model, the export of a run, and their archives.

Its routes: `evaluate` and `export` (jobs, `f5lite.studio.evaluate`), `show_evaluation` (its summary and report),
`download` (an export's or an evaluation's archive) and `jobs_status`, which the page also polls.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from f5lite.studio import data, evaluate
from f5lite.studio import limits as lim
from f5lite.studio.project import StudioRoot
from f5lite.studio.settings import StudioSettings
from f5lite.studio.tabs.shared import bounds, job_text, model_path, open_project, page_errors


class _Routes:
    """The Evaluate & export tab's handlers, on a workspace; evaluations run with the studio's vocoder and device."""

    def __init__(self, workspace: StudioRoot, settings: StudioSettings) -> None:
        self.workspace = workspace
        self.settings = settings

    @page_errors
    def start_eval(self, name: str, label: str, eval_name: str, steps: float) -> str:
        p = open_project(self.workspace, name)
        evaluate.start_eval(
            p,
            model_path(p, label),
            eval_name,
            lim.EVAL_STEPS.whole(steps),
            self.settings.vocoder,
            self.settings.vocoder_source,
            self.settings.device,
        )
        return job_text(data.job_dir(p, "eval"), "Evaluation")

    @page_errors
    def show_eval(self, name: str, eval_name: str) -> tuple[Any, str]:
        p = open_project(self.workspace, name)
        summary = evaluate.summary(p, eval_name)
        report = evaluate.report(p, eval_name)
        if report is None:
            return summary, ""
        page = html.escape(report.read_text(encoding="utf-8"), quote=True)
        return (
            summary,
            f'<iframe class="f5lite-report" srcdoc="{page}" style="width:100%;height:720px;border:0"></iframe>',
        )

    @page_errors
    def start_export(self, name: str, run: str, export_name: str, prune: bool) -> str:
        p = open_project(self.workspace, name)
        evaluate.start_export(p, run or "", export_name, prune)
        return job_text(data.job_dir(p, "export"), "Export")

    @page_errors
    def jobs_status(self, name: str | None) -> tuple[str, str]:
        if not name:
            return "", ""
        p = open_project(self.workspace, name)
        return job_text(data.job_dir(p, "eval"), "Evaluation"), job_text(data.job_dir(p, "export"), "Export")

    @page_errors
    def download(self, name: str, kind: str, item: str) -> str:
        return str(evaluate.archive(open_project(self.workspace, name), kind, item))


@dataclass(frozen=True)
class EvaluateTab:
    """What the page wires beyond the Evaluate & export tab.

    Attributes:
        eval_model: the picker of the model to evaluate (the project picker fills it).
        export_run: the picker of the run to export (the project picker fills it).
        eval_info: the evaluation job's state.
        export_info: the export job's state.
        stop_eval: the evaluation's Stop button.
        stop_export: the export's Stop button.
        jobs_status: the handler that reads both jobs, from the project picker to `(eval_info, export_info)`.
    """

    eval_model: gr.Dropdown
    export_run: gr.Dropdown
    eval_info: gr.Markdown
    export_info: gr.Markdown
    stop_eval: gr.Button
    stop_export: gr.Button
    jobs_status: Callable[..., Any]


def build(workspace: StudioRoot, settings: StudioSettings, current: gr.Dropdown) -> EvaluateTab:
    """Lay out the Evaluate & export tab and wire its routes; call it inside the page's Blocks.

    Args:
        workspace: the studio's projects.
        settings: the vocoder and device that evaluations use.
        current: the project picker.

    Returns:
        Its components and handler that the page wires beyond the tab.
    """
    routes = _Routes(workspace, settings)
    jobs_status = routes.jobs_status  # one handler for its route and the page's poll, as one concurrency group
    with gr.Tab("Evaluate & export", id="evaluate"):
        with gr.Row():
            with gr.Column():
                eval_model = gr.Dropdown(label="Model", choices=[], allow_custom_value=True)
                eval_name = gr.Textbox(label="Evaluation name", value="eval1")
                eval_steps = gr.Slider(*bounds(lim.EVAL_STEPS), value=16, step=1, label="Steps")
                with gr.Row():
                    run_eval = gr.Button("Evaluate", variant="primary")
                    stop_eval = gr.Button("Stop", variant="stop", size="sm")
                eval_info = gr.Markdown()
                show = gr.Button("Show the evaluation")
                eval_summary = gr.JSON(label="Summary")
            with gr.Column():
                export_run = gr.Dropdown(label="Run", choices=[], allow_custom_value=True)
                export_name = gr.Textbox(label="Export name", value="voice1")
                prune = gr.Checkbox(label="Prune: inference weights only, F5-TTS layout, fp16", value=False)
                with gr.Row():
                    run_export = gr.Button("Export", variant="primary")
                    stop_export = gr.Button("Stop", variant="stop", size="sm")
                export_info = gr.Markdown()
                kind = gr.Radio(["exports", "evals"], value="exports", label="Download")
                item = gr.Textbox(label="Name")
                fetch = gr.Button("Download")
                archive = gr.File(label="Archive")
        report = gr.HTML()
        run_eval.click(
            routes.start_eval, [current, eval_model, eval_name, eval_steps], [eval_info], api_name="evaluate"
        )
        show.click(routes.show_eval, [current, eval_name], [eval_summary, report], api_name="show_evaluation")
        run_export.click(
            routes.start_export, [current, export_run, export_name, prune], [export_info], api_name="export"
        )
        fetch.click(routes.download, [current, kind, item], [archive], api_name="download")
        gr.Button(visible=False).click(jobs_status, [current], [eval_info, export_info], api_name="jobs_status")
    return EvaluateTab(eval_model, export_run, eval_info, export_info, stop_eval, stop_export, jobs_status)
