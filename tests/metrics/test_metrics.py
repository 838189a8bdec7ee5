"""f5lite.metrics without speech models: text normalisation, WER/CER, mel distances, the metric API, errors."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import librosa
import numpy as np
import pytest
import torch
import torchaudio

import f5lite
from f5lite.metrics import (
    LOWER_IS_BETTER,
    EvalItem,
    MetricSettings,
    build_metrics,
    error_rate,
    normalize_text,
    score_item,
    summarize,
)
from f5lite.metrics.melmetrics import F0_FEW_PAIRS, MCD_ORDER, mel_cepstrum, mel_distances
from f5lite.paths import demo_dir

SR = 24000


def demo_clip(name: str) -> torch.Tensor:
    speaker = name.split("_", 1)[1]
    return f5lite.load_audio(demo_dir() / "audio" / speaker / f"{name}.ogg")


@pytest.fixture(scope="module")
def kettle() -> torch.Tensor:
    """us_male: "The kettle started to whistle just as the phone rang." """
    return demo_clip("000_us_male")


@pytest.fixture(scope="module")
def other_sentence() -> torch.Tensor:
    """us_male, another sentence."""
    return demo_clip("005_us_male")


# --- text normalisation and error rates ---------------------------------------------------------------------------


def test_english_normalisation_lowercases_strips_punctuation_and_keeps_inner_apostrophes() -> None:
    text = "  \"Don\u2019t\" STOP -- it's well-known,   right?! 'quoted' 20% "
    assert normalize_text(text, "en") == "don't stop it's well known right quoted 20"


def test_chinese_normalisation_removes_punctuation_and_spaces() -> None:
    assert normalize_text("你好，世界！ 「测试」 OK。", "zh") == "你好世界测试ok"
    assert normalize_text("ＡＢＣ，", "zh") == "abc"  # full-width forms folded


def test_wer_counts_word_errors_after_normalisation() -> None:
    assert error_rate("The cat sat on the mat.", "the CAT sat on the mat", "en") == 0.0
    # one substitution (hat), one deletion (the), one insertion (today) over 6 reference words
    assert error_rate("The cat sat on the mat.", "the hat sat on mat today", "en") == pytest.approx(3 / 6)
    assert error_rate("Hello there", "", "en") == 1.0


def test_cer_counts_characters_for_chinese() -> None:
    assert error_rate("你好，世界。", "你好世界", "zh") == 0.0
    assert error_rate("你好世界", "你好世", "zh") == pytest.approx(1 / 4)
    assert error_rate("你好世界", "你 好 世 界", "zh") == 0.0  # Paraformer separates characters with spaces


def test_error_rate_refuses_an_empty_reference_and_an_unknown_language() -> None:
    with pytest.raises(ValueError, match="nothing to score"):
        error_rate("?!", "hello", "en")
    with pytest.raises(ValueError, match="unknown language 'fr'"):
        error_rate("bonjour", "bonjour", "fr")


# --- mel-domain distances ---------------------------------------------------------------------------------------


def test_cepstrum_is_the_cosine_series_of_the_log_mel() -> None:
    bands = 100
    w = math.pi * (np.arange(bands) + 0.5) / bands
    log_mel = 0.7 + 2 * 0.3 * np.cos(3 * w) - 2 * 0.1 * np.cos(10 * w)  # c0 = 0.7, c3 = 0.3, c10 = -0.1
    cepstrum = mel_cepstrum(log_mel[None])
    expected = np.zeros(MCD_ORDER)
    expected[[2, 9]] = [0.3, -0.1]  # column d - 1 holds c_d
    np.testing.assert_allclose(cepstrum[0], expected, atol=1e-12)


def test_identical_audio_is_at_distance_zero(kettle: torch.Tensor) -> None:
    distances = mel_distances(kettle, SR, kettle, SR)
    pairs = distances.pop("f0_pairs")
    assert distances == {"mel_l1": 0.0, "mcd": 0.0, "f0_rmse": 0.0}
    # Every frame pYIN finds voiced pairs with itself on the diagonal path: a sentence gives far more than a few.
    assert isinstance(pairs, int) and F0_FEW_PAIRS < pairs < kettle.numel() / 256


def test_ground_truth_at_another_rate_is_resampled(kettle: torch.Tensor) -> None:
    at_48k = torchaudio.functional.resample(kettle, SR, 48000)
    distances = mel_distances(kettle, SR, at_48k, 48000)
    assert distances["mel_l1"] < 0.1 and distances["mcd"] < 1.0 and distances["f0_rmse"] < 5.0


def test_loudness_moves_the_log_mel_but_not_the_cepstral_distortion(kettle: torch.Tensor) -> None:
    """Half the amplitude shifts every unclamped log-mel bin by ln 2 and only c0, which MCD leaves out."""
    distances = mel_distances(kettle * 0.5, SR, kettle, SR)
    assert distances["mel_l1"] == pytest.approx(math.log(2), rel=0.05)
    assert distances["mcd"] < 0.1
    assert distances["f0_rmse"] < 5.0


def test_a_time_stretched_copy_is_much_closer_than_another_sentence(
    kettle: torch.Tensor, other_sentence: torch.Tensor
) -> None:
    stretched = torch.from_numpy(librosa.effects.time_stretch(kettle.numpy(), rate=1.2))
    assert abs(stretched.numel() / kettle.numel() - 1 / 1.2) < 0.02
    near = mel_distances(stretched, SR, kettle, SR)
    far = mel_distances(other_sentence, SR, kettle, SR)
    assert near.keys() == far.keys() == {"mel_l1", "mcd", "f0_rmse", "f0_pairs"}
    for key in near.keys() - {"f0_pairs"}:
        assert near[key] < 0.6 * far[key], (key, near[key], far[key])


def test_an_octave_up_is_1200_cents(kettle: torch.Tensor) -> None:
    """The clip declared as 48 kHz plays twice as fast: every F0 doubles."""
    assert mel_distances(kettle, 2 * SR, kettle, SR)["f0_rmse"] == pytest.approx(1200, abs=100)


def test_f0_error_is_left_out_when_nothing_is_voiced_in_both(kettle: torch.Tensor) -> None:
    distances = mel_distances(torch.zeros(SR), SR, kettle, SR)
    assert set(distances) == {"mel_l1", "mcd", "f0_pairs"} and distances["f0_pairs"] == 0


def test_mel_distances_refuse_bad_waveforms(kettle: torch.Tensor) -> None:
    with pytest.raises(ValueError, match=r"gt_audio must be a non-empty 1-D waveform"):
        mel_distances(kettle, SR, kettle[None], SR)
    with pytest.raises(ValueError, match="audio is too short"):
        mel_distances(kettle[:100], SR, kettle, SR)


# --- the metric API ---------------------------------------------------------------------------------------------


def test_mel_metric_scores_items_with_ground_truth_only(kettle: torch.Tensor) -> None:
    (metric,) = build_metrics(["mel"], MetricSettings())
    assert metric.name == "mel"
    with_gt = EvalItem("a", "text", kettle, SR, gt_audio=kettle, gt_sample_rate=SR)
    assert score_item([metric], with_gt) == mel_distances(kettle, SR, kettle, SR)
    assert score_item([metric], EvalItem("b", "text", kettle, SR)) == {}


def test_summarize_averages_each_numeric_key_over_the_rows_that_have_it() -> None:
    rows = [
        {"wer": 0.5, "transcript": "a", "sim": 0.9, "f0_pairs": 40},
        {"wer": 0.1, "transcript": "b", "f0_pairs": 0},
        {"wer": math.nan, "sim": 0.7, "mos": math.nan},
    ]
    summary = summarize(rows)
    # f0_pairs is a count: the summary gives the total the F0 errors rest on, not a mean.
    assert summary == {"wer": pytest.approx(0.3), "sim": pytest.approx(0.8), "f0_pairs": 40, "count": 3}
    assert all(type(value) is float for value in summary.values())
    assert summarize([]) == {"count": 0}


def test_every_numeric_result_key_has_a_direction() -> None:
    assert {key for key, lower in LOWER_IS_BETTER.items() if lower} == {"wer", "cer", "mel_l1", "mcd", "f0_rmse"}
    assert {key for key, lower in LOWER_IS_BETTER.items() if not lower} == {
        "sim",
        "sim_calibrated",
        "mos",
        "mos_sig",
        "mos_bak",
        "mos_p808",
    }


@pytest.mark.parametrize(
    ("names", "settings", "message"),
    [
        (["wer", "bleu"], MetricSettings(), "unknown metric 'bleu'; choose from: wer, sim, mos, mel"),
        (["mel", "mel"], MetricSettings(), "metric 'mel' is listed more than once"),
        (["mel"], MetricSettings(language="fr"), "unknown language 'fr'; choose one of: en, zh"),
        (["wer"], MetricSettings(asr="kaldi"), "unknown asr backend 'kaldi'; choose one of: pocketsphinx, whisper"),
        (["sim"], MetricSettings(speaker="ecapa:x"), "unknown speaker backend 'ecapa:x'; choose one of: resemblyzer"),
        (["mos"], MetricSettings(mos="nisqa"), "unknown mos backend 'nisqa'; choose one of: dnsmos, utmos"),
        (["wer"], MetricSettings(asr="whisper"), "asr backend 'whisper' needs a model: 'whisper:<local dir"),
        (["wer"], MetricSettings(asr="pocketsphinx:big"), "vocabulary directory 'big' does not exist"),
        (["wer"], MetricSettings(language="zh"), "'pocketsphinx' has only an English model"),
        (["wer"], MetricSettings(asr="whisper:./no/such/dir"), "model directory './no/such/dir' does not exist"),
        (["sim"], MetricSettings(speaker="wavlm:/no/such/dir"), "model directory '/no/such/dir' does not exist"),
        (["mos"], MetricSettings(mos="utmos:~/no/such"), "model directory '~/no/such' does not exist"),
    ],
)
def test_build_metrics_refuses_bad_names_and_backends_in_one_line(
    names: list[str], settings: MetricSettings, message: str
) -> None:
    with pytest.raises(ValueError) as caught:
        build_metrics(names, settings)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_model_file_is_not_a_model_directory(tmp_path: Path) -> None:
    (tmp_path / "model.bin").write_bytes(b"")
    with pytest.raises(ValueError, match="is a file; give the model's directory"):
        build_metrics(["wer"], MetricSettings(asr=f"whisper:{tmp_path / 'model.bin'}"))


@pytest.mark.parametrize(
    ("spec", "package"), [("faster-whisper:large-v3", "faster_whisper"), ("paraformer:x", "funasr")]
)
def test_a_hub_backend_without_its_package_names_it(spec: str, package: str) -> None:
    try:
        __import__(package)
    except ImportError:
        pass
    else:
        pytest.skip(f"{package} is installed")
    lang = "zh" if spec.startswith("paraformer") else "en"
    with pytest.raises(ImportError, match=f"needs the Python package '{package}': pip install") as caught:
        build_metrics(["wer"], MetricSettings(asr=spec, language=lang))
    assert "\n" not in str(caught.value)


BLOCKED = ("jiwer", "pocketsphinx", "resemblyzer", "speechmos", "onnxruntime", "librosa", "utmos_pytorch")


def test_without_the_eval_extra_the_package_imports_and_each_metric_says_what_to_install() -> None:
    """A process where the eval extra's packages cannot be imported (a training install)."""
    script = f"""
import sys
for name in {BLOCKED!r}:
    sys.modules[name] = None
import f5lite.metrics as ev
for name in ("wer", "sim", "mos", "mel"):
    try:
        ev.build_metrics([name], ev.MetricSettings())
    except ImportError as error:
        print(name, "|", error)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    lines = dict(line.split(" | ", 1) for line in done.stdout.strip().splitlines())
    assert set(lines) == {"wer", "sim", "mos", "mel"}, done.stdout + done.stderr
    assert (
        lines["wer"] == "asr backend 'pocketsphinx' needs the Python package 'pocketsphinx': pip install 'f5lite[eval]'"
    )
    assert "'resemblyzer'" in lines["sim"] and "pip install --no-deps resemblyzer==0.1.4" in lines["sim"]
    assert lines["mos"].startswith("mos backend 'dnsmos' needs the Python package 'speechmos")
    assert lines["mos"].endswith("pip install 'f5lite[eval]'")
    assert lines["mel"] == "the mel metric needs the Python package 'librosa': pip install 'f5lite[eval]'"
