"""The `init` and `finetune` sections of a training run: the pretrained weights to start from, and LoRA on them."""

from __future__ import annotations

from dataclasses import dataclass, field

from f5lite.config.checks import check_at_least, check_choice, check_range

LORA_EXPORTS = ("merged", "adapter")
"""`finetune.lora.export`."""


@dataclass
class InitConfig:
    """Pretrained weights to start from (fine-tuning).

    Loaded at every start; a resumed run then overwrites them with its checkpoint (LoRA checkpoints hold only the
    adapters, so there the base weights always come from here).
    """

    weights: str | None = None
    """An official F5-TTS / E2-TTS `.safetensors` or `.pt`, or an f5lite export directory; null trains from scratch."""
    vocab: str | None = None
    """The `vocab.txt` that goes with an official checkpoint (an export directory has its own). The training data's
    vocab must extend it (`f5lite-prepare --vocab` does): its extra tokens get new embedding rows."""
    use_ema: bool = True
    """Start from the checkpoint's EMA weights (what F5-TTS releases) rather than its online weights."""

    def __post_init__(self) -> None:
        if self.vocab is not None and self.weights is None:
            raise ValueError("init.vocab is set but init.weights is not; give init.weights=PATH")


@dataclass
class LoraConfig:
    """Low-rank adapters (LoRA, through the `peft` library) instead of training every weight."""

    rank: int = 0
    """Adapter rank; 0 turns LoRA off."""
    alpha: int | None = None
    """Adapter scaling numerator (the update is scaled by alpha / rank); null means alpha = rank."""
    dropout: float = 0.0
    """Dropout on the adapters' input."""
    target_modules: list[str] = field(default_factory=lambda: ["to_q", "to_k", "to_v", "to_out.0", "ff.0.0", "ff.2"])
    """Linear layers that get adapters, by name suffix: attention q/k/v/out and the feed-forward linears."""
    export: str = "merged"
    """What the export holds: `merged` (full weights with the adapters folded in) or `adapter` (the adapters alone,
    in peft's format, next to the base weights' path)."""

    def __post_init__(self) -> None:
        check_at_least("finetune.lora.rank", self.rank, 0)
        check_range("finetune.lora.dropout", self.dropout, 0.0, 0.99)
        if self.alpha is not None and not self.alpha > 0:
            raise ValueError(f"finetune.lora.alpha={self.alpha!r} is not valid; it must be > 0")
        check_choice("finetune.lora.export", self.export, LORA_EXPORTS)
        if not self.target_modules:
            raise ValueError("finetune.lora.target_modules is empty; name at least one linear layer")


@dataclass
class FinetuneConfig:
    """Fine-tuning options on top of `init`."""

    lora: LoraConfig = field(default_factory=LoraConfig)
    """Low-rank adapters."""
