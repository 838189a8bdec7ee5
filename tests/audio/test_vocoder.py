"""Vocoders: Vocos built from its config and loaded from a directory (or, mocked, the hub), and Griffin-Lim."""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml

import f5lite.audio.vocoder as vocoder_module
from f5lite.audio import (
    GriffinLimVocoder,
    VocosVocoder,
    load_vocoder,
    log_mel,
    samples_for_frames,
)

CONFIG = Path(__file__).parents[1] / "assets" / "vocos" / "config.yaml"


@pytest.fixture(scope="module")
def vocos() -> VocosVocoder:
    torch.manual_seed(0)
    return VocosVocoder.from_config(CONFIG)


@pytest.fixture(scope="module")
def vocos_dir(vocos: VocosVocoder, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A local copy of a Vocos hub repo: config.yaml plus pytorch_model.bin (the random weights of `vocos`)."""
    directory = tmp_path_factory.mktemp("vocos")
    shutil.copy(CONFIG, directory / "config.yaml")
    torch.save(vocos.vocos.state_dict(), directory / "pytorch_model.bin")
    return directory


def random_mel(batch: int, frames: int) -> torch.Tensor:
    return torch.randn(batch, frames, 100, generator=torch.Generator().manual_seed(1)) - 4


def test_vocos_decode_shape_and_layout(vocos: VocosVocoder) -> None:
    mel = random_mel(2, 37)

    wave = vocos.decode(mel)

    # Vocos' ISTFT head turns n frames into (n - 1) * 256 samples.
    assert wave.shape == (2, 36 * 256) == (2, samples_for_frames(37, "vocos"))
    # Our [b, frames, 100] layout goes to Vocos as its [b, 100, frames].
    assert torch.equal(wave, vocos.vocos.decode(mel.transpose(1, 2)))
    assert torch.isfinite(wave).all()
    assert (vocos.sample_rate, vocos.hop_length, vocos.mel_kind) == (24000, 256, "vocos")


def test_vocos_output_is_an_ordinary_tensor(vocos: VocosVocoder) -> None:
    wave = vocos.decode(random_mel(1, 5))
    wave *= 0.5  # would raise on an inference-mode tensor


def test_vocos_from_pretrained_directory(vocos: VocosVocoder, vocos_dir: Path) -> None:
    loaded = VocosVocoder.from_pretrained(vocos_dir)

    expected = vocos.vocos.state_dict()
    actual = loaded.vocos.state_dict()
    assert actual.keys() == expected.keys()
    assert all(torch.equal(actual[key], expected[key]) for key in expected)
    assert not loaded.training
    mel = random_mel(2, 37)
    assert torch.equal(loaded.decode(mel), vocos.decode(mel))


def test_vocos_missing_directory_or_files(tmp_path: Path, vocos_dir: Path) -> None:
    with pytest.raises(FileNotFoundError, match=re.escape(f"directory not found: '{tmp_path / 'nope'}'")):
        VocosVocoder.from_pretrained(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="has no config.yaml and no pytorch_model.bin"):
        VocosVocoder.from_pretrained(tmp_path)
    shutil.copy(vocos_dir / "config.yaml", tmp_path / "config.yaml")
    with pytest.raises(FileNotFoundError, match=re.escape(f"'{tmp_path}' has no pytorch_model.bin") + "$"):
        VocosVocoder.from_pretrained(str(tmp_path))
    with pytest.raises(FileNotFoundError, match="config file not found"):
        VocosVocoder.from_config(tmp_path / "missing.yaml")


def test_vocos_hub_download(vocos_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []

    def fake_download(**kwargs: Any) -> str:
        calls.append(kwargs)
        return str(vocos_dir / kwargs["filename"])

    monkeypatch.setattr(vocoder_module, "hf_hub_download", fake_download)

    VocosVocoder.from_pretrained("someone/vocos-test", revision="v1")

    assert [call["filename"] for call in calls] == ["config.yaml", "pytorch_model.bin"]
    assert all(call["repo_id"] == "someone/vocos-test" and call["revision"] == "v1" for call in calls)


def test_vocos_default_source_is_the_f5tts_vocoder(vocos_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repos: list[str] = []

    def fake_download(**kwargs: Any) -> str:
        repos.append(kwargs["repo_id"])
        return str(vocos_dir / kwargs["filename"])

    monkeypatch.setattr(vocoder_module, "hf_hub_download", fake_download)

    assert isinstance(load_vocoder("vocos"), VocosVocoder)
    assert repos == ["charactr/vocos-mel-24khz"] * 2


def test_vocos_hub_failure_is_explained(monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(**kwargs: Any) -> str:
        raise OSError("outgoing traffic has been disabled")

    monkeypatch.setattr(vocoder_module, "hf_hub_download", offline)
    with pytest.raises(OSError, match="config.yaml of 'ckpts/vocos' from the Hugging Face Hub.*no local directory"):
        VocosVocoder.from_pretrained("ckpts/vocos")


def test_existing_owner_name_directory_is_local(
    vocos_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(vocos_dir, tmp_path / "ckpts" / "vocos")
    monkeypatch.chdir(tmp_path)

    def must_not_download(**kwargs: Any) -> str:
        raise AssertionError(f"tried the hub for an existing directory: {kwargs}")

    monkeypatch.setattr(vocoder_module, "hf_hub_download", must_not_download)

    assert isinstance(VocosVocoder.from_pretrained("ckpts/vocos"), VocosVocoder)


def test_vocos_with_another_mel_is_rejected(tmp_path: Path) -> None:
    config = yaml.safe_load(CONFIG.read_text())
    config["feature_extractor"]["init_args"]["n_mels"] = 80
    config["backbone"]["init_args"].update(input_channels=80, dim=16, intermediate_dim=32, num_layers=1)
    config["head"]["init_args"]["dim"] = 16
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(ValueError, match="different mel"):
        VocosVocoder.from_config(path)


def test_decode_checks_the_mel(vocos: VocosVocoder) -> None:
    with pytest.raises(ValueError, match=r"\[batch, frames, 100\]"):
        vocos.decode(torch.randn(2, 100, 37))
    with pytest.raises(ValueError, match="too short"):
        vocos.decode(torch.randn(1, 1, 100))


def test_load_vocoder(vocos_dir: Path) -> None:
    vocos = load_vocoder("vocos", source=vocos_dir)
    assert isinstance(vocos, VocosVocoder) and not vocos.training
    assert isinstance(load_vocoder("griffin_lim"), GriffinLimVocoder)
    with pytest.raises(ValueError, match="'vocos', 'griffin_lim'"):
        load_vocoder("bigvgan")
    with pytest.raises(ValueError, match="no weights"):
        load_vocoder("griffin_lim", source=vocos_dir)


@pytest.mark.parametrize(("kind", "frames"), [("vocos", 4), ("vocos", 37), ("bigvgan", 3), ("bigvgan", 37)])
def test_griffin_lim_length(kind: str, frames: int) -> None:
    wave = GriffinLimVocoder(kind, n_iter=2).decode(random_mel(2, frames))
    assert wave.shape == (2, samples_for_frames(frames, kind))


@pytest.mark.parametrize(("kind", "frames"), [("vocos", 3), ("bigvgan", 2)])
def test_griffin_lim_too_few_frames(kind: str, frames: int) -> None:
    with pytest.raises(ValueError, match=f"mel of {frames} frames"):
        GriffinLimVocoder(kind, n_iter=2).decode(random_mel(1, frames))


@pytest.mark.parametrize("kind", ["vocos", "bigvgan"])
def test_griffin_lim_round_trip_of_a_sine(kind: str) -> None:
    t = torch.arange(36000) / 24000
    tone = 0.3 * torch.sin(2 * math.pi * 1000 * t)
    mel = log_mel(tone, kind)

    wave = GriffinLimVocoder(kind).decode(mel)[0]

    # Griffin-Lim's phase estimate leaves a mean log-mel error of about 0.15-0.2 here. For scale: a 6 dB level
    # error alone costs ln 2 = 0.69 on every bin above the floor, and a tone one semitone off about 0.6.
    assert (log_mel(wave, kind) - mel).abs().mean() < 0.3
    # Within one STFT bin (23.4 Hz), the resolution of the magnitudes Griffin-Lim starts from.
    peak_hz = float(torch.fft.rfft(wave).abs().argmax()) * 24000 / wave.shape[0]
    assert abs(peak_hz - 1000) < 24000 / 1024


def test_griffin_lim_is_deterministic_and_leaves_the_global_rng_alone() -> None:
    mel = random_mel(1, 20)
    vocoder = GriffinLimVocoder(n_iter=4)
    rng_state = torch.get_rng_state()

    first, second = vocoder.decode(mel), vocoder.decode(mel)

    assert torch.equal(first, second)
    assert torch.equal(torch.get_rng_state(), rng_state)


def test_griffin_lim_rejects_bad_settings() -> None:
    with pytest.raises(ValueError, match="n_iter"):
        GriffinLimVocoder(n_iter=0)
    with pytest.raises(ValueError, match="'vocos', 'bigvgan'"):
        GriffinLimVocoder("hifigan")


@pytest.mark.parametrize("section", ["feature_extractor", "backbone", "head"])
def test_a_config_naming_another_class_is_refused_before_anything_runs(
    vocos_dir: Path, tmp_path: Path, section: str
) -> None:
    """Vocos would import and call any `class_path`; a planted `os.system` must never run."""
    planted = tmp_path / "evil"
    shutil.copytree(vocos_dir, planted)
    marker = tmp_path / "pwned"
    config = yaml.safe_load(CONFIG.read_text())
    config[section] = {"class_path": "os.system", "init_args": {"command": f"touch {marker}"}}
    (planted / "config.yaml").write_text(yaml.safe_dump(config))
    message = rf"{section}\.class_path='os\.system' is not a Vocos class f5lite builds"
    with pytest.raises(ValueError, match=message):
        VocosVocoder.from_pretrained(planted)
    with pytest.raises(ValueError, match=message):
        load_vocoder("vocos", planted)
    assert not marker.exists()


def test_the_infer_command_refuses_a_planted_vocoder_in_one_line(
    vocos_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from support.infer_assets import make_model_files, make_reference

    from f5lite.infer.cli import main as infer

    planted = tmp_path / "evil"
    shutil.copytree(vocos_dir, planted)
    marker = tmp_path / "pwned"
    config = yaml.safe_load(CONFIG.read_text())
    config["backbone"] = {"class_path": "os.system", "init_args": {"command": f"touch {marker}"}}
    (planted / "config.yaml").write_text(yaml.safe_dump(config))
    export, _ = make_model_files(tmp_path)
    ref = make_reference(tmp_path)
    args = [f"model={export}", f"ref_audio={ref}", "ref_text=ABC.", "text=CAB.", f"output={tmp_path / 'o.wav'}"]
    assert infer([*args, "sample.vocoder=vocos", f"sample.vocoder_source={planted}", "device=cpu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "backbone.class_path='os.system'" in err
    assert not marker.exists()
