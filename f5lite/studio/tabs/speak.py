"""The Speak tab: a project's model, a reference (uploaded, recorded or a saved voice) and a script, spoken as made.

Its routes: `list_models`, `transcribe_reference`, `save_voice` and `speak`, which streams each piece as
`f5lite.studio.speak` makes it, then the whole speech, its spectrogram and a note. The controls of the sampler start
at the studio's settings (`f5lite-studio sample.steps=16 ...`), and the settings the page has no control for (method,
schedule, sway, zero-init steps) apply as given there.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import gradio as gr
import numpy as np
import torch

from f5lite.audio import SAMPLE_RATE
from f5lite.sampling import SamplerOptions
from f5lite.studio import limits as lim
from f5lite.studio import speak
from f5lite.studio.names import typed_name
from f5lite.studio.project import StudioRoot
from f5lite.studio.settings import StudioSettings
from f5lite.studio.tabs.shared import bounds, model_path, number, open_project, page_errors, page_errors_stream

PAGE_VOICE = "(the clip above)"
"""The voice picker's entry for the reference uploaded or recorded on the page."""


def _pcm16(wave: torch.Tensor) -> np.ndarray:
    # int16, so that Gradio does not scale every streamed piece by its own peak.
    return (wave.clamp(-1, 1) * 32767).round().to(torch.int16).numpy()


def _seed(value: float | None) -> int | None:
    """The page's seed: a negative or empty one draws a new seed."""
    seed = lim.SEED.whole(-1 if value is None else value)
    return None if seed < 0 else seed


class _Routes:
    """The Speak tab's handlers, on a workspace and the studio's loaded models."""

    def __init__(self, workspace: StudioRoot, models: speak.Models, defaults: SamplerOptions) -> None:
        self.workspace = workspace
        self.models = models
        self.defaults = defaults

    @page_errors
    def model_choices(self, name: str | None) -> Any:
        found = list(open_project(self.workspace, name).models()) if name else []
        return gr.update(choices=found, value=found[0] if found else None)

    @page_errors_stream
    def say(
        self, name: str, label: str, ref_audio: str | None, ref_text: str, voice: str, script: str, steps: float,
        cfg: float, cfg_zero: bool, speed: float, seed: float | None, seconds: float | None,
    ) -> Iterator[tuple[Any, Any, Any, str]]:  # fmt: skip
        p = open_project(self.workspace, name)
        options = dataclasses.replace(
            self.defaults, steps=lim.STEPS.whole(steps), cfg_strength=lim.GUIDANCE.check(cfg),
            cfg_zero_star=bool(cfg_zero), speed=lim.SPEED.check(speed),
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
        with self.models.lock:
            synthesizer = self.models.get(model_path(p, label))
            for piece in speak.speak(synthesizer, refs, options, drawn, fixed):
                pieces.append(piece)
                yield (SAMPLE_RATE, _pcm16(piece)), None, None, f"{len(pieces)} piece(s) made…"
        wave = torch.cat(pieces)
        out, image = speak.save_speech(p, wave, synthesizer.mel_type)
        note = f"{wave.shape[0] / SAMPLE_RATE:.2f} s of speech in {time.monotonic() - started:.1f} s, saved as speech/{out.name}"
        if page is not None and not (ref_text or "").strip() and needs_page:
            note += f"; the reference was transcribed as: “{page.text}”"
        yield None, (SAMPLE_RATE, _pcm16(wave)), str(image), note

    @page_errors
    def transcribe_reference(self, ref_audio: str | None) -> str:
        return speak.load_reference(ref_audio, None).text

    @page_errors
    def save_voice(self, name: str, voice_name: str, ref_audio: str | None, ref_text: str) -> tuple[Any, str]:
        p = open_project(self.workspace, name)
        voice_name = typed_name(voice_name, "voice")  # before the clip, so a bad name is the message
        path = speak.save_voice(p, voice_name, speak.load_reference(ref_audio, ref_text))
        choices = [PAGE_VOICE, *p.voice_names()]
        return gr.update(choices=choices, value=path.stem), f"Saved voice **{path.stem}** (use it as {{{path.stem}}})."


@dataclass(frozen=True)
class SpeakTab:
    """What the page wires beyond the Speak tab.

    Attributes:
        model: the model picker (the project picker fills it).
        voice: the voice picker (the project picker fills it).
    """

    model: gr.Dropdown
    voice: gr.Dropdown


def build(workspace: StudioRoot, models: speak.Models, settings: StudioSettings, current: gr.Dropdown) -> SpeakTab:
    """Lay out the Speak tab and wire its routes; call it inside the page's Blocks.

    Args:
        workspace: the studio's projects.
        models: the studio's loaded models, shared by every call of Speak.
        settings: the studio's settings: where the sampler's controls and the seed start.
        current: the project picker.

    Returns:
        Its components that the page wires beyond the tab.
    """
    defaults = settings.options
    routes = _Routes(workspace, models, defaults)
    with gr.Tab("Speak", id="speak"):
        with gr.Row():
            with gr.Column():
                model = gr.Dropdown(
                    label="Model (exports and checkpoints of the project)", choices=[], allow_custom_value=True
                )
                refresh_models = gr.Button("Refresh models", size="sm")
                ref_audio = gr.Audio(label="Reference clip (1-15 s)", sources=["upload", "microphone"], type="filepath")
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
                        *bounds(lim.STEPS), value=defaults.steps, step=1, label="Steps",
                        info=f"at {SamplerOptions().steps} a distilled model takes its own (4)",
                    )  # fmt: skip
                    cfg = gr.Slider(
                        *bounds(lim.GUIDANCE), value=defaults.cfg_strength, step=0.1, label="Guidance (CFG strength)"
                    )
                    cfg_zero = gr.Checkbox(label="CFG-Zero*", value=defaults.cfg_zero_star)
                    speed = gr.Slider(*bounds(lim.SPEED), value=defaults.speed, step=0.05, label="Speed")
                    seed = number(
                        lim.SEED, "Seed (-1: a new one each time)", -1 if settings.seed is None else settings.seed
                    )
                    seconds = number(lim.SECONDS, "Seconds of speech (0: the duration predictor or the rule)", 0)
                go = gr.Button("Speak", variant="primary", elem_id="speak-button")
                streamed = gr.Audio(
                    label="Speech, as it is made", streaming=True, autoplay=True, elem_id="speech-stream"
                )
                result = gr.Audio(label="Speech", elem_id="speech-result")
                spectrogram = gr.Image(label="Spectrogram", type="filepath")
                speak_info = gr.Markdown()
        refresh_models.click(routes.model_choices, [current], [model], api_name="list_models")
        fill.click(routes.transcribe_reference, [ref_audio], [ref_text], api_name="transcribe_reference")
        keep_voice.click(
            routes.save_voice, [current, voice_name, ref_audio, ref_text], [voice, speak_info], api_name="save_voice"
        )
        go.click(
            routes.say, [current, model, ref_audio, ref_text, voice, script, steps, cfg, cfg_zero, speed, seed, seconds],
            [streamed, result, spectrogram, speak_info], api_name="speak",
        )  # fmt: skip
    return SpeakTab(model, voice)
