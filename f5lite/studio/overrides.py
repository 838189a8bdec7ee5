r"""What the page may hand to Hydra: paths as quoted literals, and the "More overrides" field as data, allow-listed.

Every value the studio puts into a trainer override comes from a user: a typed path (a base model, a vocabulary, a
linked dataset), the workspace root the studio was started with (which may hold `,`, `'`, `[` or spaces), or the
"More overrides" field. Hydra parses an override's value with its own grammar (commas make sweeps, brackets make
lists, `choice(...)` and `glob(...)` are functions, `\{` is an escaped `{`, quoted strings keep `${...}`) and
OmegaConf then resolves `${...}` interpolations (`${oc.env:VAR}` reads the environment, in the studio's process
when it composes the plan, in the trainer's when it runs). So a value must stay data on both readings:

- a path goes through `quote`: a single-quoted Hydra string that arrives byte for byte (Hydra un-escapes nothing
  in it but the quotes `quote` escaped), and any value holding `${` is refused (`literal`, also for the tools that
  set paths verbatim, which OmegaConf still resolves). `$\{` or `\$\{` in a path arrive as typed: OmegaConf
  resolves only `${`;
- a "More overrides" token must be `key=value` with a key of `ALLOWED` (settings of the trainer's schema that change
  how it trains, none of them a path, a data source, a network service or Hydra's own), no `+`, `++` or `~` prefix,
  and a value of the grammar `VALUES` describes: a number, a boolean, `null`, a word of letters, digits and
  `_ . - : / +`, or a list of those, nothing else. Without `$`, `\`, quotes, braces, parentheses, spaces and
  top-level commas there is no interpolation, escape, quoted string, function or sweep for Hydra or OmegaConf to
  find. The keys the page sets from its own fields are refused with the field to use instead, except the ones the
  plan only derives (`DERIVED`), which may be overridden deliberately: the field's tokens come last, so they win;
- a run's overrides kept to resume it (`check_saved`) are checked again when they are read back: each one must be
  what the page writes, a `quote`d path for the keys of `QUOTED`, the recipe's name, or a value of the grammar.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_KEY = re.compile(rf"{_NAME}(\.{_NAME})*")
_WORD = r"[A-Za-z0-9_.:/+-]+"
_VALUE = re.compile(rf"{_WORD}|\[({_WORD}(,{_WORD})*)?\]")
_VALUE_CHAR = re.compile(r"[A-Za-z0-9_.:/+\-\[\],]")

VALUES = (
    "a number, true, false, null, a word of letters, digits and _ . - : / + (max-autotune-no-cudagraphs, "
    "ipa:en-us, val/loss), or a list of those with no spaces ([0.9,0.999], [wer,sim])"
)
"""The grammar of a "More overrides" value, in words, for messages and the docs."""

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

QUOTED = frozenset({"run_dir", "data.dir", "init.weights", "init.vocab", "sample.vocoder_source"})
"""The keys of `FIELDS` whose values the plan writes with `quote` (paths)."""

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
    those are doubled and each quote gets one; any other character, `,` `[` `=` `\{` `$` and spaces included, is
    literal.

    Raises:
        ValueError: the value holds `${` (see `literal`).
    """
    body = re.sub(r"(\\*)'", lambda m: m.group(1) * 2 + "\\'", literal(value, what))
    return "'" + re.sub(r"(\\+)$", lambda m: m.group(1) * 2, body) + "'"


def value_problem(value: str) -> str | None:
    """Why a "More overrides" value is not plain data of the grammar `VALUES` describes, or None if it is.

    Args:
        value: what follows the token's first `=`.

    Returns:
        One clause naming the first character that cannot be in a value, or saying the value is not of the grammar.
    """
    bad = next((c for c in value if not _VALUE_CHAR.fullmatch(c)), None)
    if bad is not None:
        return f"{bad!r} cannot be in a value (values are data: no escapes, quotes, braces, functions); give {VALUES}"
    if not _VALUE.fullmatch(value):
        return f"not a value (a ',' outside brackets is a sweep; lists do not nest); give {VALUES}"
    return None


def check_extra(tokens: Iterable[str]) -> list[str]:
    """The "More overrides" tokens, if each one is an allowed `key=value` whose value is data (`value_problem`).

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
        else:
            why = value_problem(value)
        if why:
            raise ValueError(f"override {token!r} is refused: {why}")
        checked.append(token)
    return checked


def check_saved(saved: object, source: Path) -> list[str]:
    """A run's kept overrides, read back from `source` to resume it, if each one is still what the page writes.

    The page checked them before writing them, but the file may have been edited since, and the trainer composes
    what it holds: a `quote`d path for the keys of `QUOTED`, `+recipe=NAME`, another key of `FIELDS` with a value
    of the grammar (`value_problem`), or a token `check_extra` accepts.

    Args:
        saved: the file's JSON.
        source: the file, named in the message.

    Raises:
        ValueError: not a list of strings, or one line naming the file and the first refused token and why.
    """
    if not isinstance(saved, list) or not all(isinstance(token, str) for token in saved):
        raise ValueError(f"{source} is not a list of overrides: start the run again with Start")
    for token in saved:
        key, _, value = token.partition("=")
        if key in FIELDS or key == "+recipe":
            why = _page_value_problem(key, value)
            if why:
                raise ValueError(f"{source}: override {token!r} is refused: {why}")
        else:
            try:
                check_extra([token])
            except ValueError as err:
                raise ValueError(f"{source}: {err}") from None
    return saved


def _page_value_problem(key: str, value: str) -> str | None:
    """Why the value of a key the plan sets (`FIELDS`, `+recipe`) is not what the plan writes, or None."""
    if key in QUOTED:
        return (
            None if _is_quoted(value) else "a path must be a single-quoted literal without '${', as the page writes it"
        )
    if key == "+recipe":
        return None if re.fullmatch(_NAME, value) else "not a recipe's name"
    return value_problem(value)


def _is_quoted(value: str) -> bool:
    """Whether `value` is exactly what `quote` writes for some path: Hydra reads it back to a string quoted alike."""
    try:
        path = OverridesParser.create().parse_override(f"key={value}").value()
        return isinstance(path, str) and quote(path, "the path") == value
    except (HydraException, ValueError):
        return False
