"""The server's model thread (`f5lite.serve.engine`) in this process: a failing batch fails its own pieces only, the
thread goes on; an abandoned piece is never run; pieces with other sampler settings are not batched together."""

from __future__ import annotations

import dataclasses
import threading
from concurrent.futures import CancelledError

import pytest
import torch

pytest.importorskip("fastapi")
pytest.importorskip("av")

from support.infer_assets import make_model_files  # noqa: E402
from support.serve_assets import make_voices  # noqa: E402

from f5lite.audio import samples_for_frames  # noqa: E402
from f5lite.infer import Synthesizer  # noqa: E402
from f5lite.infer.plan import Piece  # noqa: E402
from f5lite.sampling import SamplerOptions  # noqa: E402
from f5lite.serve.engine import Engine, OverBudgetError, Task  # noqa: E402
from f5lite.serve.voices import VoiceStore  # noqa: E402


@pytest.fixture(scope="module")
def parts(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("engine")
    export, _ = make_model_files(root)
    synthesizer = Synthesizer.from_pretrained(export, "griffin_lim", dtype="fp32", compile=False, duration="rule")
    voices = VoiceStore(make_voices(root)[0], synthesizer.reference, 15.0)
    engine = Engine(synthesizer, max_batch=4, max_batch_frames=8192, max_wait=0.2)
    sizes: list[int] = []
    engine.on_batch = sizes.append
    yield engine, voices.get("us_male"), sizes
    engine.stop()


def piece(voice, options: SamplerOptions, *, cancelled: bool = False) -> Task:
    flag = threading.Event()
    if cancelled:
        flag.set()
    return Task(Piece(voice, "DEAF CAB.", voice.mel.shape[0] + 60, samples_for_frames(60)), options, flag)


def test_a_failing_batch_fails_its_pieces_and_the_thread_goes_on(parts) -> None:
    engine, voice, sizes = parts
    broken = dataclasses.replace(voice, mel=torch.zeros(voice.mel.shape[0], 7))  # a mel of the wrong width
    bad = engine.submit(piece(broken, SamplerOptions(steps=2)))
    with pytest.raises(ValueError):
        bad.result(timeout=60)
    good = engine.submit(piece(voice, SamplerOptions(steps=2))).result(timeout=60)
    assert good.dim() == 1 and good.shape[0] > 0 and torch.isfinite(good).all()


def test_an_abandoned_piece_is_never_run_and_other_settings_are_not_batched(parts) -> None:
    engine, voice, sizes = parts
    sizes.clear()
    gone = engine.submit(piece(voice, SamplerOptions(steps=2), cancelled=True))
    two = engine.submit(piece(voice, SamplerOptions(steps=2)))
    three = engine.submit(piece(voice, SamplerOptions(steps=3)))
    with pytest.raises(CancelledError):
        gone.result(timeout=60)
    for done in (two, three):
        done.result(timeout=60)
    assert sorted(sizes) == [1, 1]  # the abandoned one not run; steps 2 and steps 3 apart


def test_a_piece_over_the_batch_budget_is_refused_and_never_queued(parts) -> None:
    # The first piece of a batch is taken whatever its size: one over the budget must never get that far.
    engine, voice, sizes = parts
    sizes.clear()
    huge = Task(Piece(voice, "DEAF CAB.", 8193, samples_for_frames(8193 - voice.mel.shape[0])),
                SamplerOptions(steps=2), threading.Event())  # fmt: skip
    with pytest.raises(OverBudgetError, match="a piece of 8193 frames is over the server's 8192 frames per batch"):
        engine.submit(huge)
    assert engine.pending() == 0 and not huge.result.done()
    engine.submit(piece(voice, SamplerOptions(steps=2))).result(timeout=60)
    assert sizes == [1]  # the refused piece never ran
