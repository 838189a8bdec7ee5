"""The studio's Speak as a user meets it (a real studio process, `gradio_client`): spaces typed into a reference
transcript count against its clip and lift no piece of speech, and a voice saved with them keeps its transcript as
the model reads it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest
import soundfile as sf
from gradio_client import Client, handle_file
from support.studio_assets import Studio, refused, workspace_with_tiny_model

from f5lite.paths import demo_dir

pytestmark = [pytest.mark.skipif(sys.platform != "linux", reason="the studio reads /proc"), pytest.mark.heavy]

REF = demo_dir() / "audio" / "us_male" / "000_us_male.ogg"
PROJECT = "proj"
SPACED = "The kettle started" + " " * 12_000 + "to whistle."


def speak_args(script: str, ref_text: str, **options: Any) -> list[Any]:
    """The /speak inputs: project, model, reference, its text, voice, script, steps, cfg, CFG-Zero*, speed, seed,
    seconds."""
    settings = {"steps": 2, "cfg": 2.0, "cfg_zero": False, "speed": 1.0, "seed": 0, "seconds": None, **options}
    return [PROJECT, "exports/tiny", handle_file(str(REF)), ref_text, "(the clip above)", script, *settings.values()]


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    studio = Studio(workspace_with_tiny_model(tmp_path_factory.mktemp("studio-bounds"), PROJECT))
    studio.start()
    try:
        yield studio
    finally:
        studio.stop()


def test_spaces_in_a_reference_transcript_lift_no_piece(studio: Studio) -> None:
    client: Client = studio.client  # type: ignore[assignment]
    # A frame per space made this one word's piece 12,000 frames (over two minutes of speech to compute).
    outputs = client.submit(*speak_args("Hello.", SPACED), api_name="/speak").result(timeout=120)
    assert sf.info(outputs[1]).duration < 5.0
    update, _ = client.predict(PROJECT, "Spacey", handle_file(str(REF)), SPACED, api_name="/save_voice")
    assert update["value"] == "Spacey"
    assert (studio.root / PROJECT / "voices" / "Spacey.txt").read_text() == "The kettle started to whistle.\n"


def test_spaces_count_against_the_clip(studio: Studio) -> None:
    client: Client = studio.client  # type: ignore[assignment]
    seconds = sf.info(str(REF)).duration
    letters = int(35 * seconds) - 2  # within the bound as letters alone; with a space after each, twice over it
    message = refused(client, *speak_args("Hello.", "a " * letters), api_name="/speak")
    assert "characters for" in message and "at most 35" in message
