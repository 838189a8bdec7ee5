"""`f5lite-studio` against a hostile but ordinary client: a real studio process driven through `gradio_client`.

One studio serves the module, from a workspace whose path holds `,`, `'`, `[` and spaces, with its login, an
`f5lite-serve` API key and a variable of its own in its environment and uploads limited to 1 MiB. Its project trains
on a copy of the demo dataset with the tiny recipe. The trainer gets the paths byte for byte and an allowed
override; what the "More overrides" field must not reach is refused in one line with nothing written, escaped
interpolations too, and no response shows a value of the studio's environment; a run's kept overrides edited on
disk are refused on resume; a second start, or two at once, leave one trainer, still stoppable; the jobs do not see
the studio's secrets; a reused pid is not a job; number fields and uploads keep to their limits.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError
from support.studio_assets import AUTH, Studio, refused, wait_for

from f5lite.config import compose_config
from f5lite.credentials import STUDIO_AUTH_ENV
from f5lite.paths import demo_dir
from f5lite.storage.lock import process_start
from f5lite.studio import jobs, training

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the studio's job handling reads /proc")

PROJECT = "proj"
SECRETS = {STUDIO_AUTH_ENV: ":".join(AUTH), "F5LITE_API_KEY": "key-of-the-server"}
PRIVATE = {"F5LITE_TEST_PRIVATE": "a-value-only-the-studio-knows"}
"""An ordinary variable of the studio's environment (its jobs inherit it): no response may show it either."""


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    root = tmp_path_factory.mktemp("security") / "wo,rk's [x]" / "work space"
    shutil.copytree(demo_dir(), root / PROJECT / "dataset")
    studio = Studio(root, args=["--max-upload-mb", "1"], env={**SECRETS, **PRIVATE})
    studio.start()
    try:
        yield studio
    finally:
        studio.stop()
        for job in (*(root / PROJECT / "runs").glob("*/studio"), *(root / PROJECT / "jobs").glob("*")):
            jobs.stop(job)  # a failed test may leave a trainer running


@pytest.fixture(scope="module")
def client(studio: Studio) -> Client:
    assert studio.client is not None
    return studio.client


def plan(extra: str = "", updates: float = 100_000, lr: float | None = None) -> list[Any]:
    """The /start_training inputs after project and run: recipe, mode, base, base vocab, updates, lr, frames,
    precision, LoRA rank, every, more overrides."""
    return ["debug_tiny", "scratch", None, "", updates, lr, None, "no", 4, 1000, extra]


def call_raw(studio: Studio, api_name: str, data: str) -> str:
    """What the page answers a call whose inputs are the JSON text `data`, sent as it is (logged in)."""
    with httpx.Client(base_url=studio.url, timeout=60) as http:
        assert http.post("login", data={"username": AUTH[0], "password": AUTH[1]}).status_code == 200
        body, json_type = f'{{"data": {data}}}', {"content-type": "application/json"}
        event = http.post(f"gradio_api/call/{api_name}", content=body, headers=json_type).json()["event_id"]
        return http.get(f"gradio_api/call/{api_name}/{event}").text


def running_trainers(studio: Studio) -> list[str]:
    """The project's runs whose trainer is running."""
    return [p.parent.name for p in (studio.root / PROJECT / "runs").glob("*/studio") if jobs.state(p).running]


def stop_and_wait(client: Client, studio: Studio, run: str) -> None:
    assert client.predict(PROJECT, run, api_name="/stop_training").startswith("Stopping")
    wait_for(lambda: not jobs.state(studio.root / PROJECT / "runs" / run / "studio").running, 60, "the stop")


def test_overrides_that_leave_the_allow_list_are_refused_and_nothing_is_written(client: Client, studio: Studio) -> None:
    runs = studio.root / PROJECT / "runs"
    for token, why in (
        (f"run_dir={studio.root.parent.parent}/elsewhere", "set with the Run name"),
        ("+foo=1", "not added or deleted"),
        ("hydra.run.dir=x", "not a setting the page may change"),
        ("optim.lr=${oc.env:F5LITE_STUDIO_AUTH}", "set with the Learning rate field"),
        ("optim.eps=${oc.env:F5LITE_STUDIO_AUTH}", "interpolations"),
        ("data.dir=/etc", "set with the Data tab's dataset"),
    ):
        message = refused(client, PROJECT, "bad", *plan(f"optim.eps=1e-6 {token}"), api_name="/start_training")
        assert f"override {token!r} is refused" in message and why in message, message
    assert "optim.eps=abc" in refused(client, PROJECT, "bad", *plan("optim.eps=abc"), api_name="/start_training")
    assert not (runs / "bad").exists() and not (studio.root.parent.parent / "elsewhere").exists()
    assert running_trainers(studio) == []

    # A run's kept overrides stay as they were when a new plan for it is refused.
    kept = runs / "kept" / "studio" / "overrides.json"
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text('["kept"]')
    refused(client, PROJECT, "kept", *plan("+foo=1"), api_name="/start_training")
    assert kept.read_text() == '["kept"]'


def test_escaped_interpolations_are_refused_and_no_response_shows_a_secret(client: Client, studio: Studio) -> None:
    runs = studio.root / PROJECT / "runs"
    secrets = [*SECRETS.values(), *PRIVATE.values(), AUTH[1]]
    for variable in (*SECRETS, *PRIVATE):
        for value in (
            f"$\\{{oc.env:{variable}\\}}",  # Hydra un-escapes \{ and \}: ${oc.env:...}, which OmegaConf resolves
            f"\\$\\{{oc.env:{variable}\\}}",
            f"'$\\{{oc.env:{variable}\\}}'",
            f"[wer,$\\{{oc.env:{variable}\\}}]",
            f"$\\{{oc.decode:'$\\{{oc.env:{variable}\\}}'\\}}",
        ):
            for key in ("ema.device", "eval.metrics"):
                token = f"{key}={value}"
                message = refused(client, PROJECT, "leak", *plan(f"ema.decay=0.5 {token}"), api_name="/start_training")
                assert f"override {token!r} is refused" in message, message
                assert not [secret for secret in secrets if secret in message], message
    assert not (runs / "leak").exists()

    # A run's kept overrides edited on disk: Resume refuses the file in one line naming it and the token.
    written = training.Plan("debug_tiny", extra=("ema.device=cpu",)).overrides(
        studio.root / PROJECT / "dataset", runs / "tampered"
    )
    saved = runs / "tampered" / "studio" / "overrides.json"
    saved.parent.mkdir(parents=True)
    for token in (f"ema.device=$\\{{oc.env:{STUDIO_AUTH_ENV}\\}}", f"data.dir='${{oc.env:{STUDIO_AUTH_ENV}}}'"):
        saved.write_text(json.dumps([*written, token]))
        message = refused(client, PROJECT, "tampered", api_name="/resume_training")
        assert f"{saved}: override {token!r} is refused" in message, message
        assert not [secret for secret in secrets if secret in message], message
    assert not (saved.parent / jobs.JOB_FILE).exists() and running_trainers(studio) == []


def test_one_training_per_project_with_literal_paths_an_allowed_override_and_no_secrets(
    client: Client, studio: Studio
) -> None:
    runs = studio.root / PROJECT / "runs"
    update, note = client.predict(
        PROJECT, "a", *plan("optim.weight_decay=0.05 ema.decay=0.5"), api_name="/start_training"
    )
    assert "Started" in note
    try:
        # A second start, a start of a run with kept overrides and a resume are refused while "a" trains.
        assert "run 'a' of project 'proj' is training" in refused(
            client, PROJECT, "b", *plan(), api_name="/start_training"
        )
        (runs / "kept" / "studio").mkdir(parents=True, exist_ok=True)
        kept = json.dumps(["+recipe=debug_tiny", "seed=1"])
        (runs / "kept" / "studio" / "overrides.json").write_text(kept)
        assert "is training" in refused(client, PROJECT, "kept", *plan(), api_name="/start_training")
        assert "is training" in refused(client, PROJECT, "kept", api_name="/resume_training")
        assert not (runs / "b").exists() and (runs / "kept" / "studio" / "overrides.json").read_text() == kept
        assert running_trainers(studio) == ["a"]

        # The trainer's environment lacks the studio's secrets, which the studio's own holds.
        wrapper = json.loads((runs / "a" / "studio" / "job.json").read_text())["pid"]
        children = Path(f"/proc/{wrapper}/task/{wrapper}/children")
        trainer = int(wait_for(lambda: children.read_text().split(), 30, "the trainer's start")[0])
        studio_env = Path(f"/proc/{studio.process.pid}/environ").read_bytes() if studio.process else b""
        assert all(f"{name}=".encode() in studio_env for name in SECRETS)
        for pid in (wrapper, trainer):
            names = {entry.split(b"=")[0].decode() for entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")}
            assert not names & set(SECRETS), names

        # The lock, not job.json, keeps the one training: a studio that lost track of "a" cannot start another.
        record = (runs / "a" / "studio" / "job.json").read_text()
        (runs / "a" / "studio" / "job.json").write_text("{}")
        try:
            assert "another run of project 'proj' is training" in refused(
                client, PROJECT, "b", *plan(), api_name="/start_training"
            )
        finally:
            (runs / "a" / "studio" / "job.json").write_text(record)
        assert not (runs / "b").exists()

        # The overrides compose, as the trainer composes them, into the paths as they are and the allowed settings.
        cfg = compose_config(json.loads((runs / "a" / "studio" / "overrides.json").read_text()))
        assert cfg.run_dir == str(runs / "a") and cfg.data.dir == str(studio.root / PROJECT / "dataset")
        assert cfg.optim.weight_decay == 0.05 and cfg.ema.decay == 0.5
    finally:
        stop_and_wait(client, studio, "a")
    info = client.predict(PROJECT, "a", api_name="/run_status")[0]
    assert "stopped" in info, info


@pytest.mark.slow
def test_the_trainer_gets_the_paths_byte_for_byte_and_the_allowed_overrides(client: Client, studio: Studio) -> None:
    run = studio.root / PROJECT / "runs" / "e"
    client.predict(PROJECT, "e", *plan("optim.weight_decay=0.05 ema.decay=0.5"), api_name="/start_training")
    try:
        wait_for((run / "config.yaml").is_file, 120, "the trainer's config")
        cfg = yaml.safe_load((run / "config.yaml").read_text())
        assert cfg["run_dir"] == str(run) and cfg["data"]["dir"] == str(studio.root / PROJECT / "dataset")
        assert cfg["optim"]["weight_decay"] == 0.05 and cfg["ema"]["decay"] == 0.5
    finally:
        stop_and_wait(client, studio, "e")


def test_starts_at_once_start_one_trainer(client: Client, studio: Studio) -> None:
    for run in ("c", "d"):  # two runs to resume: a resume composes nothing, so the starts below meet at the lock
        client.predict(PROJECT, run, *plan(), api_name="/start_training")
        stop_and_wait(client, studio, run)
    calls = [((PROJECT, "c"), "/resume_training"), ((PROJECT, "d"), "/resume_training")]
    calls += [((PROJECT, "e", *plan()), "/start_training")] * 2
    submitted = [client.submit(*args, api_name=api) for args, api in calls]
    outcomes = []
    for job in submitted:
        try:
            answer = job.result(timeout=60)
            outcomes.append(answer if isinstance(answer, str) else answer[1])
        except AppError as err:
            outcomes.append(str(err))
    started = [o for o in outcomes if o.startswith(("Started", "Resumed"))]
    assert len(started) == 1 and sum("is training" in o for o in outcomes) == 3, outcomes
    running = running_trainers(studio)
    assert len(running) == 1, running
    stop_and_wait(client, studio, running[0])  # the one started can still be stopped
    assert running_trainers(studio) == []


def test_a_reused_pid_reads_as_no_job_and_is_not_signalled(client: Client, studio: Studio) -> None:
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        folder = studio.root / PROJECT / "jobs" / "eval"
        folder.mkdir(parents=True)
        record = {"command": ["f5lite-eval"], "pid": other.pid, "started": 0.0, "process_start": "another-boot:1"}
        (folder / jobs.JOB_FILE).write_text(json.dumps(record))
        assert process_start(other.pid) != record["process_start"]
        assert "Evaluation: **lost**" in client.predict(PROJECT, api_name="/jobs_status")[0]
        assert client.predict(PROJECT, "eval", api_name="/stop_job") == "No eval job is running."
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_numbers_out_of_range_and_uploads_over_the_limit_are_refused(
    client: Client, studio: Studio, tmp_path: Path
) -> None:
    assert "maximum" in refused(client, PROJECT, "big", *plan(updates=10**9), api_name="/start_training")
    # A NaN passes Gradio's own bounds (gradio_client cannot send one; a script can): the handler refuses it.
    nan_plan = json.dumps([PROJECT, "nan", *plan(lr=float("nan"))])  # Python's JSON writes NaN
    assert "Learning rate must be a number from 0 to 1, not nan" in call_raw(studio, "start_training", nan_plan)
    assert "maximum" in refused(client, PROJECT, 10**6, api_name="/transcribe")
    assert not (studio.root / PROJECT / "runs" / "big").exists()

    small, large = tmp_path / "small.wav", tmp_path / "large.wav"
    import numpy as np
    import soundfile as sf

    sf.write(small, np.zeros(24_000, dtype="float32"), 24_000)
    sf.write(large, np.zeros(24_000 * 30, dtype="float32"), 24_000)  # 2.9 MB
    with pytest.raises(ValueError, match="exceeds the maximum file size of 1048576 bytes"):  # gradio_client's own
        client.predict(PROJECT, [handle_file(str(large))], api_name="/add_recordings")
    with httpx.Client(base_url=studio.url, timeout=60) as http:  # a client that does not check: the server refuses
        assert http.post("login", data={"username": AUTH[0], "password": AUTH[1]}).status_code == 200
        answer = http.post("gradio_api/upload", files={"files": ("large.wav", large.read_bytes())})
        assert answer.status_code == 413 and "maximum allowed size" in answer.text, answer.text
    assert "Added 1" in client.predict(PROJECT, [handle_file(str(small))], api_name="/add_recordings")
    assert sorted(p.name for p in (studio.root / PROJECT / "raw").iterdir()) == ["small.wav"]
