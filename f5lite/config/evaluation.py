"""The `eval` section of a training run: the validation loss and the fixed prompts' metrics while training.

`f5lite-eval`'s own schema is `f5lite.eval.config.EvalConfig`; this one is the trainer's, `TrainEvalConfig`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from f5lite.config.checks import check_at_least, check_choice
from f5lite.metrics.items import LANGUAGES, METRIC_NAMES


@dataclass
class TrainEvalConfig:
    """Evaluation while training: a deterministic validation loss and speech metrics on fixed prompts (rank 0)."""

    val_dir: str | None = None
    """Held-out data, in any form `data.dir` takes; default `DATA_DIR/val` when it exists (written by
    `f5lite-prepare --val-count N`). Its text is tokenized with the run's vocab."""
    every: int = 1000
    """Compute the validation loss every N optimizer updates (when there is validation data); 0 turns it off."""
    max_utterances: int = 256
    """Use at most this many validation utterances (a fixed subset, the same in every evaluation)."""
    time_bins: int = 4
    """Also report the loss per flow-time bin (`val/loss_t0.00-0.25`, ...): small t is mostly noise, large t
    fine detail, so the bins move differently as training goes."""
    online: bool = False
    """Also compute the validation loss of the online (non-EMA) weights, `val/loss_online`."""
    seed: int = 0
    """Seed of the fixed draws (noise, time, span) of every validation utterance and of the prompts' noise; the
    same across runs, so their numbers are comparable."""
    prompts: str | None = None
    """A test-set file (`id|ref_audio|ref_text|gen_text|gt_audio`, see `f5lite-eval`) spoken every
    `sample_every` updates; default the validation data's `testset.txt` when it exists."""
    sample_every: int = 0
    """Synthesize the prompts with the EMA weights through `Synthesizer` (the configured sampler and vocoder),
    score and log them every N optimizer updates; 0 turns it off."""
    max_prompts: int = 8
    """Speak at most this many rows of the prompts file (its first ones)."""
    metrics: list[str] = field(default_factory=lambda: list(METRIC_NAMES))
    """Metrics of the prompts: `wer` (ASR), `sim` (speaker similarity to the reference), `mos` (predicted quality),
    `mel` (against the ground truth). Need the `eval` extra: pip install 'f5lite[eval]'."""
    asr: str = "pocketsphinx"
    """ASR of `wer`: `pocketsphinx` (offline, English, rough), `whisper:<dir or hub id>`,
    `faster-whisper:<dir or size>`, `paraformer:<dir>` (see the benchmarks page of the docs for real numbers)."""
    speaker: str = "resemblyzer"
    """Speaker encoder of `sim`: `resemblyzer` (offline) or `wavlm:<dir or hub id>`."""
    mos: str = "dnsmos"
    """Quality predictor of `mos`: `dnsmos` (offline)."""
    language: str = "en"
    """Language of the prompts: `en` scores WER, `zh` CER."""
    patience: int = 0
    """Stop training early after this many evaluations of `ckpt.best_metric` without a new best (then save and
    export as at the end); 0 never stops early."""

    def __post_init__(self) -> None:
        check_at_least("eval.every", self.every, 0)
        check_at_least("eval.max_utterances", self.max_utterances, 1)
        check_at_least("eval.time_bins", self.time_bins, 1)
        check_at_least("eval.sample_every", self.sample_every, 0)
        check_at_least("eval.max_prompts", self.max_prompts, 1)
        for name in self.metrics:
            check_choice("eval.metrics", name, METRIC_NAMES)
        check_choice("eval.language", self.language, LANGUAGES)
        check_at_least("eval.patience", self.patience, 0)
