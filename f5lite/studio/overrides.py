"""What the page may hand to Hydra: paths as quoted literals, and the "More overrides" field through an allow-list.

Every value the studio puts into a trainer override comes from a user: a typed path (a base model, a vocabulary, a
linked dataset), the workspace root the studio was started with (which may hold `,`, `'`, `[` or spaces), or the
"More overrides" field. Hydra parses an override's value with its own grammar (commas make sweeps, brackets make
lists) and OmegaConf then resolves `${...}` interpolations (`${oc.env:VAR}` reads the environment). So:

- a path goes through `quote`: a single-quoted Hydra string that arrives byte for byte, and any value holding `${`
  is refused (`literal`, also for the tools that set paths verbatim, which OmegaConf still resolves);
- a "More overrides" token must be `key=value` with a key of `ALLOWED` (settings of the trainer's schema that change
  how it trains, none of them a path, a data source, a network service or Hydra's own), no `+`, `++` or `~` prefix,
  and no `${` in its value. The keys the page sets from its own fields are refused with the field to use instead,
  except the ones the plan only derives (`DERIVED`), which may be overridden deliberately: the field's tokens come
  last, so they win.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_KEY = re.compile(rf"{_NAME}(\.{_NAME})*")

FIELDS = {
    "run_dir": "the Run name",
    "data.dir": "the Data tab's dataset",
    "optim.max_updates": "the Updates field",
    "optim.lr": "the Learning rate field",
    "data.frames_per_gpu": "the Frames per batch field",
    "perf.precision": "the Precision field",
    "ckpt.every": "the Checkpoint, validation and samples every field",
    "finetune.lora.rank": "the LoRA rank field",
    "init.weights": "the Base model field",
    "init.vocab": "the vocab.txt field",
    "sample.vocoder": "the studio's sample.vocoder",
    "sample.vocoder_source": "the studio's sample.vocoder_source",
}
"""The keys the plan sets from a field of the page (or an option of the studio), and that field."""

DERIVED = frozenset({"optim.warmup_updates", "eval.every", "logger.every", "logger.sample_every", "data.num_workers"})
"""Keys the plan sets without a field of their own (from Updates, from Checkpoint every, or fixed): allowed."""

ALLOWED = DERIVED | frozenset(
    {
        # The optimizer and its schedule (not the length and peak rate: the page's fields).
        *(f"optim.{k}" for k in ("betas", "weight_decay", "eps", "grad_accum", "max_grad_norm", "max_bad_updates")),
        # Speed and memory.
        *(f"perf.{k}" for k in ("compile", "compile_mode", "compile_dynamic", "sdpa_backend", "tf32", "pin_memory")),
        *(f"perf.{k}" for k in ("ac.mode", "ac.every_n", "memory_budget", "dropout", "compile_scope", "fp8", "pack")),
        *(f"ema.{k}" for k in ("decay", "update_every", "update_after", "device")),
        # The architecture's hyper-parameters (every family's; the schema refuses one its family lacks).
        *(f"model.{k}" for k in ("dim", "depth", "heads", "dim_head", "dropout", "ff_mult", "mel_dim")),
        *(f"model.{k}" for k in ("text_num_embeds", "text_mask_padding", "qk_norm", "attn_mask_enabled", "text_dim")),
        *(f"model.{k}" for k in ("conv_layers", "pe_attn_head", "long_skip_connection", "skip_connect_type")),
        "model.text_fit",
        # Batching (not where the data is, nor its vocabulary).
        *(f"data.{k}" for k in ("tokenizer", "mel_type", "max_samples", "window", "fill_efficiency")),
        *(f"data.{k}" for k in ("quadratic_duration", "pad_multiple", "max_skip_ratio")),
        # Checkpoints kept and exported.
        *(f"ckpt.{k}" for k in ("keep_last", "keep_best", "best_metric", "async_save", "async", "export_dtype")),
        *(f"ckpt.{k}" for k in ("stop_timeout_s", "stop_check_every")),
        # The sampler of the training samples and prompts (not the vocoder: the studio's option).
        *(f"sample.{k}" for k in ("steps", "method", "schedule", "sway", "cfg_strength", "cfg_zero_init_steps")),
        *(f"sample.{k}" for k in ("cfg_zero_star", "speed", "seed")),
        # Validation and the prompts' metrics (not their files, nor the recogniser or encoders to load).
        *(f"eval.{k}" for k in ("max_utterances", "time_bins", "online", "seed", "sample_every", "max_prompts")),
        *(f"eval.{k}" for k in ("metrics", "language", "patience")),
        *(f"finetune.lora.{k}" for k in ("alpha", "dropout", "target_modules", "export")),
        "init.use_ema",
        "seed",
    }
)
"""The keys the "More overrides" field accepts."""

SECTIONS = "optim, perf, ema, model, data batching, ckpt keeping, sample, eval, finetune.lora, init.use_ema, seed"
"""`ALLOWED` in words, for messages and the docs."""


def literal(value: str, what: str) -> str:
    """`value`, if OmegaConf would take it as it is (no `${...}` interpolation in it).

    Raises:
        ValueError: the value holds `${`, naming `what` it is.
    """
    if "${" in value:
        raise ValueError(f"{what} {value!r} holds '${{': interpolations are not allowed in the studio's paths")
    return value


def quote(value: str, what: str) -> str:
    r"""`value` as a Hydra override value that arrives byte for byte: single-quoted, quotes and backslashes escaped.

    Hydra un-escapes only backslashes that precede a quote (`\\'` is `'`, `\\\\'` is `\\` then the closing quote), so
    those are doubled and each quote gets one; any other character, `,` `[` `=` and spaces included, is literal.

    Raises:
        ValueError: the value holds `${` (see `literal`).
    """
    body = re.sub(r"(\\*)'", lambda m: m.group(1) * 2 + "\\'", literal(value, what))
    return "'" + re.sub(r"(\\+)$", lambda m: m.group(1) * 2, body) + "'"


def check_extra(tokens: Iterable[str]) -> list[str]:
    """The "More overrides" tokens, if each one is an allowed `key=value`.

    Raises:
        ValueError: one line naming the first refused token and why.
    """
    checked = []
    for token in tokens:
        key, sep, value = token.partition("=")
        why = None
        if key.startswith(("+", "~")):
            why = "keys are not added or deleted from the page ('+', '++', '~'): change one the trainer has"
        elif not sep:
            why = "give key=value"
        elif key in FIELDS:
            why = f"set with {FIELDS[key]}"
        elif not _KEY.fullmatch(key) or key not in ALLOWED:
            why = f"not a setting the page may change (paths, the data and Hydra's own are not); allowed: {SECTIONS}"
        elif "${" in value:
            why = "interpolations ('${') are not allowed"
        if why:
            raise ValueError(f"override {token!r} is refused: {why}")
        checked.append(token)
    return checked
