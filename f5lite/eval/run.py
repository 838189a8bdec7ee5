"""One `f5lite-eval` run: check every input, then make (or find) and score the audio row by row, then summarize.

Everything that can be wrong with the inputs is found before the first row is synthesized: the test set and its audio
files, the audio of `audio_dir`, the output directory, the metric backends (all loaded up front) and the model. Rows
are then evaluated one at a time and appended to `results.jsonl` as they finish (see `f5lite.eval.outdir` for
resuming). Synthesis goes through `Synthesizer`, exactly the inference path, with each row's noise seed derived
from the base seed and the row's id. The scored audio is what was written to `audio/<id>.wav`, read back, so that
`audio_dir=OUTPUT/audio` scores the same numbers again.

A row with `gt_audio` also gets the relative error of the estimated duration against the ground truth's, by the
byte-ratio rule (`duration_error_rule`) and by the duration predictor when there is one (`duration_error`); their
medians are in `summary.json` (`duration`). It also scores the ground truth as if it were the output (`gt` in its results; the mel metrics,
which compare with the ground truth, are left out there): the floor the model's numbers are read against. With a
`floor_vocoder` (by default the model's own vocoder) the ground truth is also made a log-mel, decoded by that vocoder,
written to `gt_vocoded/<id>.wav` and scored (`gt_vocoded`, mel metrics included: they measure what the vocoder
alone loses): the floor of the path the model's speech takes (see `f5lite.eval.floors`).

With `voices` (an enrollment list) the rows with a `voice`, and their floors, are also scored for cloning, and
`summary.json` gets `cloning` (see `f5lite.eval.cloning`); the enrollment clips are embedded and the calibration
measured before the first row, so an unknown voice or a calibration the encoder cannot draw stops the run there.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from f5lite.atomic import write_json_atomic
from f5lite.audio import SAMPLE_RATE, Vocoder, load_audio, save_audio
from f5lite.data.testset import TestRow, read_testset
from f5lite.eval.cloning import check_testset_voices, cloning_summary
from f5lite.eval.config import EvalConfig
from f5lite.eval.duration import DurationCase, duration_cases, relative_errors
from f5lite.eval.floors import VOCODED_DIR, planned_floor_vocoder, resolve_floor_vocoder, vocode
from f5lite.eval.outdir import (
    AUDIO_DIR,
    REPORT_FILE,
    SUMMARY_FILE,
    append_result,
    resumable_rows,
    start_output,
)
from f5lite.eval.report import write_report
from f5lite.infer.config import DURATION_MODES
from f5lite.infer.duration import DurationEstimator, resolve_duration
from f5lite.infer.loading import resolve_device
from f5lite.infer.synthesizer import Synthesizer
from f5lite.metrics.cloning import CloningScorer
from f5lite.metrics.items import EvalItem, MetricSettings
from f5lite.metrics.scoring import Metric, build_metrics, score_item, summarize
from f5lite.metrics.speaker import load_speaker_encoder
from f5lite.metrics.voices import Enrollment, read_enrollment
from f5lite.version import __version__

AUDIO_EXTENSIONS = ("wav", "flac", "ogg", "mp3")
"""What `audio_dir` is searched for, in this order: `<id>.wav`, then `<id>.flac`, ..."""
ROW_FIELDS = ("id", "gen_text", "audio", "seconds", "seed", "voice", "gt", "gt_vocoded", "duration_error_rule",
              "duration_error")  # fmt: skip
"""The keys of a result row that are not metric results (the duration errors are summarized apart, as medians)."""
BACKEND_OF = {"wer": "asr", "sim": "speaker", "mos": "mos"}
"""The config key that picks each metric's backend (`mel` has none)."""
METRIC_PACKAGES = ("jiwer", "pocketsphinx", "resemblyzer", "speechmos", "onnxruntime", "librosa", "transformers",
                   "faster-whisper", "funasr")  # fmt: skip
"""Packages whose versions `summary.json` records when installed (the metric backends may use them)."""

AudioSource = Callable[[TestRow], tuple[Path, str, int | None]]
"""Gives a row's audio to score: the file, how the results name it, and the noise seed it was made with (or None)."""


@dataclass(frozen=True)
class EvalOutcome:
    """What a run wrote.

    Attributes:
        output: the output directory.
        rows: every row's results, in test-set order (also in `results.jsonl`).
        summary: the contents of `summary.json`.
    """

    output: Path
    rows: list[dict[str, Any]]
    summary: dict[str, Any]


def evaluate(cfg: EvalConfig, *, progress: bool = False) -> EvalOutcome:
    """Evaluate a model (or existing audio) on a test set; write results, summary and report.

    Args:
        cfg: a composed config.
        progress: show a progress bar over the rows (on stderr).

    Returns:
        What was written.

    Raises:
        ValueError: a bad input (test set, enrollment list, a row's voice not in it, audio, output directory, metric
            backend, model), or a speaker calibration the encoder cannot draw, in one line.
        ImportError: a metric backend's package is not installed.
        OSError: the Vocos weights cannot be found, or an output cannot be written.
    """
    started = time.perf_counter()
    every_row = read_testset(str(cfg.testset))
    rows = every_row[: cfg.limit]
    enrollment = read_enrollment(cfg.voices) if cfg.voices is not None else None
    voices = check_testset_voices(every_row, enrollment, str(cfg.testset)) if enrollment is not None else []
    found = find_audio(Path(cfg.audio_dir), rows) if cfg.audio_dir is not None else None
    device = resolve_device(cfg.device)
    output = Path(str(cfg.output))
    settings = run_settings(cfg, device)
    done = resumable_rows(output, settings, [row.id for row in rows])
    backends = MetricSettings(asr=cfg.asr, speaker=cfg.speaker, mos=cfg.mos, language=cfg.lang, device=str(device))
    metrics = build_metrics(cfg.metrics, backends)
    cloning = _enroll(enrollment, voices, backends) if enrollment is not None else None
    model_vocoder: Vocoder | None = None
    if found is not None:
        audio_of = _existing(found)
        estimator = resolve_duration(cfg.duration, None)
    else:
        synthesizer = _load_synthesizer(cfg, device)
        audio_of = _synthesizing(cfg, synthesizer, output)
        estimator = synthesizer.duration
        model_vocoder = synthesizer.vocoder
    source = cfg.sample.vocoder_source if cfg.sample.vocoder == "vocos" else None
    floor_vocoder = resolve_floor_vocoder(settings["floor_vocoder"], model_vocoder, source, device)
    cases = {case.id: case for case in duration_cases(rows)}
    start_output(output, settings, [done[row.id] for row in rows if row.id in done])
    results = []
    for row in tqdm(rows, desc="f5lite-eval", unit="row", disable=not progress):
        if row.id in done:
            results.append(done[row.id])
            continue
        result = score_row(metrics, row, *audio_of(row), floor_vocoder=floor_vocoder, output=output, cloning=cloning)
        if row.id in cases:
            result.update(duration_results(cases[row.id], estimator))
        append_result(output, result)
        results.append(result)
    summary = build_summary(results, settings, time.perf_counter() - started, resumed=len(done))
    summary["duration"] = duration_summary(results, estimator.name)
    if cloning is not None and enrollment is not None:
        summary["cloning"] = cloning_summary(results, enrollment, cloning.calibration)
    write_json_atomic(output / SUMMARY_FILE, summary)
    write_report(output / REPORT_FILE, summary, results, {row.id: row for row in rows}, output, cfg.report_items)
    return EvalOutcome(output, results, summary)


def row_seed(seed: int, ident: str) -> int:
    """The noise seed of one row: a hash of the base seed and the row's id.

    Derived from the id rather than the position, so a row keeps its audio when the test set is reordered, cut
    with `limit`, or merged with another.

    Args:
        seed: the base seed (`sample.seed`).
        ident: the row's id.

    Returns:
        A seed in [0, 2**31).
    """
    digest = hashlib.sha256(f"{seed}|{ident}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def find_audio(directory: Path, rows: Sequence[TestRow]) -> dict[str, Path]:
    """The audio file of every row in `directory`: `<id>.wav`, else the first of `<id>.flac`, `.ogg`, `.mp3`.

    Args:
        directory: where the audio is.
        rows: the rows to find.

    Returns:
        Each row's file by id.

    Raises:
        ValueError: `directory` does not exist, or some rows have no file (naming the first few).
    """
    if not directory.is_dir():
        raise ValueError(f"audio_dir {directory} is not a directory")
    found: dict[str, Path] = {}
    missing = []
    for row in rows:
        candidates = (directory / f"{row.id}.{ext}" for ext in AUDIO_EXTENSIONS)
        path = next((c for c in candidates if c.is_file()), None)
        if path is None:
            missing.append(row.id)
        else:
            found[row.id] = path.resolve()
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        extensions = "|".join(AUDIO_EXTENSIONS)
        raise ValueError(
            f"audio_dir {directory} has no <id>.{{{extensions}}} for {len(missing)} of {len(rows)} rows: {shown}"
        )
    return found


def score_row(
    metrics: Sequence[Metric],
    row: TestRow,
    audio_file: Path,
    audio: str,
    seed: int | None,
    *,
    floor_vocoder: Vocoder | None = None,
    output: Path | None = None,
    cloning: CloningScorer | None = None,
) -> dict[str, Any]:
    """Score one row's audio, and its ground truth when the row has one (as it is, and vocoded).

    Args:
        metrics: the loaded metrics.
        row: the test-set row.
        audio_file: the audio to score.
        audio: how the results name it (relative to the output directory, or absolute).
        seed: the noise seed it was synthesized with; None for existing audio.
        floor_vocoder: the vocoder of the vocoded floor, or None for none.
        output: the output directory, where the vocoded ground truth is written (`gt_vocoded/<id>.wav`); needed
            with `floor_vocoder`.
        cloning: the cloning scorer (`voices=`), or None; it scores rows with a `voice`, and their floors.

    Returns:
        The result row: `id`, `gen_text`, `audio`, `seconds`, `seed` (when synthesized), `voice` (when the row has
        one), every metric's keys, with `cloning` the cloning keys (`sim_calibrated`, `speaker_top1`,
        `speaker_correct`, `speaker_scores`), and when the row has `gt_audio`: `gt` (the ground truth's metric and
        cloning keys, mel metrics excepted) and, with a `floor_vocoder`, `gt_vocoded` (the vocoded ground truth's
        metric and cloning keys, mel metrics against the ground truth).
    """
    wave = load_audio(audio_file)  # the file as written, so audio_dir= on it scores the same
    ref = load_audio(row.ref_audio)
    gt = load_audio(row.gt_audio) if row.gt_audio is not None else None
    item = EvalItem(
        id=row.id,
        gen_text=row.gen_text,
        audio=wave,
        sample_rate=SAMPLE_RATE,
        ref_audio=ref,
        ref_sample_rate=SAMPLE_RATE,
        gt_audio=gt,
        gt_sample_rate=SAMPLE_RATE if gt is not None else 0,
    )
    result: dict[str, Any] = {"id": row.id, "gen_text": row.gen_text, "audio": audio}
    result["seconds"] = wave.numel() / SAMPLE_RATE
    if seed is not None:
        result["seed"] = seed
    if row.voice is not None:
        result["voice"] = row.voice
    result.update(_with_cloning(score_item(metrics, item), wave, cloning, row.voice))
    if gt is not None:
        floor = score_item(metrics, EvalItem(row.id, row.gen_text, gt, SAMPLE_RATE, ref, SAMPLE_RATE))
        floor = _with_cloning(floor, gt, cloning, row.voice)
        if floor:
            result["gt"] = floor
        if floor_vocoder is not None:
            if output is None:
                raise ValueError("score_row: the vocoded floor needs the output directory to write its audio to")
            vocoded_file = output / VOCODED_DIR / f"{row.id}.wav"
            vocoded_file.parent.mkdir(parents=True, exist_ok=True)
            save_audio(vocoded_file, vocode(gt, floor_vocoder), SAMPLE_RATE)
            vocoded = load_audio(vocoded_file)  # as written, like the model's output
            item = EvalItem(row.id, row.gen_text, vocoded, SAMPLE_RATE, ref, SAMPLE_RATE, gt, SAMPLE_RATE)
            result["gt_vocoded"] = _with_cloning(score_item(metrics, item), vocoded, cloning, row.voice)
    return result


def _with_cloning(
    scores: Mapping[str, float | str], wave: torch.Tensor, cloning: CloningScorer | None, voice: str | None
) -> dict[str, Any]:
    """A clip's metric results, with its cloning keys when there is a scorer and the row has a voice."""
    if cloning is None or voice is None:
        return dict(scores)
    sim = scores.get("sim")
    return {**scores, **cloning.score(wave, SAMPLE_RATE, voice, sim if isinstance(sim, float) else None)}


def duration_results(case: DurationCase, estimator: DurationEstimator) -> dict[str, float]:
    """One row's relative duration errors: `duration_error_rule`, and `duration_error` with a predictor."""
    result = {"duration_error_rule": relative_errors([case], DurationEstimator())[0]}
    if estimator.name == "predictor":
        result["duration_error"] = relative_errors([case], estimator)[0]
    return result


def duration_summary(rows: Sequence[Mapping[str, Any]], used: str) -> dict[str, Any]:
    """What sized the speech (`predictor` or `rule`) and the median relative errors over the rows that have them."""
    summary: dict[str, Any] = {"used": used}
    for key in ("duration_error_rule", "duration_error"):
        values = [float(row[key]) for row in rows if key in row]
        if values:
            summary[f"median_{key}"] = statistics.median(values)
            summary["rows"] = len(values)
    return summary


def metric_results(row: Mapping[str, Any]) -> dict[str, Any]:
    """The metric keys of a result row (everything but `ROW_FIELDS`).

    Args:
        row: a result row.

    Returns:
        The metric results, numbers and strings (`transcript`).
    """
    return {key: value for key, value in row.items() if key not in ROW_FIELDS}


def build_summary(
    rows: Sequence[Mapping[str, Any]], settings: Mapping[str, Any], wall_seconds: float, *, resumed: int
) -> dict[str, Any]:
    """The contents of `summary.json`.

    Args:
        rows: every row's results.
        settings: the run's settings.
        wall_seconds: how long this invocation took.
        resumed: how many rows came from an earlier, interrupted run.

    Returns:
        `means` (each metric's mean over the rows that have it, and `count`), `ground_truth` (the same over the
        rows' ground truth; null when no row has one), `ground_truth_vocoded` (the same over the vocoded ground
        truth; null without a floor vocoder), `settings`, `versions`, `wall_seconds` and `resumed_rows`.
    """
    floors = [row["gt"] for row in rows if "gt" in row]
    vocoded = [row["gt_vocoded"] for row in rows if "gt_vocoded" in row]
    return {
        "means": summarize([metric_results(row) for row in rows]),
        "ground_truth": summarize(floors) if floors else None,
        "ground_truth_vocoded": summarize(vocoded) if vocoded else None,
        "settings": dict(settings),
        "versions": versions(),
        "wall_seconds": round(wall_seconds, 3),
        "resumed_rows": resumed,
    }


def run_settings(cfg: EvalConfig, device: torch.device) -> dict[str, Any]:
    """What identifies a run's results: a rerun resumes only when these are equal.

    Args:
        cfg: the config.
        device: the resolved device.

    Returns:
        JSON-serializable settings: the scored source (model or audio_dir, with absolute paths), the test set and
        its SHA-256, the metrics and their backends, the language and device, the vocoder of the vocoded floor
        (null: none), with `voices` the enrollment list and its SHA-256, and for a model the sampler and synthesis
        settings.
    """
    testset = Path(str(cfg.testset)).resolve()
    settings: dict[str, Any] = {
        "testset": str(testset),
        "testset_sha256": hashlib.sha256(testset.read_bytes()).hexdigest(),
        "metrics": list(cfg.metrics),
        "backends": {name: getattr(cfg, BACKEND_OF[name]) for name in cfg.metrics if name in BACKEND_OF},
        "lang": cfg.lang,
        "device": str(device),
        "duration": cfg.duration if cfg.duration in DURATION_MODES else str(Path(cfg.duration).resolve()),
        "floor_vocoder": planned_floor_vocoder(cfg.floor_vocoder, cfg.sample.vocoder if cfg.model else None),
    }
    if cfg.voices is not None:
        # Only with voices=, so that a run without them resumes from an output made before the key existed.
        voices = Path(cfg.voices).resolve()
        settings["voices"] = {"file": str(voices), "sha256": hashlib.sha256(voices.read_bytes()).hexdigest()}
    if cfg.audio_dir is not None:
        return {"audio_dir": str(Path(cfg.audio_dir).resolve()), **settings}
    sample = asdict(cfg.sample)
    if cfg.sample.vocoder != "vocos":
        del sample["vocoder_source"]
    model = {"model": _absolute(cfg.model), "recipe": cfg.recipe, "vocab": _absolute(cfg.vocab)}
    synthesis = {"dtype": cfg.dtype, "compile": cfg.compile, "cross_fade": cfg.cross_fade, "sample": sample}
    return {**model, **settings, **synthesis}


def versions() -> dict[str, str]:
    """Versions of Python, f5lite, torch and the installed metric packages.

    Returns:
        Package name to version string.
    """
    found = {"python": platform.python_version(), "f5lite": __version__, "torch": torch.__version__}
    for name in METRIC_PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def _enroll(enrollment: Enrollment, voices: Sequence[str], backends: MetricSettings) -> CloningScorer:
    # The sim metric's encoder, which `load_speaker_encoder` loads once per process: one encoder scores both.
    return CloningScorer.enroll(load_speaker_encoder(backends.speaker, backends.device), enrollment, voices)


def _load_synthesizer(cfg: EvalConfig, device: torch.device) -> Synthesizer:
    sample = cfg.sample
    return Synthesizer.from_pretrained(
        str(cfg.model),
        vocoder=sample.vocoder,
        vocoder_source=sample.vocoder_source if sample.vocoder == "vocos" else None,
        recipe=cfg.recipe,
        vocab=cfg.vocab,
        device=device,
        dtype=cfg.dtype,
        compile=cfg.compile,
        duration=cfg.duration,
    )


def _synthesizing(cfg: EvalConfig, synthesizer: Synthesizer, output: Path) -> AudioSource:
    sample = cfg.sample
    options = sample.sampler_options()
    base_seed = sample.seed if sample.seed is not None else 0  # EvalConfig refuses null

    def synthesize(row: TestRow) -> tuple[Path, str, int | None]:
        seed = row_seed(base_seed, row.id)
        wave, rate = synthesizer.synthesize(
            row.gen_text, load_audio(row.ref_audio), row.ref_text, options, seed=seed, cross_fade=cfg.cross_fade
        )
        relative = f"{AUDIO_DIR}/{row.id}.wav"
        save_audio(output / relative, wave, rate)
        return output / relative, relative, seed

    return synthesize


def _existing(found: Mapping[str, Path]) -> AudioSource:
    def existing(row: TestRow) -> tuple[Path, str, int | None]:
        return found[row.id], str(found[row.id]), None

    return existing


def _absolute(path: str | None) -> str | None:
    # A hub id or other name that is not a local path is kept as given.
    return str(Path(path).resolve()) if path is not None and Path(path).exists() else path
