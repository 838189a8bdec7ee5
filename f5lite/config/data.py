"""The `data` section of a training run: where the training data is and how it is batched (`f5lite.data` reads it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from omegaconf import MISSING

from f5lite.audio.mel import MEL_KINDS
from f5lite.config.checks import check_at_least, check_choice, check_range
from f5lite.text.tokenizers import check_tokenizer_name


@dataclass
class SourceConfig:
    """One source of a weighted mixture (`data.sources`)."""

    dir: str = MISSING
    """A data source, as `data.dir` takes it."""
    weight: float = 1.0
    """Relative share of this source's utterances in the batches."""

    def __post_init__(self) -> None:
        if not self.weight > 0:
            raise ValueError(f"data.sources[].weight={self.weight!r} is not valid; it must be > 0")


@dataclass
class DataConfig:
    """Where the training data is and how it is batched."""

    dir: str | None = None
    """The training data: a directory made by `f5lite-prepare` (cuts.jsonl.gz, vocab.txt), a Shar directory
    (`f5lite-prepare --shar`), a Lhotse CutSet file (`*.jsonl.gz`, e.g. from `lhotse prepare`), an earlier f5lite
    directory (manifest.jsonl), or an F5-TTS prepared directory (raw.arrow; needs the `f5tts` extra). Relative to the
    launch directory. `${f5lite.demo_dir:}` is the shipped demo dataset. Give this or `sources`."""
    sources: list[SourceConfig] = field(default_factory=list)
    """A weighted mixture instead of `dir`, e.g. a new language with 20 % of the base one replayed:
    `[{dir: data/new, weight: 0.8}, {dir: data/base, weight: 0.2}]`. An epoch ends when a source runs out."""
    vocab: str | None = None
    """The run's `vocab.txt`; default: the one next to `dir` (or the first source). Ids stored at preparation are
    used when this vocab extends the data's own; other data is tokenized while loading."""
    tokenizer: str = "char"
    """Text tokenizer: `char`, `pinyin` (F5-TTS's released models; needs the `zh` extra), `byte`, or `ipa`: IPA
    phonemes from espeak-ng (needs the `ipa` extra and espeak-ng), English (en-us) as `ipa`, any other language
    espeak-ng speaks as `ipa:<its code>` (`ipa:de`, `ipa:es`, `ipa:en-gb`; `espeak-ng --voices` lists them)."""
    mel_type: str = "vocos"
    """Mel front end: `vocos` (every released F5-TTS model) or `bigvgan`."""
    frames_per_gpu: int = 38400
    """Frame budget of one batch on one GPU (38400 frames ~ 410 s of audio at 24 kHz, hop 256)."""
    max_samples: int = 64
    """Most utterances in one batch, whatever the frame budget."""
    window: int = 10000
    """Cuts the batching sorts by length and packs together, read lazily from the shuffled stream (a shuffle buffer
    of the same size runs ahead, so about twice this many cuts are in memory, never the whole set): larger, less
    padding. A small one (a couple of batches' worth) gives batches of mixed lengths."""
    fill_efficiency: float = 0.99
    """A batch that the frame budget has filled takes a shorter utterance into its leftover budget only while its
    padding efficiency (real frames / batch size x longest utterance) stays at least this: fewer, fuller batches
    for a little padding; 1 pads nothing for it."""
    quadratic_duration: float | None = None
    """Make the budget grow faster than length, as attention's cost does (as Lhotse's `quadratic_duration`, in
    seconds: an utterance of this length counts double), so that batches of long clips fit memory; null: linear."""
    num_workers: int = 4
    """DataLoader worker processes."""
    pad_multiple: int = 1
    """Pad each batch's mel and text lengths up to a multiple of this, so compiled code sees few distinct shapes
    (the frame budget counts the padding); 1 pads only to the longest item."""
    max_skip_ratio: float = 0.05
    """Stop training when more than this share of utterance reads fails (files that broke after `f5lite-prepare`
    checked them); each failure is logged and replaced by the nearest-length utterance. 0 stops at the first."""

    def __post_init__(self) -> None:
        if self.dir is not None and self.sources:
            raise ValueError("data.dir and data.sources are both set; give one of them")
        check_tokenizer_name(self.tokenizer, "data.tokenizer")
        check_choice("data.mel_type", self.mel_type, MEL_KINDS)
        check_at_least("data.frames_per_gpu", self.frames_per_gpu, 1)
        check_at_least("data.max_samples", self.max_samples, 1)
        check_at_least("data.window", self.window, 1)
        if not 0 < self.fill_efficiency <= 1:
            raise ValueError(f"data.fill_efficiency={self.fill_efficiency!r} is not valid; it must be in (0, 1]")
        if self.quadratic_duration is not None and not self.quadratic_duration > 0:
            raise ValueError(f"data.quadratic_duration={self.quadratic_duration!r} is not valid; it must be > 0")
        check_at_least("data.num_workers", self.num_workers, 0)
        check_at_least("data.pad_multiple", self.pad_multiple, 1)
        check_range("data.max_skip_ratio", self.max_skip_ratio, 0.0, 1.0)
