"""Typed schema of `f5lite-eval`: every default lives here, `configs/eval.yaml` only composes.

The model keys (`model`, `recipe`, `vocab`, `device`, `dtype`, `compile`, `cross_fade`) and the sampler section mean
what they mean for `f5lite-infer`; the rest picks the test set, the metrics and their backends. Each field is
validated in `__post_init__` with a one-line `ValueError` naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from f5lite.config.checks import check_at_least, check_choice
from f5lite.config.sample import SampleConfig
from f5lite.eval.floors import floor_vocoder_name
from f5lite.infer.config import DEVICE_PATTERN, check_duration_setting
from f5lite.metrics.items import LANGUAGES, METRIC_NAMES, MetricSettings
from f5lite.models.dtypes import WEIGHT_DTYPES


@dataclass
class EvalConfig:
    """One `f5lite-eval` run: what speaks (a model, or audio already made), which test set, which metrics."""

    model: str | None = None
    """An f5lite export or run directory, or an official F5-TTS `.safetensors` / `.pt` (then also `recipe` and
    `vocab`): every test-set row is synthesized with it. Give this or `audio_dir`."""
    recipe: str | None = None
    """For a checkpoint file: the recipe with its architecture, e.g. `dit_base`."""
    vocab: str | None = None
    """For a checkpoint file: the `vocab.txt` released with it."""
    audio_dir: str | None = None
    """Score audio that already exists instead: `<id>.wav` (or `.flac`, `.ogg`, `.mp3`) for every row, e.g. another
    system's output, or the ground truth itself."""
    testset: str | None = None
    """The test set: `id|ref_audio|ref_text|gen_text|gt_audio` with that header (a sixth column, `voice`, names each
    row's voice for `voices`), or seed-tts-eval's `meta.lst`."""
    output: str | None = None
    """Directory of the results (`results.jsonl`, `summary.json`, `report.html`, `audio/`). Created if missing; an
    earlier run's output with the same settings is resumed, any other non-empty directory is refused."""
    metrics: list[str] = field(default_factory=lambda: list(METRIC_NAMES))
    """Which metrics: `wer` (CER for `lang=zh`), `sim` (speaker similarity to the reference), `mos` (predicted
    quality), `mel` (distances to the ground truth; rows without `gt_audio` have none)."""
    asr: str = MetricSettings.asr
    """Speech recogniser of `wer`: `pocketsphinx`, `whisper:<dir or hub id>`, `faster-whisper:<dir or size>`,
    `paraformer:<dir>`."""
    speaker: str = MetricSettings.speaker
    """Speaker encoder of `sim`: `resemblyzer` or `wavlm:<dir or hub id>`."""
    voices: str | None = None
    """The enrollment list (`voice|split|audio`, every clip of every voice of the corpus, at least two per voice):
    when given, the rows with a `voice` are also scored for cloning with the `sim` metric's speaker encoder (which
    it needs): similarity calibrated on the test set's voices (`sim_calibrated`), the enrolled voice the output is
    identified as (`speaker_top1`, `speaker_correct`) and the verification EER, per voice in `summary.json`
    (`cloning`) and `report.html`."""
    mos: str = MetricSettings.mos
    """Quality predictor of `mos`: `dnsmos`."""
    lang: str = MetricSettings.language
    """Language of the test set: `en` scores word error rates, `zh` character error rates."""
    limit: int | None = None
    """Evaluate only the first N rows (null: all)."""
    report_items: int = 20
    """How many items (worst first) `report.html` embeds audio and mel images for; the rest are table rows only."""
    device: str = "auto"
    """`auto` (cuda when available), `cpu`, `cuda` or `cuda:N`; the model and the metric backends run there."""
    dtype: str = "fp32"
    """Dtype of the model weights: `fp32`, `bf16` or `fp16`."""
    cross_fade: float = 0.15
    """Seconds of cross-fade between chunks of a long text; 0 concatenates."""
    compile: bool = False
    """Compile the backbone's blocks for inference (worth it for a long test set)."""
    duration: str = "auto"
    """What sizes the speech: `auto` (the model's duration predictor when it has one, else F5-TTS's byte-ratio
    rule), `rule`, or a predictor directory. Whichever it is, rows with `gt_audio` report the relative error of the
    rule's estimate and of the predictor's (when there is one) against the ground truth's length."""
    floor_vocoder: str = "auto"
    """The vocoded floor: each row's `gt_audio` made a log-mel and decoded by this vocoder, then scored (`gt_vocoded`
    in the results, `ground_truth_vocoded` in `summary.json`), the floor of the path the model's speech takes.
    `auto`: the model's vocoder (`sample.vocoder`), none with `audio_dir`; `none`; `griffin_lim`; `vocos`
    (`sample.vocoder_source`'s weights)."""
    sample: SampleConfig = field(default_factory=lambda: SampleConfig(seed=0))
    """Sampler settings, as in `f5lite-infer`. `seed` is the base seed: each row's noise seed is derived from it and
    the row's id, so a rerun (or the same row in another test set) gives the same audio."""

    def __post_init__(self) -> None:
        for key in ("testset", "output"):
            if not getattr(self, key):
                raise ValueError(f"{key} is not set: give {key}=PATH (f5lite-eval --help shows an example)")
        if (self.model is None) == (self.audio_dir is None):
            raise ValueError("give exactly one of model=PATH (synthesize the test set) and audio_dir=DIR (score it)")
        if self.audio_dir is not None:
            for key in ("recipe", "vocab"):
                if getattr(self, key) is not None:
                    raise ValueError(f"{key} is for model=; audio_dir= scores audio that already exists")
        if not self.metrics:
            raise ValueError(f"metrics is empty; choose some of: {', '.join(METRIC_NAMES)}")
        for name in self.metrics:
            check_choice("metrics", name, METRIC_NAMES)
        if len(set(self.metrics)) != len(self.metrics):
            raise ValueError(f"metrics={self.metrics!r} names a metric twice")
        check_choice("lang", self.lang, LANGUAGES)
        if self.voices is not None and "sim" not in self.metrics:
            raise ValueError("voices= scores cloning with the speaker encoder of the sim metric: add sim to metrics")
        check_at_least("limit", self.limit, 1, allow_none=True)
        check_at_least("report_items", self.report_items, 0)
        if not DEVICE_PATTERN.fullmatch(self.device):
            raise ValueError(f"device={self.device!r} is not valid; use auto, cpu, cuda or cuda:N")
        check_choice("dtype", self.dtype, WEIGHT_DTYPES)
        check_at_least("cross_fade", self.cross_fade, 0.0)
        check_duration_setting(self.duration)
        floor_vocoder_name(self.floor_vocoder)
        if self.sample.seed is None:
            raise ValueError("sample.seed=null is not valid here: each row's seed is derived from it, so that a rerun "
                             "reproduces the audio; give an integer")  # fmt: skip
