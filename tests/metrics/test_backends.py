"""f5lite.metrics backends with real models: the offline ones on the demo data, the hub-style ones on tiny local models.

The offline backends ship their weights in their wheels (pocketsphinx, Resemblyzer, DNSMOS). Whisper and WavLM are
tested as the user loads a downloaded checkpoint: a tiny randomly initialised model saved with `save_pretrained`
into a directory; UTMOS likewise with random weights (slow: the model is wav2vec 2.0 base sized).
"""

from __future__ import annotations

import csv
import itertools
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
import torch
from support.tiny_models import save_tiny_whisper

import f5lite
from f5lite.metrics import EvalItem, MetricSettings, build_metrics, error_rate, score_item
from f5lite.metrics.asr import load_recognizer
from f5lite.metrics.speaker import cosine_similarity, load_speaker_encoder
from f5lite.paths import demo_dir

SR = 24000


@pytest.fixture(scope="module")
def demo_rows() -> list[dict[str, str]]:
    with open(demo_dir() / "metadata.csv", encoding="utf-8") as file:
        return list(csv.DictReader(file, delimiter="|"))


def load(row: dict[str, str]) -> torch.Tensor:
    return f5lite.load_audio(demo_dir() / row["audio_file"])


# --- offline backends on the demo data ----------------------------------------------------------------------------


@pytest.mark.heavy
def test_pocketsphinx_wer_of_matching_texts_is_much_lower_than_of_other_sentences(
    demo_rows: list[dict[str, str]],
) -> None:
    """Six clips of each US voice (pocketsphinx's model is US English; it recognises little of espeak's en-gb voices).

    Each transcript is also scored against three other clips' sentences: what an unintelligible model would get.
    """
    clips = [row for row in demo_rows if row["speaker"] == "us_male"][:6]
    clips += [row for row in demo_rows if row["speaker"] == "us_female"][:6]
    (metric,) = build_metrics(["wer"], MetricSettings(asr="pocketsphinx"))
    matched, mismatched = [], []
    for index, row in enumerate(clips):
        scores = score_item([metric], EvalItem(row["audio_file"], row["text"], load(row), SR))
        assert set(scores) == {"wer", "transcript"}
        wer, transcript = scores["wer"], scores["transcript"]
        assert type(wer) is float and isinstance(transcript, str)
        assert wer == error_rate(row["text"], transcript, "en")
        matched.append(wer)
        others = [other["text"] for other in clips if other["text"] != row["text"]][index % 3 :: 4][:3]
        mismatched += [error_rate(text, transcript, "en") for text in others]
    assert np.mean(matched) < 0.8, matched
    assert np.mean(matched) < np.mean(mismatched) - 0.25, (np.mean(matched), np.mean(mismatched))


def test_resemblyzer_finds_two_clips_of_one_voice_more_similar_than_two_voices(
    demo_rows: list[dict[str, str]],
) -> None:
    """Two clips of each of the six voices: 6 same-voice pairs against 30 cross-voice pairs."""
    by_voice: dict[str, list[torch.Tensor]] = defaultdict(list)
    for row in demo_rows:
        if len(by_voice[row["speaker"]]) < 2:
            by_voice[row["speaker"]].append(load(row))
    (metric,) = build_metrics(["sim"], MetricSettings(speaker="resemblyzer"))
    encoder = load_speaker_encoder("resemblyzer")
    embeddings = {voice: [encoder.embed(clip, SR) for clip in clips] for voice, clips in by_voice.items()}
    same = {voice: cosine_similarity(*pair) for voice, pair in embeddings.items()}
    across = {
        (a, b): cosine_similarity(embeddings[a][0], embeddings[b][1]) for a, b in itertools.permutations(by_voice, 2)
    }
    assert np.mean(list(same.values())) > np.mean(list(across.values())) + 0.08, (same, across)
    for voice, value in same.items():
        assert value > np.mean([v for (a, _), v in across.items() if a == voice]), (voice, same, across)

    # The metric is that cosine, between the audio and the voice prompt.
    def sim(audio: torch.Tensor, ref: torch.Tensor) -> float:
        value = metric.score(EvalItem("pair", "x", audio, SR, ref_audio=ref, ref_sample_rate=SR))["sim"]
        assert type(value) is float
        return value

    pair = sim(by_voice["us_male"][0], by_voice["us_female"][1])
    assert pair == pytest.approx(across[("us_male", "us_female")], abs=1e-5)
    assert metric.score(EvalItem("no-ref", "x", by_voice["us_male"][0], SR)) == {}


def test_resemblyzer_resamples_the_reference(demo_rows: list[dict[str, str]]) -> None:
    """The same clip given at 24 kHz and at 16 kHz has the same voice."""
    clip = load(demo_rows[0])
    at_16k = f5lite.load_audio(demo_dir() / demo_rows[0]["audio_file"], sample_rate=16000)
    (metric,) = build_metrics(["sim"], MetricSettings())
    assert metric.score(EvalItem("a", "x", clip, SR, ref_audio=at_16k, ref_sample_rate=16000))["sim"] > 0.98


def test_resemblyzer_embeds_silence_without_failing() -> None:
    encoder = load_speaker_encoder("resemblyzer")
    assert encoder.embed(torch.zeros(SR), SR).shape == (256,)


def test_dnsmos_scores_clean_speech_above_the_same_speech_in_noise(demo_rows: list[dict[str, str]]) -> None:
    (metric,) = build_metrics(["mos"], MetricSettings(mos="dnsmos"))
    clean = load(demo_rows[0])
    noisy = clean + 0.05 * torch.randn(clean.shape, generator=torch.Generator().manual_seed(0))
    clean_scores = metric.score(EvalItem("clean", "x", clean, SR))
    noisy_scores = metric.score(EvalItem("noisy", "x", noisy, SR))
    assert set(clean_scores) == {"mos", "mos_sig", "mos_bak", "mos_p808"}
    assert all(type(v) is float and 1.0 <= v <= 5.0 for v in [*clean_scores.values(), *noisy_scores.values()])
    assert noisy_scores["mos"] < clean_scores["mos"] - 0.5
    assert noisy_scores["mos_bak"] < clean_scores["mos_bak"] - 1.0


def test_backends_are_loaded_once_per_process() -> None:
    first = build_metrics(["wer", "sim"], MetricSettings())
    second = build_metrics(["wer", "sim"], MetricSettings())
    assert first[0].recognizer is second[0].recognizer  # type: ignore[attr-defined]
    assert first[1].encoder is second[1].encoder  # type: ignore[attr-defined]
    assert load_recognizer("pocketsphinx", "en", "cpu") is first[0].recognizer  # type: ignore[attr-defined]


# --- hub-style backends from local directories --------------------------------------------------------------------


@pytest.mark.slow  # builds three tiny Whisper models through transformers (about 25 s); `make test-slow`
@pytest.mark.parametrize(("multilingual", "language"), [(False, "en"), (True, "en"), (True, "zh")])
def test_whisper_loads_from_a_local_directory_and_transcribes(
    tmp_path: Path, demo_rows: list[dict[str, str]], multilingual: bool, language: str
) -> None:
    save_tiny_whisper(tmp_path, multilingual)
    (metric,) = build_metrics(["wer"], MetricSettings(asr=f"whisper:{tmp_path}", language=language))
    item = EvalItem("a", demo_rows[0]["text"], load(demo_rows[0]), SR)
    scores = metric.score(item)
    key = "wer" if language == "en" else "cer"
    assert set(scores) == {key, "transcript"}
    assert isinstance(scores["transcript"], str) and type(scores[key]) is float and scores[key] >= 0
    assert metric.score(item) == scores  # deterministic
    with pytest.raises(ValueError, match="whisper scores clips up to 30 s, got 31.0 s"):
        metric.score(EvalItem("long", "x", torch.zeros(31 * SR), SR))


def test_wavlm_loads_from_a_local_directory_and_embeds(tmp_path: Path, demo_rows: list[dict[str, str]]) -> None:
    from transformers import Wav2Vec2FeatureExtractor, WavLMConfig, WavLMForXVector

    config = WavLMConfig(
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        conv_dim=(8, 8),
        conv_stride=(5, 4),
        conv_kernel=(10, 4),
        num_conv_pos_embeddings=8,
        num_conv_pos_embedding_groups=2,
        tdnn_dim=(8, 8),
        tdnn_kernel=(3, 1),
        tdnn_dilation=(1, 1),
        xvector_output_dim=12,
        num_buckets=8,
        max_bucket_distance=16,
    )
    torch.manual_seed(0)
    WavLMForXVector(config).save_pretrained(tmp_path)
    Wav2Vec2FeatureExtractor(feature_size=1, sampling_rate=16000, return_attention_mask=True).save_pretrained(tmp_path)

    encoder = load_speaker_encoder(f"wavlm:{tmp_path}")
    clip, other = load(demo_rows[0]), load(demo_rows[5])
    embedding = encoder.embed(clip, SR)
    assert embedding.shape == (12,) and embedding.dtype == torch.float32
    assert torch.equal(encoder.embed(clip, SR), embedding)
    (metric,) = build_metrics(["sim"], MetricSettings(speaker=f"wavlm:{tmp_path}"))
    assert metric.score(EvalItem("a", "x", clip, SR, ref_audio=clip, ref_sample_rate=SR))["sim"] == pytest.approx(1.0)
    assert metric.score(EvalItem("a", "x", clip, SR, ref_audio=other, ref_sample_rate=SR))["sim"] < 0.999


def test_utmos_refuses_a_directory_without_its_weights_and_a_wrong_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="has no utmos_state_dict.pt"):
        build_metrics(["mos"], MetricSettings(mos=f"utmos:{tmp_path}"))
    torch.save({"not_utmos.weight": torch.zeros(1)}, tmp_path / "utmos_state_dict.pt")
    with pytest.raises(ValueError, match=r"utmos_state_dict.pt is not a UTMOS state dict \(") as caught:
        build_metrics(["mos"], MetricSettings(mos=f"utmos:{tmp_path}"))
    assert "\n" not in str(caught.value)


@pytest.mark.slow
def test_utmos_loads_from_a_local_directory_and_scores(tmp_path: Path, demo_rows: list[dict[str, str]]) -> None:
    from utmos_pytorch.utmos_torch import UTMOSModel

    torch.manual_seed(0)
    torch.save({k: v.half() for k, v in UTMOSModel().state_dict().items()}, tmp_path / "utmos_state_dict.pt")
    (metric,) = build_metrics(["mos"], MetricSettings(mos=f"utmos:{tmp_path}"))
    item = EvalItem("a", "x", load(demo_rows[0]), SR)
    scores = metric.score(item)
    assert set(scores) == {"mos"} and type(scores["mos"]) is float and np.isfinite(scores["mos"])
    assert metric.score(item) == scores
