"""No piece of speech is planned over the window, whatever lifts its frames: spaces in a reference transcript,
phonemes that outnumber letters, or `speed` packing more text into a piece.

The bounds hold in their order: a transcript is counted as the model reads it (its whitespace collapsed, spaces
included, then in the model's tokens) before anything is computed from it, and every lower bound on a piece's frames
is applied before the window cap, a piece being cut again where its lower bound alone would pass the window.
"""

from __future__ import annotations

import shutil

import pytest
import torch
from support.infer_assets import VOCAB_FILE
from support.tiny_models import tiny_backbone

from f5lite.audio import SAMPLE_RATE, GriffinLimVocoder
from f5lite.infer import Synthesizer, prepare_ref_text
from f5lite.infer.chunking import check_ref_text
from f5lite.infer.plan import WINDOW_FRAMES, Plan, fit_to_window
from f5lite.infer.reference import Reference
from f5lite.text import TextEncoder, load_vocab

WORDS = "The kettle started to whistle just as the phone rang, and nobody answered it. "
needs_espeak = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="the ipa tokenizer needs espeak-ng")


def synthesizer(tokenizer: str) -> Synthesizer:
    """The tiny DiT (random weights) with a text encoder of `tokenizer` (the char vocab: phonemes it lacks are id 0,
    still one id each)."""
    encoder = TextEncoder(tokenizer, load_vocab(VOCAB_FILE))
    return Synthesizer(tiny_backbone("dit").eval(), encoder, GriffinLimVocoder())


def clip(seconds: float) -> torch.Tensor:
    return 0.1 * torch.randn(round(seconds * SAMPLE_RATE), generator=torch.Generator().manual_seed(0))


def dense(seconds: float) -> str:
    """A transcript of `seconds` as fast as anyone speaks: 34 characters a second, spaces included."""
    return (WORDS * 20)[: int(34 * seconds) - 3].strip()


def assert_within(planned: Plan, synth: Synthesizer, text: str, window: int = WINDOW_FRAMES) -> None:
    """Every piece at least the model's lower bound and at most the window; the pieces say the whole text."""
    for piece in planned.pieces:
        lower = max(synth.encoder.length(piece.reference.text + piece.text), piece.reference.mel.shape[0]) + 1
        assert lower <= piece.frames <= window, (piece.frames, lower, piece.text[:40])
    said = "".join(piece.text for piece in planned.pieces).replace(" ", "")
    assert said == text.replace(" ", "")


def test_a_transcripts_whitespace_runs_collapse_and_its_spaces_count() -> None:
    assert prepare_ref_text("Hi" + " " * 10_000 + "there.\n\n\tBye") == "Hi there. Bye. "
    check_ref_text("a " * 35, 2.0)  # 70 characters in 2 s, spaces included: a fast speaker
    with pytest.raises(ValueError, match="71 characters for 2.0 s"):
        check_ref_text("a " * 35 + "b", 2.0)  # 36 letters alone would pass; with their spaces they do not


def test_spaces_in_a_voice_transcript_do_not_lift_its_pieces() -> None:
    synth = synthesizer("char")
    reference = synth.reference(clip(1.0), "Hi" + " " * 12_000 + "there.")
    assert reference.text == "Hi there. "
    planned = synth.plan(reference, "Hello.", max_frames=WINDOW_FRAMES)
    assert planned.pieces[0].frames < 200  # a word's worth, not a frame per space
    assert_within(planned, synth, "Hello.")


@pytest.mark.parametrize("speed", [1.0, 2.0, 4.0])
def test_speed_does_not_lift_a_piece_over_the_window(speed: float) -> None:
    # speed packs four times the text into a piece's byte budget, and a frame per character outgrows the window.
    synth = synthesizer("char")
    reference = synth.reference(clip(3.0), dense(3.0))
    text = (WORDS * 60)[:4000]
    planned = synth.plan(reference, text, speed, first_bytes=40, max_frames=WINDOW_FRAMES)
    assert_within(planned, synth, text)


@needs_espeak
@pytest.mark.parametrize("speed", [1.0, 4.0])
def test_phonemes_that_outnumber_letters_do_not_lift_a_piece_over_the_window(speed: float) -> None:
    synth = synthesizer("ipa")
    reference = synth.reference(clip(3.0), "The kettle started to whistle.")
    text = "www." * 1024  # 33 phoneme tokens for its 4 letters
    for window in (WINDOW_FRAMES, 700):
        planned = synth.plan(reference, text, speed, first_bytes=40, max_frames=window)
        assert_within(planned, synth, text, window)
    unbounded = synth.plan(reference, text, speed)  # f5lite-infer: the model's window all the same
    assert_within(unbounded, synth, text)


@needs_espeak
def test_a_transcript_within_its_characters_but_not_its_tokens_is_refused() -> None:
    synth = synthesizer("ipa")
    text = "www. " * 20  # 100 characters for 3 s pass; some 660 phonemes do not
    check_ref_text(prepare_ref_text(text), 3.0)
    with pytest.raises(ValueError, match=r"tokens for 3\.0 s of audio .*at most 35"):
        synth.reference(clip(3.0), text)


def test_a_huge_transcript_is_refused_on_its_characters_before_it_is_tokenized() -> None:
    synth = synthesizer("char")
    counted: list[str] = []
    real = synth.encoder.length

    def length(text: str) -> int:
        counted.append(text)
        return real(text)

    synth.encoder.length = length  # type: ignore[method-assign]
    with pytest.raises(ValueError, match="characters for 1.0 s"):
        synth.reference(clip(1.0), "word " * 100_000)
    assert counted == []
    synth.reference(clip(1.0), "Hello there.")
    assert counted == ["Hello there. "]  # a transcript within its characters is counted in tokens too


def test_a_reference_that_leaves_no_room_is_refused_in_one_line() -> None:
    synth = synthesizer("char")
    reference = synth.reference(clip(3.0), dense(3.0))
    with pytest.raises(ValueError, match="leaves no room to speak in a piece of at most 150 frames"):
        synth.plan(reference, "Hello.", max_frames=150)
    # Bytes as ids: one character can need more ids than a transcript leaves (one `plan` would have refused as
    # too long for its clip), and a character cannot be cut: refused rather than cut for ever.
    full = Reference("x" * (WINDOW_FRAMES - 4) + ". ", reference.wave, reference.rms, reference.mel)
    with pytest.raises(ValueError, match="'ü' is 2 tokens, more than the 1 the reference's transcript leaves"):
        fit_to_window(["a few words ü"], full, WINDOW_FRAMES, TextEncoder("byte").length)


def test_a_length_fixed_in_seconds_stays_within_a_window_the_caller_sets() -> None:
    synth = synthesizer("char")
    reference = synth.reference(clip(2.0), "Hello there.")
    capped = synth.plan(reference, "Hello.", seconds=60.0, max_frames=WINDOW_FRAMES)
    assert [piece.frames for piece in capped.pieces] == [WINDOW_FRAMES]
    asked = synth.plan(reference, "Hello.", seconds=30.0)  # f5lite-infer: the user's own length, past the window
    assert asked.pieces[0].frames > WINDOW_FRAMES
