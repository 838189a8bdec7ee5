"""Speak's streaming: the pieces handed out one by one join into the stream the whole script makes; what was said is
kept under names no two calls share."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import soundfile as sf
import torch
from support.infer_assets import make_model_files, make_reference

from f5lite.audio import SAMPLE_RATE, load_audio
from f5lite.infer import Synthesizer
from f5lite.infer.chunking import FIRST_BYTES, max_chunk_bytes, prepare_ref_text, split_text
from f5lite.infer.crossfade import crossfade
from f5lite.sampling import SamplerOptions
from f5lite.studio.project import StudioRoot
from f5lite.studio.speak import Clip, save_speech, speak


def test_streamed_pieces_are_the_pieces_cross_faded_in_order(tmp_path: Path) -> None:
    export, _ = make_model_files(tmp_path)
    synthesizer = Synthesizer.from_pretrained(export, "griffin_lim", device="cpu", compile=False)
    first = Clip(load_audio(make_reference(tmp_path)), "ABC 12. ")
    second = Clip(first.wave.flip(0), "HG FED. ")  # another voice: its own clip and transcript
    one, two = "ABC DEF, GH 12 34. " * 3, "FED CBA. " * 2
    options = SamplerOptions(steps=2, cfg_strength=0.0)
    streamed = list(speak(synthesizer, [(first, one), (second, two)], options, seed=0))

    def pieces(ref: Clip, text: str, first_bytes: int | None) -> list[tuple[Clip, str]]:
        budget = max_chunk_bytes(prepare_ref_text(ref.text), ref.wave.shape[0] / SAMPLE_RATE, 1.0)
        return [(ref, piece) for piece in split_text(text, budget, first_bytes)]

    planned = pieces(first, one, FIRST_BYTES) + pieces(second, two, None)
    waves = [synthesizer.synthesize(t, r.wave, r.text, options, seed=0, cross_fade=0)[0] for r, t in planned]
    assert len(streamed) == len(planned) >= 3 and len(planned[0][1].encode()) <= FIRST_BYTES
    assert torch.equal(torch.cat(streamed), crossfade(waves, round(0.15 * SAMPLE_RATE)))


def test_speech_made_in_one_second_keeps_every_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "strftime", lambda _: "20260101-120000")  # every call within one second
    project = StudioRoot(tmp_path).project("p", create=True)
    waves = [torch.full((2400,), 0.01 * (i + 1)) for i in range(6)]
    saved: list[tuple[Path, Path]] = [save_speech(project, waves[0], "vocos"), save_speech(project, waves[1], "vocos")]
    threads = [threading.Thread(target=lambda w=w: saved.append(save_speech(project, w, "vocos"))) for w in waves[2:]]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert saved[:2] == [
        (project.speech / "20260101-120000.wav", project.speech / "20260101-120000.png"),
        (project.speech / "20260101-120000-2.wav", project.speech / "20260101-120000-2.png"),
    ]
    assert len({wav for wav, _ in saved}) == 6 and all(png.read_bytes()[:4] == b"\x89PNG" for _, png in saved)
    levels = sorted(round(float(abs(sf.read(str(wav))[0]).max()), 2) for wav, _ in saved)
    assert levels == [0.01, 0.02, 0.03, 0.04, 0.05, 0.06]  # each call's own speech, none overwritten
