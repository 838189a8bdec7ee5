"""`f5lite-studio` as a user meets it: a real studio process on a free port, every tab driven through `gradio_client`.

One studio (behind a login) serves a workspace for the whole module. Its project starts with the tiny random test
model as an export; the Data tab turns two raw recordings into a dataset (transcription, proofreading, the
vocabulary check against the tiny model, preparation), the Train tab fine-tunes the tiny model on it (start,
progress, a second start refused, stop with a checkpoint, a restart of the studio that finds the run training,
resume), and Evaluate & export scores and exports the run; the export is spoken by `f5lite-infer`.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import soundfile as sf
import torch
from gradio_client import Client, handle_file
from support.studio_assets import AUTH, Studio, refused, wait_for, workspace_with_tiny_model
from support.transcribe_assets import build_recording

from f5lite.paths import demo_dir

# A real studio process driven tab by tab: end to end, minutes in all (`make test-heavy`, which CI runs).
pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="the studio's job handling reads /proc"),
    pytest.mark.heavy,
]

REF = demo_dir() / "audio" / "us_male" / "000_us_male.ogg"
REF_TEXT = "The kettle started to whistle just as the phone rang."
PROJECT = "proj"
PAGE_VOICE = "(the clip above)"


SAMPLER_ARGS = ("sample.sway=0", "sample.schedule=uniform")
"""The studio's command-line sampler settings: Speak applies them besides the page's steps, guidance and speed."""


def speak_args(script: str, *, ref: Any = None, text: str = REF_TEXT, voice: str = PAGE_VOICE, **options: Any) -> list:
    """The /speak inputs: project, model, reference, its text, voice, script, steps, cfg, CFG-Zero*, speed, seed,
    seconds."""
    settings = {"steps": 4, "cfg": 2.0, "cfg_zero": False, "speed": 1.0, "seed": 0, "seconds": None, **options}
    reference = handle_file(str(REF)) if ref is None else ref
    return [PROJECT, "exports/tiny", reference, text, voice, script, *settings.values()]


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    root = workspace_with_tiny_model(tmp_path_factory.mktemp("studio"), PROJECT)
    studio = Studio(root, args=SAMPLER_ARGS)  # the sampler's settings the page has no control for
    studio.start()
    try:
        yield studio
    finally:
        studio.stop()
        for run in (root / PROJECT / "runs").glob("*/studio"):  # a failed test may leave a trainer running
            subprocess.run([sys.executable, "-c", f"from f5lite.studio import jobs; jobs.stop(__import__('pathlib').Path({str(run)!r}))"], check=False)  # fmt: skip


@pytest.fixture(scope="module")
def client(studio: Studio) -> Client:
    assert studio.client is not None
    return studio.client


def test_the_studio_asks_for_its_login_and_serves_no_file_outside_the_workspace(studio: Studio) -> None:
    with pytest.raises(Exception, match="(?i)login|auth|401|403"):
        Client(studio.url, verbose=False)
    # Logged in, a file outside the workspace is not served, whatever the path.
    with httpx.Client(base_url=studio.url) as http:
        assert http.post("login", data={"username": AUTH[0], "password": AUTH[1]}).status_code == 200
        for path in ("/etc/passwd", str(Path(__file__).resolve()), f"{studio.root}/../studio-{studio.port}.log"):
            assert http.get(f"gradio_api/file={path}").status_code in (403, 404), path


def test_names_that_could_leave_the_workspace_are_refused(client: Client, studio: Studio) -> None:
    for name in ("../x", "a/b", ".hidden", "", "/etc", "x" * 65):
        assert "is not valid" in refused(client, name, api_name="/create_project")
    assert not (studio.root.parent / "x").exists()
    update, note = client.predict("second.project-1", api_name="/create_project")
    assert update["value"] == "second.project-1" and (studio.root / "second.project-1").is_dir()
    assert "is not valid" in refused(client, PROJECT, "../../x", None, "", api_name="/save_voice")
    assert "is not valid" in refused(client, PROJECT, "../x", api_name="/run_status")
    assert "outside" in refused(client, PROJECT, "../../exports/tiny/config.json", api_name="/open_clip")


def test_speak_streams_and_returns_the_speech_the_library_makes(client: Client, studio: Studio) -> None:
    from f5lite.infer import Synthesizer
    from f5lite.sampling import SamplerOptions
    from f5lite.studio import speak

    script = "Hello there, this is the studio. It speaks a second sentence, too."
    job = client.submit(*speak_args(script), api_name="/speak")
    outputs = job.result(timeout=300)
    assert len(job.outputs()) >= 3  # one update per piece made, then the whole
    wave, rate = sf.read(outputs[1], dtype="float32")
    assert Path(outputs[2]).suffix == ".png" and "s of speech" in outputs[3]
    synthesizer = Synthesizer.from_pretrained(studio.root / PROJECT / "exports" / "tiny", "griffin_lim", device="cpu")
    reference = speak.load_reference(REF, REF_TEXT)
    options = SamplerOptions(steps=4, sway=0.0, schedule="uniform")  # the page's steps, the command line's rest
    pieces = list(speak.speak(synthesizer, [(reference, script)], options, seed=0))
    assert len(pieces) >= 2 and rate == 24_000
    # What the library makes, to the studio's 16-bit samples.
    torch.testing.assert_close(torch.from_numpy(wave), torch.cat(pieces).clamp(-1, 1), rtol=0, atol=1.5 / 32767)
    saved = sorted((studio.root / PROJECT / "speech").glob("*.wav"))
    assert saved and sf.info(str(saved[-1])).frames == wave.shape[0]

    fixed = client.predict(*speak_args("A fixed length.", seconds=2.0), api_name="/speak")
    assert abs(sf.info(fixed[1]).duration - 2.0) < 0.02


def test_speak_with_saved_voices_and_every_refusal(client: Client, studio: Studio) -> None:
    heard = client.predict(handle_file(str(REF)), api_name="/transcribe_reference")
    assert heard.strip()  # PocketSphinx's hearing of the clip, offline
    update, note = client.predict(PROJECT, "Alice", handle_file(str(REF)), REF_TEXT, api_name="/save_voice")
    assert update["value"] == "Alice" and "Alice" in note
    voices = studio.root / PROJECT / "voices"
    assert (voices / "Alice.txt").read_text().strip() == REF_TEXT and sf.info(
        str(voices / "Alice.wav")
    ).samplerate == 24_000
    one = client.predict(*speak_args("Good morning to you all."), api_name="/speak")
    two = client.predict(*speak_args("Good morning. {Alice} Good morning to you all."), api_name="/speak")
    assert sf.info(two[1]).frames > sf.info(one[1]).frames
    # A script spoken by saved voices only needs no clip on the page.
    assert client.predict(*speak_args("{Alice} Only Alice speaks.", ref=None, voice="Alice"), api_name="/speak")[1]

    assert "saved voices: Alice" in refused(client, *speak_args("Hi. {Bob} Hello."), api_name="/speak")
    assert "text is empty" in refused(client, *speak_args("  {Alice}  "), api_name="/speak")
    no_clip = speak_args("Hello.")
    no_clip[2] = None
    assert "no reference audio" in refused(client, *no_clip, api_name="/speak")
    assert "needs one voice" in refused(client, *speak_args("Hi. {Alice} Hi.", seconds=2.0), api_name="/speak")
    not_audio = studio.root.parent / "notes.wav"
    not_audio.write_text("not audio")
    assert "cannot read audio file" in refused(
        client, *speak_args("Hello.", ref=handle_file(str(not_audio))), api_name="/speak"
    )
    wrong_model = speak_args("Hello.")
    wrong_model[1] = "exports/none"
    assert "no model picked" in refused(client, *wrong_model, api_name="/speak")


@pytest.fixture(scope="module")
def prepared(client: Client, studio: Studio, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The Data tab from raw recordings to a dataset; what each step answered."""
    raw = tmp_path_factory.mktemp("raw")
    first = build_recording(raw / "take one.wav", "us_male", 6).path
    second = build_recording(raw / "take2.flac", "us_female", 6, rate=44_100, stereo=True).path
    junk = raw / "notes.txt"
    junk.write_text("not audio")
    seen: dict[str, Any] = {}
    seen["junk"] = refused(client, PROJECT, [handle_file(str(junk))], api_name="/add_recordings")
    seen["added"] = client.predict(
        PROJECT, [handle_file(str(first)), handle_file(str(second))], api_name="/add_recordings"
    )
    seen["started"] = client.predict(PROJECT, 2, api_name="/transcribe")
    seen["again"] = refused(client, PROJECT, 1, api_name="/transcribe")
    statuses = []

    def transcribed() -> bool:
        statuses.append(client.predict(PROJECT, api_name="/data_status"))
        return "running" not in statuses[-1][0]

    wait_for(transcribed, 300, "transcription")
    seen["statuses"] = statuses
    table, picker = client.predict(PROJECT, api_name="/clips")
    seen["table"] = table["data"]
    first_clip, second_clip = seen["table"][0][0], seen["table"][1][0]
    seen["opened"] = client.predict(PROJECT, first_clip, api_name="/open_clip")
    client.predict(PROJECT, first_clip, "  A corrected   transcript.  ", api_name="/set_text")
    seen["empty_text"] = refused(client, PROJECT, first_clip, " ", api_name="/set_text")
    client.predict(PROJECT, second_clip, api_name="/drop_clip")
    seen["clips"] = (first_clip, second_clip)
    seen["vocab"] = client.predict(PROJECT, "exports/tiny", "char", api_name="/check_vocab")
    seen["prepare"] = client.predict(PROJECT, True, 1, api_name="/prepare")
    wait_for(lambda: "running" not in client.predict(PROJECT, api_name="/data_status")[1], 120, "preparation")
    seen["prepared"] = client.predict(PROJECT, api_name="/data_status")[1]
    return seen


def test_data_tab_turns_raw_recordings_into_a_dataset(prepared: dict[str, Any], studio: Studio) -> None:
    project = studio.root / PROJECT
    assert "notes.txt is not an audio file" in prepared["junk"]
    assert prepared["added"] == "Added 2 recording(s): take_one.wav, take2.flac"
    assert sorted(p.name for p in (project / "raw").iterdir()) == ["take2.flac", "take_one.wav"]
    assert "running" in prepared["started"] and "already running" in prepared["again"]
    assert "done" in prepared["statuses"][-1][0] and "12 clip(s) kept" in prepared["statuses"][-1][0]
    rows = prepared["table"]
    assert len(rows) == 12 and all(row[2] and row[1] >= 2.0 for row in rows)
    audio, text = prepared["opened"]
    assert sf.info(audio).duration == pytest.approx(rows[0][1], abs=0.01) and text == rows[0][2]
    first, dropped = (project / "transcribed" / "clips" / clip for clip in prepared["clips"])
    assert first.with_suffix(".txt").read_text() == "A corrected transcript.\n"
    assert "would be empty" in prepared["empty_text"]
    assert not dropped.exists() and not dropped.with_suffix(".txt").exists()
    # The tiny model's vocab holds capitals A-H and digits: the transcripts' lowercase letters are missing.
    assert "token(s) missing from" in prepared["vocab"] and "| `e` |" in prepared["vocab"]
    assert "done" in prepared["prepared"] and "kept 11 of 11" in prepared["prepared"]
    cuts = project / "dataset" / "cuts.jsonl.gz"
    assert cuts.is_file() and (project / "dataset" / "val" / "testset.txt").is_file()
    vocab = (project / "dataset" / "vocab.txt").read_text().splitlines()
    tiny = (project / "exports" / "tiny" / "vocab.txt").read_text().splitlines()
    assert vocab[: len(tiny)] == tiny and len(vocab) > len(tiny)


def test_a_dataset_without_speech_gets_a_message(client: Client, studio: Studio, tmp_path: Path) -> None:
    import numpy as np

    client.predict("quiet", api_name="/create_project")
    noise = tmp_path / "room.wav"
    sf.write(noise, np.random.default_rng(0).normal(0, 0.002, 24_000 * 6).astype("float32"), 24_000)
    client.predict("quiet", [handle_file(str(noise))], api_name="/add_recordings")
    client.predict("quiet", 1, api_name="/transcribe")
    wait_for(lambda: "running" not in client.predict("quiet", api_name="/data_status")[0], 120, "transcription")
    status = client.predict("quiet", api_name="/data_status")[0]
    assert "failed" in status and "no speech: room.wav" in status
    assert "no transcribed clips" in refused(client, "quiet", False, 0, api_name="/prepare")
    assert "no prepared dataset" in refused(client, "quiet", "r", *plan(), api_name="/start_training")
    assert "no recordings" in refused(client, "second.project-1", 1, api_name="/transcribe")


def plan(updates: int = 400, every: int = 10, mode: str = "scratch", base: str | None = None) -> list:
    """The /start_training inputs after project and run: recipe, mode, base, base vocab, updates, lr, frames,
    precision, LoRA rank, every, more overrides."""
    return ["debug_tiny", mode, base, "", updates, None, None, "no", 4, every, ""]


def status(client: Client, run: str) -> tuple[str, dict[str, Any], Any, str]:
    return client.predict(PROJECT, run, api_name="/run_status")


def info_when(client: Client, run: str, ready: Any, timeout: float, what: str) -> str:
    """The run's status line, once `ready(line)` holds."""

    def check() -> str | None:
        line = status(client, run)[0]
        return line if ready(line) else None

    return str(wait_for(check, timeout, what))


def update_of(info: str) -> int:
    return int(info.split("update ")[1].split(";")[0].split()[0])


def test_train_tab_fine_tunes_stops_survives_a_studio_restart_and_resumes(
    prepared: dict[str, Any], studio: Studio
) -> None:
    client = studio.client
    assert client is not None
    frames, precision, reason = client.predict("debug_tiny", api_name="/propose")
    assert precision == "no" and 0 < frames <= 4000 and "CPU" in reason
    run_dir = studio.root / PROJECT / "runs" / "ft"
    update, note = client.predict(PROJECT, "ft", *plan(mode="full", base="exports/tiny"), api_name="/start_training")
    assert update["value"] == "ft" and "Started" in note
    assert "is training" in refused(client, PROJECT, "other", *plan(), api_name="/start_training")
    info = info_when(client, "ft", lambda line: update_of(line) >= 10, 180, "progress")
    assert "running" in info
    overrides = json.loads((run_dir / "studio" / "overrides.json").read_text())
    assert f"init.weights='{studio.root / PROJECT / 'exports' / 'tiny'}'" in overrides

    # The studio goes away and comes back: the run trains on, and the new studio sees it training.
    studio.stop()
    studio.start()
    client = studio.client
    assert client is not None
    info, curve, sample, log = status(client, "ft")
    assert "running" in info, (info, log)
    assert client.predict(PROJECT, "ft", api_name="/stop_training").startswith("Stopping")
    info = info_when(client, "ft", lambda line: "running" not in line, 120, "stop")
    assert "stopped" in info, info
    stopped_at = update_of(info)
    assert (run_dir / "checkpoints" / f"step-{stopped_at:08d}").is_dir()
    assert "checkpoint at update" in status(client, "ft")[3]
    info, curve, sample, log = status(client, "ft")
    losses = [row for row in curve["data"] if row[2] == "loss" and row[0] is not None]
    assert len(losses) >= stopped_at // 10 and all(row[1] > 0 for row in losses)
    assert any(row[2] == "validation loss" and row[1] is not None for row in curve["data"])
    assert sample is not None and sf.info(sample).duration > 0  # the newest training sample
    assert sorted((run_dir / "logs" / "samples" / "sample").glob("update-*.wav"))

    assert "Resumed" in client.predict(PROJECT, "ft", api_name="/resume_training")
    info = info_when(client, "ft", lambda line: update_of(line) > stopped_at, 180, "resume")
    assert "running" in info
    assert f"(update {stopped_at})" in (run_dir / "studio" / "output.log").read_text()  # "resumed from ..."
    client.predict(PROJECT, "ft", api_name="/stop_training")
    wait_for(lambda: "stopped" in status(client, "ft")[0], 120, "second stop")
    assert "not training" in client.predict(PROJECT, "ft", api_name="/stop_training")


def test_evaluate_and_export_tab(prepared: dict[str, Any], studio: Studio, tmp_path: Path) -> None:
    client = studio.client
    assert client is not None
    if not (studio.root / PROJECT / "runs" / "ft" / "checkpoints").is_dir():
        pytest.skip("needs the run of the training test")
    assert "running" in client.predict(PROJECT, "ft", "voice", False, api_name="/export")
    jobs = lambda: client.predict(PROJECT, api_name="/jobs_status")  # noqa: E731
    wait_for(lambda: "running" not in jobs()[1], 120, "export")
    assert "done" in jobs()[1], jobs()[1]
    assert "exists" in refused(client, PROJECT, "ft", "voice", False, api_name="/export")
    export = studio.root / PROJECT / "exports" / "voice"
    models = client.predict(PROJECT, api_name="/list_models")["choices"]
    assert ["exports/voice", "exports/voice"] in models and ["runs/ft (newest checkpoint)"] * 2 in models

    out = tmp_path / "spoken.wav"
    from f5lite.infer.cli import main as infer

    spoken = [f"model={export}", f"ref_audio={REF}", f"ref_text={REF_TEXT}", "text=Spoken by the export."]
    assert infer([*spoken, f"output={out}", "sample.vocoder=griffin_lim", "sample.steps=4", "device=cpu"]) == 0
    assert sf.info(str(out)).duration > 0.5

    client.predict(PROJECT, "ft", "voice-pruned", True, api_name="/export")
    wait_for(lambda: "running" not in jobs()[1], 120, "pruning")
    pruned = list((studio.root / PROJECT / "exports" / "voice-pruned").glob("model_*.safetensors"))
    assert len(pruned) == 1 and pruned[0].stat().st_size < sum(f.stat().st_size for f in export.glob("*.safetensors"))

    archive = client.predict(PROJECT, "exports", "voice", api_name="/download")
    assert {"model.safetensors", "config.json", "vocab.txt"} <= set(zipfile.ZipFile(archive).namelist())
    assert "no export" in refused(client, PROJECT, "exports", "nothing", api_name="/download")

    assert "running" in client.predict(PROJECT, "exports/voice", "first", 4, api_name="/evaluate")
    wait_for(lambda: "running" not in jobs()[0], 300, "evaluation")
    assert "done" in jobs()[0], jobs()[0]
    summary, report = client.predict(PROJECT, "first", api_name="/show_evaluation")
    assert summary["means"]["count"] == 1 and "mel_l1" in summary["means"]
    assert report.startswith("<iframe") and "srcdoc=" in report and "&lt;table id=&quot;summary&quot;" in report
    assert "is not valid" in refused(client, PROJECT, "exports/voice", "../up", 4, api_name="/evaluate")


def test_command_line_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from f5lite.studio.cli import main

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for args, message in (
            (["--port", str(port)], "is in use"),
            (["--port", "0"], "is not a port number"),
            (["--auth", "nopassword"], "--auth must be USER:PASSWORD"),
            (["--max-upload-mb", "0"], "--max-upload-mb 0 must be at least 1"),
        ):
            assert main(["--root", str(tmp_path / "ws"), *args]) == 2
            err = capsys.readouterr().err
            assert message in err and len(err.strip().splitlines()) == 1
