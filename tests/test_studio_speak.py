"""Speak's streaming: the pieces handed out one by one join into the stream the whole script makes."""

from __future__ import annotations

from pathlib import Path

import torch
from infer_assets import make_model_files, make_reference

from f5lite.audio import SAMPLE_RATE, load_audio
from f5lite.infer import Synthesizer
from f5lite.infer.chunking import max_chunk_bytes, prepare_ref_text
from f5lite.infer.crossfade import crossfade
from f5lite.sampling import SamplerOptions
from f5lite.serve.speech import FIRST_BYTES, split_text
from f5lite.studio.speak import Reference, speak


def test_streamed_pieces_are_the_pieces_cross_faded_in_order(tmp_path: Path) -> None:
    export, _ = make_model_files(tmp_path)
    synthesizer = Synthesizer.from_pretrained(export, "griffin_lim", device="cpu", compile=False)
    first = Reference(load_audio(make_reference(tmp_path)), "ABC 12. ")
    second = Reference(first.wave.flip(0), "HG FED. ")  # another voice: its own clip and transcript
    one, two = "ABC DEF, GH 12 34. " * 3, "FED CBA. " * 2
    options = SamplerOptions(steps=2, cfg_strength=0.0)
    streamed = list(speak(synthesizer, [(first, one), (second, two)], options, seed=0))

    def pieces(ref: Reference, text: str, first_bytes: int | None) -> list[tuple[Reference, str]]:
        budget = max_chunk_bytes(prepare_ref_text(ref.text), ref.wave.shape[0] / SAMPLE_RATE, 1.0)
        return [(ref, piece) for piece in split_text(text, budget, first_bytes)]

    planned = pieces(first, one, FIRST_BYTES) + pieces(second, two, None)
    waves = [synthesizer.synthesize(t, r.wave, r.text, options, seed=0, cross_fade=0)[0] for r, t in planned]
    assert len(streamed) == len(planned) >= 3 and len(planned[0][1].encode()) <= FIRST_BYTES
    assert torch.equal(torch.cat(streamed), crossfade(waves, round(0.15 * SAMPLE_RATE)))
