"""`f5lite.Synthesizer`: the Python API, sampler options passed whole, chunked long text, loudness and vocoder
checks."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from support.infer_assets import (
    ASSETS,
    GEN_TEXT,
    NON_DEFAULT,
    REF_TEXT,
    expected_samples,
    make_model_files,
    make_reference,
    spy_on_sample,
)

import f5lite
import f5lite.infer.chunking as chunking
import f5lite.infer.synthesizer as synthesizer_module
from f5lite.audio import GriffinLimVocoder, VocosVocoder
from f5lite.infer import resolve_device
from f5lite.sampling.options import OPTION_NAMES

TWO_STEPS = f5lite.SamplerOptions(steps=2)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("synth")
    export, checkpoint = make_model_files(root)
    return {"export": export, "checkpoint": checkpoint, "ref": make_reference(root)}


@pytest.fixture(scope="module")
def synth(files) -> f5lite.Synthesizer:
    # Vocos with random weights: a real Vocos decoder, fast, no download. fp32 weights on every CPU: `dtype=auto`
    # would pick bf16 on one with native bf16, and these tests compare outputs at fp32 tolerances.
    vocoder = VocosVocoder.from_config(ASSETS / "vocos" / "config.yaml")
    return f5lite.Synthesizer.from_pretrained(files["export"], vocoder=vocoder, device="cpu", dtype="fp32")


def test_compile_option_compiles_the_loaded_backbone(files, monkeypatch):
    compiled = []
    monkeypatch.setattr(synthesizer_module, "apply_inference_compile", compiled.append)
    synth = f5lite.Synthesizer.from_pretrained(files["export"], vocoder="griffin_lim", device="cpu", compile=True)
    assert compiled == [synth.backbone]
    f5lite.Synthesizer.from_pretrained(files["export"], vocoder="griffin_lim", device="cpu")
    assert len(compiled) == 1  # off by default


def test_synthesize_returns_audio_of_the_estimated_duration(synth, files):
    wave, rate = synth.synthesize(GEN_TEXT, files["ref"], REF_TEXT, TWO_STEPS, seed=0)
    assert rate == 24000 and wave.dtype == torch.float32 and wave.dim() == 1 and wave.device.type == "cpu"
    assert wave.shape[0] == expected_samples()
    assert torch.isfinite(wave).all()
    slow, _ = synth.synthesize(GEN_TEXT, files["ref"], REF_TEXT, f5lite.SamplerOptions(steps=2, speed=0.5), seed=0)
    assert slow.shape[0] == expected_samples(speed=0.5)


def test_every_option_is_non_default_in_the_pass_through_tests():
    assert set(NON_DEFAULT) == set(OPTION_NAMES)
    defaults = f5lite.SamplerOptions()
    assert all(value != getattr(defaults, name) for name, value in NON_DEFAULT.items())


def test_every_sampler_setting_reaches_sample(synth, files, monkeypatch):
    seen = spy_on_sample(monkeypatch)
    options = f5lite.SamplerOptions(**NON_DEFAULT)
    wave, _ = synth.synthesize(GEN_TEXT, files["ref"], REF_TEXT, options, seed=4)
    assert seen == [(options, 4)] and seen[0][0] is options  # passed whole, not rebuilt
    assert wave.shape[0] == expected_samples(speed=NON_DEFAULT["speed"])  # speed sets the duration here


def test_the_settings_come_in_one_sampler_options(synth, files):
    for old in ("steps", "sway_sampling_coef", "speed"):  # the keywords of earlier versions are gone
        with pytest.raises(TypeError, match=f"unexpected keyword argument '{old}'"):
            synth.synthesize(GEN_TEXT, files["ref"], REF_TEXT, seed=4, **{old: 1})
    with pytest.raises(TypeError, match="options must be a SamplerOptions or None, got dict"):
        synth.synthesize(GEN_TEXT, files["ref"], REF_TEXT, {"steps": 2})  # type: ignore[arg-type]


def test_reference_as_waveform_equals_reference_as_file(synth, files):
    from_file, _ = synth.synthesize(GEN_TEXT, files["ref"], REF_TEXT, TWO_STEPS, seed=0)
    from_tensor, _ = synth.synthesize(GEN_TEXT, f5lite.load_audio(files["ref"]), REF_TEXT, TWO_STEPS, seed=0)
    assert torch.equal(from_file, from_tensor)


def test_quiet_reference_is_normalized_then_output_restored(synth, files):
    wave = f5lite.load_audio(files["ref"])
    wave = wave / wave.square().mean().sqrt()  # RMS 1
    louder, _ = synth.synthesize(GEN_TEXT, wave * 0.05, REF_TEXT, TWO_STEPS, seed=0)
    quieter, _ = synth.synthesize(GEN_TEXT, wave * 0.02, REF_TEXT, TWO_STEPS, seed=0)
    # Both references are raised to RMS 0.1, so the model hears the same clip; the outputs differ by 0.05 / 0.02.
    assert torch.allclose(louder, quieter * 2.5, atol=1e-4 * louder.abs().max().item())


def test_long_text_is_chunked_and_cross_faded(synth, files, monkeypatch, capsys):
    # A 1 s budget leaves 0.58 s after the 0.42 s reference: 11 bytes at the reference's 19.2 bytes/s.
    monkeypatch.setattr(chunking, "MAX_SECONDS", 1.0)
    text = "DEAF CAB. BAD FACE. A BEE FED."
    chunks = chunking.chunk_text(text, chunking.max_chunk_bytes(REF_TEXT, 9984 / 24000))
    assert chunks == ["DEAF CAB.", "BAD FACE.", "A BEE FED."]
    lengths = [expected_samples(chunk) for chunk in chunks]
    wave, _ = synth.synthesize(text, files["ref"], REF_TEXT, TWO_STEPS, seed=0, cross_fade=0.01, progress=True)
    assert wave.shape[0] == sum(lengths) - 2 * 240
    assert "3/3" in capsys.readouterr().err
    joined, _ = synth.synthesize(text, files["ref"], REF_TEXT, TWO_STEPS, seed=0, cross_fade=0)
    assert joined.shape[0] == sum(lengths)


def test_griffin_lim_by_name_and_vocoder_checks(files):
    synth = f5lite.Synthesizer.from_pretrained(files["export"], vocoder="griffin_lim", device="cpu")
    assert isinstance(synth.vocoder, GriffinLimVocoder)
    with pytest.raises(ValueError, match="vocoder_source is for vocos"):
        f5lite.Synthesizer.from_pretrained(files["export"], vocoder="griffin_lim", vocoder_source="x")
    with pytest.raises(ValueError, match="^vocoder=griffinlim is no longer accepted; write vocoder=griffin_lim$"):
        f5lite.Synthesizer.from_pretrained(files["export"], vocoder="griffinlim")
    with pytest.raises(ValueError, match="makes 'vocos' mels but the vocoder expects 'bigvgan'"):
        f5lite.Synthesizer(synth.backbone, synth.encoder, GriffinLimVocoder("bigvgan"), "vocos")
    with pytest.raises(FileNotFoundError, match="Vocos directory not found"):
        f5lite.Synthesizer.from_pretrained(files["export"], vocoder="vocos", vocoder_source=files["ref"].parent / "v")


def test_bad_inputs_raise_one_line_value_errors(synth, files):
    cases = [
        (("", files["ref"], REF_TEXT), "text is empty"),
        ((GEN_TEXT, files["ref"], " "), "ref_text is empty.*ASR"),
        ((GEN_TEXT, files["ref"].parent / "none.wav", REF_TEXT), "no such file"),
        ((GEN_TEXT, torch.zeros(2, 100), REF_TEXT), "ref_audio must be a float waveform"),
    ]
    for args, pattern in cases:
        with pytest.raises(ValueError, match=pattern) as info:
            synth.synthesize(*args, TWO_STEPS)
        assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="reference audio is 22.0 s long"):
        synth.synthesize(GEN_TEXT, torch.zeros(22 * 24000) + 0.1, REF_TEXT, TWO_STEPS)
    long = files["ref"].parent / "long.flac"  # a file over the window: refused on its header, not decoded
    f5lite.save_audio(long, torch.zeros(30 * 8000), 8000)
    with pytest.raises(ValueError, match=r"long.flac' is 30.0 s long; the most accepted is 22 s"):
        synth.synthesize(GEN_TEXT, long, REF_TEXT, TWO_STEPS)


def test_official_checkpoint_loads_with_recipe_and_vocab(files, synth):
    loaded = f5lite.Synthesizer.from_pretrained(
        files["checkpoint"],
        vocoder=synth.vocoder,
        recipe="debug_tiny",
        vocab=ASSETS / "f5tts_compat" / "vocab.txt",
        device="cpu",
        dtype="bf16",
    )
    assert next(loaded.backbone.parameters()).dtype == torch.bfloat16
    for (name, ours), theirs in zip(
        synth.backbone.state_dict().items(), loaded.backbone.state_dict().values(), strict=True
    ):
        assert torch.equal(ours.to(theirs.dtype), theirs), name
    wave, _ = loaded.synthesize(GEN_TEXT, files["ref"], REF_TEXT, TWO_STEPS, seed=0)
    assert wave.dtype == torch.float32 and torch.isfinite(wave).all()
    with pytest.raises(ValueError, match="drop recipe/vocab"):
        f5lite.Synthesizer.from_pretrained(files["export"], vocoder=synth.vocoder, recipe="debug_tiny")


def test_device_names():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type in ("cpu", "cuda")
    with pytest.raises(ValueError, match="device='tpu'"):
        resolve_device("tpu")


def test_a_batch_of_pieces_is_each_piece_made_alone(synth, files):
    """`generate` is the server's batched call: each piece its own reference, words and length, as if alone."""
    quiet = synth.reference(f5lite.load_audio(files["ref"]) * 0.2, REF_TEXT)  # another loudness, same clip
    loud = synth.reference(files["ref"], REF_TEXT)
    short = synth.plan(loud, "DEAF CAB.").pieces[0]
    long = synth.plan(quiet, "HG FED, ABC 12. DEAF CAB, HG FED.").pieces[0]
    assert long.frames > short.frames
    together = synth.generate([short, long], TWO_STEPS, seed=0)
    alone = [synth.generate([piece], TWO_STEPS, seed=0)[0] for piece in (short, long)]
    assert [w.shape[0] for w in together] == [w.shape[0] for w in alone] == [short.samples, long.samples]
    # The longest piece of a batch sees no padding: the same sums in another order (fp32), at its own loudness. A
    # shorter one's text convolutions see the batch's padding past its end (as in F5-TTS's batches): length only.
    torch.testing.assert_close(together[1], alone[1], rtol=1e-4, atol=1e-5)


def test_the_stream_is_the_whole_speech_and_the_plan_knows_its_length(synth, files):
    reference = synth.reference(files["ref"], REF_TEXT)
    text = " ".join([GEN_TEXT] * 8)
    planned = synth.plan(reference, text, first_bytes=5)
    assert len(planned.pieces) == 2 and len(planned.pieces[0].text.encode()) <= 5  # "DEAF", then the rest
    with pytest.raises(ValueError, match="text is empty"):
        synth.plan(reference, " \n ")
    pieces = list(synth.stream(planned.pieces, TWO_STEPS, seed=0))
    assert len(pieces) == len(planned.pieces) and sum(p.shape[0] for p in pieces) == planned.samples()
    whole, _ = synth.synthesize(text, files["ref"], REF_TEXT, TWO_STEPS, seed=0)
    joined = synth.stream(synth.plan(reference, text).pieces, TWO_STEPS, seed=0)
    assert torch.equal(torch.cat(list(joined)), whole)
