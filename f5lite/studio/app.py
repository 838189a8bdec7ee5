"""The studio's page (Gradio Blocks): a project picker and four tabs, Speak, Data, Train, Evaluate & export.

Each button calls one function of `f5lite.studio.{speak,data,training,evaluate}` under a named API route
(`api_name`), so `gradio_client` drives the page as a user does, and so may anyone who reaches the port: every
value a handler gets is checked there (numbers against `f5lite.studio.limits`, names, paths and overrides by the
library), whatever the page's widgets allow. Whatever a user gets wrong (no audio, an empty text, a name with a
path in it, a number out of range, a refused override, a dataset without speech, a second training) comes back as
one line in the page (`gr.Error`), never as a traceback or a spinner that does not stop. Long jobs run as
processes; the page polls their folders (`gr.Timer`), so a reload shows them as they are.
"""

from __future__ import annotations

import functools
import html
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
import numpy as np
import pandas as pd
import soundfile as sf
import torch

from f5lite.audio import SAMPLE_RATE
from f5lite.sampling import SamplerOptions
from f5lite.studio import data, evaluate, jobs, overrides, speak, training
from f5lite.studio import limits as lim
from f5lite.studio.machine import propose
from f5lite.studio.names import check_name
from f5lite.studio.project import Project, Workspace

POLL_SECONDS = 2.0
"""How often the page reads the running jobs' folders."""
PAGE_VOICE = "(the clip above)"
"""The voice picker's entry for the reference uploaded or recorded on the page."""
CURVES = ("loss", "validation loss")
"""The Train tab's plotted series."""


@dataclass(frozen=True)
class StudioSettings:
    """How the studio runs models.

    Attributes:
        vocoder: `vocos` or `griffin_lim`, for Speak, training samples' defaults and evaluations.
        vocoder_source: Vocos weights (a local directory or a hub id); None: the default.
        device: `auto`, `cpu` or `cuda`.
    """

    vocoder: str = "vocos"
    vocoder_source: str | None = None
    device: str = "auto"


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def _page_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn the library's refusals (ValueError, OSError, ImportError) into one line in the page."""

    @functools.wraps(fn)
    def call(*args: Any) -> Any:
        try:
            return fn(*args)
        except (ValueError, OSError, ImportError, RuntimeError) as err:
            raise gr.Error(_one_line(err), print_exception=False) from None

    return call


def _page_errors_stream(fn: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
    """`_page_errors` for a generator."""

    @functools.wraps(fn)
    def call(*args: Any) -> Iterator[Any]:
        try:
            yield from fn(*args)
        except (ValueError, OSError, ImportError, RuntimeError) as err:
            raise gr.Error(_one_line(err), print_exception=False) from None

    return call


def _bind_kind(fn: Callable[[str, str], str], kind: str) -> Callable[[str], str]:
    """`fn(project, kind)` as a function of the project alone (one Stop button per kind of job)."""

    def call(name: str) -> str:
        return fn(name, kind)

    return call


def _pcm16(wave: torch.Tensor) -> np.ndarray:
    # int16, so that Gradio does not scale every streamed piece by its own peak.
    return (wave.clamp(-1, 1) * 32767).round().to(torch.int16).numpy()


def _seed(value: float | None) -> int | None:
    """The page's seed: a negative or empty one draws a new seed."""
    seed = lim.SEED.whole(-1 if value is None else value)
    return None if seed < 0 else seed


def _bounds(limit: lim.Limit) -> tuple[float, float]:
    return limit.low, limit.high


def _number(limit: lim.Limit, label: str, value: float) -> gr.Number:
    """A number field with the limit's range (whole numbers for an integer limit)."""
    precision = 0 if limit.integer else None
    return gr.Number(label=label, value=value, minimum=limit.low, maximum=limit.high, precision=precision)


def _audio_of(path: Path) -> tuple[int, np.ndarray]:
    # Audio goes to the page as samples, not as a path: for a path Gradio probes the file with ffprobe, which the
    # studio does not need otherwise.
    wave, rate = sf.read(str(path), dtype="int16")
    return rate, wave


def build(workspace: Workspace, settings: StudioSettings) -> gr.Blocks:
    """The page for a workspace."""
    models = speak.Models(settings.vocoder, settings.vocoder_source, settings.device)

    def project(name: str | None) -> Project:
        if not name:
            raise ValueError("no project: create or pick one at the top of the page")
        return workspace.project(name)

    # ---- projects ----------------------------------------------------------------------------------------------
    @_page_errors
    def create_project(name: str) -> tuple[Any, str]:
        made = workspace.project(name, create=True)
        return gr.update(choices=workspace.projects(), value=made.name), f"Project **{made.name}** is ready."

    def list_projects() -> list[str]:
        return workspace.projects()

    @_page_errors
    def model_choices(name: str | None) -> Any:
        found = list(project(name).models()) if name else []
        return gr.update(choices=found, value=found[0] if found else None)

    # ---- Speak -------------------------------------------------------------------------------------------------
    def model_path(p: Project, label: str | None) -> Path:
        found = p.models()
        if not label or label not in found:
            raise ValueError("no model picked: export one, train one, or pick one of the project's models")
        return found[label]

    @_page_errors_stream
    def say(
        name: str, label: str, ref_audio: str | None, ref_text: str, voice: str, script: str, steps: float,
        cfg: float, cfg_zero: bool, speed: float, seed: float | None, seconds: float | None,
    ) -> Iterator[tuple[Any, Any, Any, str]]:  # fmt: skip
        p = project(name)
        options = SamplerOptions(
            steps=lim.STEPS.whole(steps), cfg_strength=lim.GUIDANCE.check(cfg), cfg_zero_star=bool(cfg_zero),
            speed=lim.SPEED.check(speed),
        )  # fmt: skip
        fixed, drawn = lim.SECONDS.check(seconds or 0) or None, _seed(seed)
        stretches = speak.parse_script(script or "")
        page = None
        if voice and voice != PAGE_VOICE:
            page = speak.project_voice(p, voice)
        needs_page = any(v is None for v, _ in stretches)
        if needs_page and page is None:
            page = speak.load_reference(ref_audio, ref_text)
        refs = []
        for v, text in stretches:
            reference = page if v is None else speak.project_voice(p, v)
            assert reference is not None  # the page's reference is loaded above when a stretch needs it
            refs.append((reference, text))
        started = time.monotonic()
        pieces = []
        with models.lock:
            synthesizer = models.get(model_path(p, label))
            for piece in speak.speak(synthesizer, refs, options, drawn, fixed):
                pieces.append(piece)
                yield (SAMPLE_RATE, _pcm16(piece)), None, None, f"{len(pieces)} piece(s) made…"
        wave = torch.cat(pieces)
        out, image = speak.save_speech(p, wave, synthesizer.mel_type)
        note = f"{wave.shape[0] / SAMPLE_RATE:.2f} s of speech in {time.monotonic() - started:.1f} s, saved as speech/{out.name}"
        if page is not None and not (ref_text or "").strip() and needs_page:
            note += f"; the reference was transcribed as: “{page.text}”"
        yield None, (SAMPLE_RATE, _pcm16(wave)), str(image), note

    @_page_errors
    def transcribe_reference(ref_audio: str | None) -> str:
        return speak.load_reference(ref_audio, None).text

    @_page_errors
    def save_voice(name: str, voice_name: str, ref_audio: str | None, ref_text: str) -> tuple[Any, str]:
        p = project(name)
        voice_name = check_name(voice_name, "voice")  # before the clip, so a bad name is the message
        path = speak.save_voice(p, voice_name, speak.load_reference(ref_audio, ref_text))
        choices = [PAGE_VOICE, *p.voice_names()]
        return gr.update(choices=choices, value=path.stem), f"Saved voice **{path.stem}** (use it as {{{path.stem}}})."

    @_page_errors
    def voice_choices(name: str | None) -> Any:
        return gr.update(choices=[PAGE_VOICE, *(project(name).voice_names() if name else [])], value=PAGE_VOICE)

    # ---- Data --------------------------------------------------------------------------------------------------
    @_page_errors
    def add_recordings(name: str, files: list[str] | None) -> str:
        written = data.add_recordings(project(name), [Path(f) for f in files or []])
        return f"Added {len(written)} recording(s): {', '.join(written)}"

    def job_text(folder: Path, what: str) -> str:
        state = jobs.state(folder)
        if state.state == "none":
            return f"{what}: not started"
        log = jobs.log_tail(folder, 12)
        done = data.progress(log)
        head = f"{what}: **{state.state}**" + (f" ({done:.0%})" if done is not None and state.running else "")
        if state.rc not in (None, 0):
            head += f", exit status {state.rc}"
        return f"{head}\n\n```\n{log}\n```" if log else head

    @_page_errors
    def start_transcribe(name: str, workers: float) -> str:
        p = project(name)
        data.start_transcribe(p, lim.WORKERS.whole(workers))
        return job_text(data.job_dir(p, "transcribe"), "Transcription")

    @_page_errors
    def data_status(name: str | None) -> tuple[str, str, float | None]:
        if not name:
            return "", "", None
        p = project(name)
        tr = data.job_dir(p, "transcribe")
        done = data.progress(jobs.log_tail(tr, 3)) if jobs.state(tr).running else None
        return job_text(tr, "Transcription"), job_text(data.job_dir(p, "prepare"), "Preparation"), done

    @_page_errors
    def clip_table(name: str) -> tuple[pd.DataFrame, Any]:
        found = data.clips(project(name))
        frame = pd.DataFrame(
            [(c.path, round(c.seconds, 2), c.text) for c in found], columns=["clip", "seconds", "text"]
        )
        names = [c.path for c in found]
        return frame, gr.update(choices=names, value=names[0] if names else None)

    @_page_errors
    def open_clip(name: str, clip: str | None) -> tuple[tuple[int, np.ndarray] | None, str]:
        if not clip:
            return None, ""
        path = data.clip_path(project(name), clip)
        return _audio_of(path), path.with_suffix(".txt").read_text(encoding="utf-8").strip()

    @_page_errors
    def save_text(name: str, clip: str, text: str) -> str:
        data.set_text(project(name), clip, text)
        return f"Saved the text of {clip}."

    @_page_errors
    def drop_clip(name: str, clip: str) -> str:
        data.drop(project(name), clip)
        return f"Dropped {clip}."

    @_page_errors
    def check_vocab(name: str, base: str, tokenizer: str) -> str:
        p = project(name)
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

    @_page_errors
    def start_prepare(name: str, extend: bool, val_count: float) -> str:
        p = project(name)
        data.start_prepare(p, extend, lim.HELD_OUT.whole(val_count))
        return job_text(data.job_dir(p, "prepare"), "Preparation")

    @_page_errors
    def link_dataset(name: str, folder: str) -> str:
        return f"Training will read the dataset at {data.link_dataset(project(name), folder)}."

    # ---- Train -------------------------------------------------------------------------------------------------
    @_page_errors
    def propose_settings(recipe: str) -> tuple[float, str, str]:
        cfg = training.compose([f"+recipe={training.check_recipe(recipe)}"])
        proposal = propose(cfg.data.frames_per_gpu)
        return proposal.frames_per_gpu, proposal.precision, proposal.reason

    def plan_of(
        p: Project,
        recipe: str, mode: str, base: str, base_vocab: str, updates: float, lr: float | None, frames: float | None,
        precision: str, rank: float, every: float, extra: str,
    ) -> training.Plan:  # fmt: skip
        found = p.models()
        base_path = str(found.get(base, base)) if base else None
        return training.Plan(
            recipe=recipe, mode=mode, base=base_path, base_vocab=(base_vocab or "").strip() or None,
            max_updates=lim.UPDATES.whole(updates), lr=lim.LEARNING_RATE.check(lr or 0) or None,
            frames_per_gpu=lim.FRAMES.whole(frames or 0) or None, precision=precision,
            lora_rank=lim.LORA_RANK.whole(rank), every=lim.EVERY.whole(every), vocoder=settings.vocoder,
            vocoder_source=settings.vocoder_source, extra=tuple((extra or "").split()),
        )  # fmt: skip

    @_page_errors
    def start_training(name: str, run: str, *plan: Any) -> tuple[Any, str]:
        p = project(name)
        training.start(p, run, plan_of(p, *plan))
        return gr.update(choices=p.runs(), value=run), f"Started run **{run}**."

    @_page_errors
    def stop_training(name: str, run: str) -> str:
        stopped = training.stop(project(name), run or "")
        return "Stopping: the trainer saves a checkpoint, then exits." if stopped else "The run is not training."

    @_page_errors
    def resume_training(name: str, run: str) -> str:
        training.resume(project(name), run or "")
        return f"Resumed run **{run}**."

    @_page_errors
    def run_choices(name: str | None) -> Any:
        runs = project(name).runs() if name else []
        busy = training.running_run(project(name)) if name else None
        return gr.update(choices=runs, value=busy or (runs[-1] if runs else None))

    @_page_errors
    def run_status(name: str | None, run: str | None) -> tuple[str, pd.DataFrame, tuple[int, np.ndarray] | None, str]:
        # Gradio's plot fixes its series and their types from the first frame it gets: every frame names both curves
        # with a row of NaN (sent as null, not drawn), so an empty first frame does not leave the lines without colour.
        named = [(math.nan, math.nan, name) for name in CURVES]
        empty = pd.DataFrame(named, columns=["update", "value", "curve"])
        if not name or not run:
            return "No run picked.", empty, None, ""
        view = training.view(training.run_dir(project(name), run))
        rows = [(u, v, CURVES[0]) for u, v in view.updates] + [(u, v, CURVES[1]) for u, v in view.val]
        curve = pd.DataFrame(named + rows, columns=["update", "value", "curve"])
        head = f"Run **{run}**: **{view.state}**, update {view.last_update}"
        if view.checkpoints:
            head += f"; checkpoints at {', '.join(map(str, view.checkpoints))}"
        if view.exported:
            head += "; exported (runs/" + run + "/export)"
        if view.state == "failed":
            head += f"; it failed (exit status {view.rc}), the log's last lines are below"
        sample = _audio_of(view.samples[-1]) if view.samples else None
        return head, curve, sample, view.log

    # ---- Evaluate & export -------------------------------------------------------------------------------------
    @_page_errors
    def start_eval(name: str, label: str, eval_name: str, steps: float) -> str:
        p = project(name)
        evaluate.start_eval(
            p,
            model_path(p, label),
            eval_name,
            lim.EVAL_STEPS.whole(steps),
            settings.vocoder,
            settings.vocoder_source,
            settings.device,
        )
        return job_text(data.job_dir(p, "eval"), "Evaluation")

    @_page_errors
    def show_eval(name: str, eval_name: str) -> tuple[Any, str]:
        p = project(name)
        summary = evaluate.summary(p, eval_name)
        report = evaluate.report(p, eval_name)
        if report is None:
            return summary, ""
        page = html.escape(report.read_text(encoding="utf-8"), quote=True)
        return (
            summary,
            f'<iframe class="f5lite-report" srcdoc="{page}" style="width:100%;height:720px;border:0"></iframe>',
        )

    @_page_errors
    def start_export(name: str, run: str, export_name: str, prune: bool) -> str:
        p = project(name)
        evaluate.start_export(p, run or "", export_name, prune)
        return job_text(data.job_dir(p, "export"), "Export")

    @_page_errors
    def jobs_status(name: str | None) -> tuple[str, str]:
        if not name:
            return "", ""
        p = project(name)
        return job_text(data.job_dir(p, "eval"), "Evaluation"), job_text(data.job_dir(p, "export"), "Export")

    @_page_errors
    def stop_job(name: str, kind: str) -> str:
        if kind not in ("transcribe", "prepare", "eval", "export"):
            raise ValueError(f"there is no {kind!r} job: choose transcribe, prepare, eval or export")
        stopped = jobs.stop(data.job_dir(project(name), kind))
        return f"Stopping the {kind} job." if stopped else f"No {kind} job is running."

    @_page_errors
    def download(name: str, kind: str, item: str) -> str:
        return str(evaluate.archive(project(name), kind, item))

    # ---- the page ----------------------------------------------------------------------------------------------
    with gr.Blocks(title="f5lite studio", analytics_enabled=False) as page:
        gr.Markdown("# f5lite studio")
        with gr.Row():
            current = gr.Dropdown(
                label="Project", choices=workspace.projects(), value=None, scale=2, allow_custom_value=True
            )
            new_name = gr.Textbox(label="New project", placeholder="my_voice", scale=2)
            create = gr.Button("Create project", scale=1)
        message = gr.Markdown()
        create.click(create_project, [new_name], [current, message], api_name="create_project")
        gr.Button(visible=False).click(list_projects, None, gr.JSON(visible=False), api_name="list_projects")

        with gr.Tab("Speak", id="speak"):
            with gr.Row():
                with gr.Column():
                    model = gr.Dropdown(
                        label="Model (exports and checkpoints of the project)", choices=[], allow_custom_value=True
                    )
                    refresh_models = gr.Button("Refresh models", size="sm")
                    ref_audio = gr.Audio(
                        label="Reference clip (1-15 s)", sources=["upload", "microphone"], type="filepath"
                    )
                    ref_text = gr.Textbox(label="Its transcript (left empty: transcribed offline)")
                    fill = gr.Button("Transcribe the clip", size="sm")
                    voice = gr.Dropdown(label="Voice", choices=[PAGE_VOICE], value=PAGE_VOICE, allow_custom_value=True)
                    with gr.Row():
                        voice_name = gr.Textbox(label="Save the clip as voice", placeholder="Alice")
                        keep_voice = gr.Button("Save voice", size="sm")
                with gr.Column():
                    script = gr.Textbox(label="Text to say ({Name} switches to a saved voice)", lines=5)
                    with gr.Accordion("Options", open=False):
                        steps = gr.Slider(
                            *_bounds(lim.STEPS), value=32, step=1, label="Steps",
                            info="at 32 a distilled model takes its own (4)",
                        )  # fmt: skip
                        cfg = gr.Slider(*_bounds(lim.GUIDANCE), value=2.0, step=0.1, label="Guidance (CFG strength)")
                        cfg_zero = gr.Checkbox(label="CFG-Zero*", value=False)
                        speed = gr.Slider(*_bounds(lim.SPEED), value=1.0, step=0.05, label="Speed")
                        seed = _number(lim.SEED, "Seed (-1: a new one each time)", -1)
                        seconds = _number(lim.SECONDS, "Seconds of speech (0: the duration predictor or the rule)", 0)
                    go = gr.Button("Speak", variant="primary", elem_id="speak-button")
                    streamed = gr.Audio(
                        label="Speech, as it is made", streaming=True, autoplay=True, elem_id="speech-stream"
                    )
                    result = gr.Audio(label="Speech", elem_id="speech-result")
                    spectrogram = gr.Image(label="Spectrogram", type="filepath")
                    speak_info = gr.Markdown()
            refresh_models.click(model_choices, [current], [model], api_name="list_models")
            fill.click(transcribe_reference, [ref_audio], [ref_text], api_name="transcribe_reference")
            keep_voice.click(
                save_voice, [current, voice_name, ref_audio, ref_text], [voice, speak_info], api_name="save_voice"
            )
            go.click(
                say, [current, model, ref_audio, ref_text, voice, script, steps, cfg, cfg_zero, speed, seed, seconds],
                [streamed, result, spectrogram, speak_info], api_name="speak",
            )  # fmt: skip

        with gr.Tab("Data", id="data"):
            with gr.Row():
                with gr.Column():
                    uploads = gr.File(label="Raw recordings", file_count="multiple", type="filepath")
                    add = gr.Button("Add recordings")
                    workers = _number(lim.WORKERS, "Transcription workers", 1)
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
                val_count = _number(lim.HELD_OUT, "Held-out clips (validation and test set)", 2)
                run_prepare = gr.Button("Prepare the dataset", variant="primary")
                stop_prepare = gr.Button("Stop", variant="stop", size="sm")
            prepare_info = gr.Markdown()
            add.click(add_recordings, [current, uploads], [data_info], api_name="add_recordings")
            run_transcribe.click(start_transcribe, [current, workers], [transcribe_info], api_name="transcribe")
            link.click(link_dataset, [current, linked], [data_info], api_name="link_dataset")
            load_clips.click(clip_table, [current], [table, clip], api_name="clips")
            clip.change(open_clip, [current, clip], [clip_audio, clip_text], api_name="open_clip")
            keep_text.click(save_text, [current, clip, clip_text], [data_info], api_name="set_text")
            remove.click(drop_clip, [current, clip], [data_info], api_name="drop_clip")
            run_vocab.click(check_vocab, [current, vocab_base, tokenizer], [vocab_info], api_name="check_vocab")
            run_prepare.click(start_prepare, [current, extend, val_count], [prepare_info], api_name="prepare")

        with gr.Tab("Train", id="train"):
            with gr.Row():
                with gr.Column():
                    run_name = gr.Textbox(label="Run name", value="run1")
                    names = training.recipes()
                    recipe = gr.Dropdown(label="Recipe", choices=names, value="demo" if "demo" in names else names[0])
                    mode = gr.Radio(list(training.MODES), value="scratch", label="Training")
                    base = gr.Dropdown(label="Base model (fine-tuning)", choices=[], allow_custom_value=True)
                    base_vocab = gr.Textbox(label="Its vocab.txt (only for an F5-TTS checkpoint file)")
                    updates = _number(lim.UPDATES, "Updates", 500)
                    lr = _number(lim.LEARNING_RATE, "Learning rate (0: the recipe's)", 0)
                    with gr.Row():
                        frames = _number(lim.FRAMES, "Frames per batch (0: the recipe's)", 0)
                        precision = gr.Dropdown(["no", "bf16", "fp16"], value="no", label="Precision")
                    suggest = gr.Button("Propose for this machine", size="sm")
                    machine_info = gr.Markdown()
                    rank = _number(lim.LORA_RANK, "LoRA rank", 16)
                    every = _number(lim.EVERY, "Checkpoint, validation and samples every (updates)", 100)
                    extra = gr.Textbox(
                        label="More overrides (key=value ...)", info=f"settings of: {overrides.SECTIONS}"
                    )
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
            suggest.click(propose_settings, [recipe], [frames, precision, machine_info], api_name="propose")
            start_button.click(
                start_training, [current, run_name, *plan_inputs], [run, train_info], api_name="start_training"
            )
            stop_button.click(stop_training, [current, run], [train_info], api_name="stop_training")
            resume_button.click(resume_training, [current, run], [train_info], api_name="resume_training")
            gr.Button(visible=False).click(run_choices, [current], [run], api_name="list_runs")
            run_outputs = [run_info, curve, sample, log]
            run.change(run_status, [current, run], run_outputs, api_name="run_status")

        with gr.Tab("Evaluate & export", id="evaluate"):
            with gr.Row():
                with gr.Column():
                    eval_model = gr.Dropdown(label="Model", choices=[], allow_custom_value=True)
                    eval_name = gr.Textbox(label="Evaluation name", value="eval1")
                    eval_steps = gr.Slider(*_bounds(lim.EVAL_STEPS), value=16, step=1, label="Steps")
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
            run_eval.click(start_eval, [current, eval_model, eval_name, eval_steps], [eval_info], api_name="evaluate")
            show.click(show_eval, [current, eval_name], [eval_summary, report], api_name="show_evaluation")
            run_export.click(start_export, [current, export_run, export_name, prune], [export_info], api_name="export")
            fetch.click(download, [current, kind, item], [archive], api_name="download")
            gr.Button(visible=False).click(jobs_status, [current], [eval_info, export_info], api_name="jobs_status")

        def project_picked(name: str | None) -> tuple[Any, ...]:
            found = list(project(name).models()) if name else []
            first = found[0] if found else None
            runs = project(name).runs() if name else []
            return (
                gr.update(choices=found, value=first), gr.update(choices=[PAGE_VOICE, *(project(name).voice_names() if name else [])], value=PAGE_VOICE),
                gr.update(choices=found), gr.update(choices=found), gr.update(choices=found, value=first),
                gr.update(choices=runs, value=(training.running_run(project(name)) if name else None) or (runs[-1] if runs else None)),
                gr.update(choices=runs, value=runs[-1] if runs else None),
            )  # fmt: skip

        current.change(
            _page_errors(project_picked), [current], [model, voice, vocab_base, base, eval_model, run, export_run]
        )
        # The project survives a reload (kept in the browser), and with it the view of its running jobs.
        remembered = gr.BrowserState(None, storage_key="f5lite-studio-project")
        current.change(lambda name: name, [current], [remembered])
        page.load(
            lambda name: gr.update(choices=workspace.projects(), value=name if name in workspace.projects() else None),
            [remembered],
            [current],
        )
        timer = gr.Timer(POLL_SECONDS)
        timer.tick(data_status, [current], [transcribe_info, prepare_info, transcribe_bar], show_progress="hidden")
        timer.tick(run_status, [current, run], run_outputs, show_progress="hidden")
        timer.tick(jobs_status, [current], [eval_info, export_info], show_progress="hidden")
        job_kind = gr.Textbox(visible=False)
        gr.Button(visible=False).click(stop_job, [current, job_kind], [message], api_name="stop_job")
        for button, job, shown in (
            (stop_transcribe, "transcribe", transcribe_info),
            (stop_prepare, "prepare", prepare_info),
            (stop_eval, "eval", eval_info),
            (stop_export, "export", export_info),
        ):
            button.click(_bind_kind(stop_job, job), [current], [shown], api_visibility="private")
        gr.Button(visible=False).click(
            data_status, [current], [transcribe_info, prepare_info, transcribe_bar], api_name="data_status"
        )
    return page
