"""What is at this path? The one place that tells model sources apart and loads any of them.

A model can come from four kinds of path, and every reader (`f5lite-infer`, `Synthesizer.from_pretrained`,
`init.weights` for fine-tuning, `f5lite-export`) goes through `identify` and `load_source`, so they accept the same
things and fail with the same one-line messages:

- a training run directory (`config.yaml` + `checkpoints/`): the EMA weights of its newest intact checkpoint (or of
  a given update); a LoRA run's adapters are folded into its `init.weights`;
- an f5lite export directory (`config.json` written by `f5lite.storage.pretrained.save_pretrained`);
- a LoRA adapter export (`adapter_model.safetensors` + `adapter_config.json`, from `finetune.lora.export=adapter`):
  the adapters folded into the base weights it names;
- an official F5-TTS / E2-TTS checkpoint file (`.safetensors` or `.pt`), which holds only weights: its architecture
  comes from a recipe and its token table from the `vocab.txt` released with it.
"""

from __future__ import annotations

import enum
import json
import os
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file
from torch import nn

from f5lite.config import MODEL_SCHEMAS, PREDICTOR_ONLY, ModelConfig, TrainConfig
from f5lite.config.compose import compose_config
from f5lite.models import CheckpointError, build_backbone_from_config, load_backbone_weights, load_f5tts_state_dict
from f5lite.models.checkpoint import PREFIX
from f5lite.models.distill import StudentBackbone
from f5lite.models.duration import DurationPredictor
from f5lite.storage.duration_files import LoadedDuration, has_duration, load_duration
from f5lite.storage.lora import LoraSettings, merged_weights
from f5lite.storage.names import CHECKPOINTS, DURATION_TENSORS, DURATION_UPDATES, EMA_GROUP, VOCAB_FILE
from f5lite.storage.pretrained import CONFIG_FILE as EXPORT_CONFIG
from f5lite.storage.pretrained import load_pretrained
from f5lite.storage.rundir import is_run_dir, load_run_config
from f5lite.storage.store import Checkpoint, CheckpointStore
from f5lite.text import TextEncoder, Vocab, load_vocab
from f5lite.text.tokenizers import BYTE_NUM_EMBEDS, uses_vocab

CHECKPOINT_SUFFIXES = (".safetensors", ".pt")
"""File types read as official F5-TTS checkpoints."""
ADAPTER_WEIGHTS = "adapter_model.safetensors"
"""The adapters of a LoRA adapter export (peft's file name)."""
ADAPTER_CONFIG = "adapter_config.json"
"""peft's description of the adapters in a LoRA adapter export."""
ADAPTER_MODEL_KEY = "f5lite_model"
"""Metadata key of `ADAPTER_WEIGHTS` holding the architecture, tokenizer, mel type and base weights (JSON)."""
TEXT_TABLE = "text_embed.text_embed.weight"
"""The text-embedding table's key in a backbone state dict; row 0 is the filler token."""


class SourceKind(enum.Enum):
    """The kinds of path a model is read from; the value is how messages name them."""

    RUN = "a training run directory"
    EXPORT = "an f5lite export"
    ADAPTER = "a LoRA adapter export"
    OFFICIAL = "an official checkpoint file"


@dataclass(frozen=True)
class LoadedSource:
    """A model read from disk, and what is needed to feed it.

    Attributes:
        kind: what the path was.
        backbone: in eval mode, float32, on the CPU.
        model: its architecture (`text_num_embeds` set).
        tokenizer: `char`, `pinyin` or `byte`.
        mel_type: `vocos` or `bigvgan`.
        vocab: the token table, or None for the byte tokenizer.
        step: the training update of a run's checkpoint; None for other kinds.
        duration: the duration predictor trained with the model (an export's `duration.safetensors`, a run's
            checkpoint with `duration.train=alongside`, or a predictor's run), or None.
    """

    kind: SourceKind
    backbone: nn.Module
    model: ModelConfig
    tokenizer: str
    mel_type: str
    vocab: Vocab | None
    step: int | None = None
    duration: LoadedDuration | None = None


def identify(path: str | os.PathLike[str]) -> SourceKind:
    """Tell what kind of model source `path` is, without reading any weights.

    Raises:
        ValueError: the path does not exist or is none of the kinds (one line saying what each kind needs).
    """
    source = Path(path)
    if source.is_dir():
        if is_run_dir(source):
            return SourceKind.RUN
        if (source / EXPORT_CONFIG).is_file():
            return SourceKind.EXPORT
        if (source / ADAPTER_WEIGHTS).is_file() and (source / ADAPTER_CONFIG).is_file():
            return SourceKind.ADAPTER
        raise ValueError(
            f"model {source} is a directory but neither an f5lite export directory (no {EXPORT_CONFIG}) nor a "
            f"training run directory (no config.yaml and checkpoints/) nor a LoRA adapter export (no {ADAPTER_WEIGHTS})"
        )
    if source.is_file():
        if source.suffix in CHECKPOINT_SUFFIXES:
            return SourceKind.OFFICIAL
        raise ValueError(
            f"model {source} is neither an f5lite export directory, a training run directory nor a .safetensors/.pt "
            "checkpoint"
        )
    raise ValueError(f"model {source} does not exist")


def load_source(
    path: str | os.PathLike[str],
    *,
    recipe: str | None = None,
    vocab: str | os.PathLike[str] | None = None,
    step: int | None = None,
    use_ema: bool = True,
) -> LoadedSource:
    """Load a model from any kind of source (see the module docstring).

    Args:
        path: a training run directory, an f5lite export, a LoRA adapter export or an official checkpoint file.
        recipe: for a checkpoint file, the recipe with its architecture (e.g. `dit_base`); refused for the other
            kinds, which carry their own.
        vocab: for a checkpoint file, its `vocab.txt` (unless the recipe's tokenizer is `byte`); refused otherwise.
        step: for a training run, the checkpoint's update (default: the newest intact one); refused otherwise.
        use_ema: for a checkpoint file, read its EMA weights (what F5-TTS releases) rather than the online ones.

    Returns:
        The backbone and its description.

    Raises:
        ValueError: an unknown or unreadable path, a recipe/vocab/step that does not apply or is missing, weights
            that do not fit the architecture or vocab. One line each.
    """
    kind = identify(path)
    source = Path(path)
    if kind is not SourceKind.OFFICIAL and (recipe is not None or vocab is not None):
        raise ValueError(f"{source} is {kind.value}, which has its own architecture and vocab: drop recipe/vocab")
    if kind is not SourceKind.RUN and step is not None:
        raise ValueError(f"{source} is {kind.value}: a step is chosen only among a training run's checkpoints")
    if kind is SourceKind.RUN:
        return _load_run(source, step)
    if kind is SourceKind.EXPORT:
        try:
            backbone, info = load_pretrained(source)
        except ValueError as err:
            raise ValueError(str(err)) from None
        duration = load_duration(source, tokenizer=info.tokenizer, vocab=info.vocab) if has_duration(source) else None
        return LoadedSource(kind, backbone, info.model, info.tokenizer, info.mel_type, info.vocab, duration=duration)
    if kind is SourceKind.ADAPTER:
        return _load_adapter(source)
    return _load_official(source, recipe, vocab, use_ema)


@dataclass(frozen=True)
class Weights:
    """Bare backbone weights (no `transformer.` prefix) and the vocab they were trained with, if the source says.

    Attributes:
        student: a distilled student's own step and guidance embeddings (`StudentBackbone.step_embed`'s state; its
            backbone's weights are `state`), or None for any other source.
    """

    state: dict[str, torch.Tensor]
    vocab: Vocab | None
    kind: SourceKind
    student: dict[str, torch.Tensor] | None = None


def read_weights(path: str | os.PathLike[str], *, use_ema: bool = True) -> Weights:
    """The weights at `path`, for starting a run from them (`init.weights`): no architecture needs to be known.

    Args:
        path: any model source; an official checkpoint needs no recipe here (its architecture is checked against
            the run's later).
        use_ema: for a checkpoint file, its EMA weights rather than the online ones.

    Raises:
        ValueError: see `load_source`.
    """
    kind = identify(path)
    if kind is SourceKind.OFFICIAL:
        try:
            state = load_f5tts_state_dict(Path(path), use_ema=use_ema)
        except CheckpointError as err:
            raise ValueError(str(err)) from None
        return Weights({k.removeprefix(PREFIX): v for k, v in state.items()}, None, kind)
    loaded = load_source(path)
    if isinstance(loaded.backbone, StudentBackbone):
        inner = loaded.backbone
        return Weights(inner.backbone.state_dict(), loaded.vocab, kind, student=inner.step_embed.state_dict())
    return Weights(loaded.backbone.state_dict(), loaded.vocab, kind)


def run_backbone(cfg: TrainConfig, backbone: nn.Module) -> nn.Module:
    """The network a run trains around a backbone.

    The backbone itself, or, with `objective=distill`, a student of it (`f5lite.models.distill`) that samples with
    `distill.sample.steps` and `distill.sample.cfg_strength`.
    """
    if cfg.objective != "distill":
        return backbone
    defaults = {"steps": cfg.distill.sample.steps, "cfg_strength": cfg.distill.sample.cfg_strength}
    trained = {"steps": list(cfg.distill.steps), "guidance": [float(g) for g in cfg.distill.guidance]}
    return StudentBackbone(backbone, defaults, trained)


def _load_run(root: Path, step: int | None) -> LoadedSource:
    cfg = load_run_config(root)
    if cfg.objective in PREDICTOR_ONLY:
        raise ValueError(
            f"{root} trained only a duration predictor (objective={cfg.objective}): give a model, and this run's export "
            f"as duration={root / 'export'}"
        )
    ckpt = run_checkpoint(root, step)
    vocab = load_vocab(root / VOCAB_FILE) if uses_vocab(cfg.data.tokenizer) else None
    num_embeds = BYTE_NUM_EMBEDS if vocab is None else len(vocab)
    weights = ckpt.tensors[EMA_GROUP]
    if cfg.finetune.lora.rank:  # the checkpoint holds the averaged adapters; the base comes from init.weights
        assert cfg.init.weights is not None
        settings = LoraSettings.from_config(cfg.finetune.lora)
        weights = _fold_adapters(cfg.model, num_embeds, cfg.init.weights, cfg.init.use_ema, weights, settings)
    backbone = run_backbone(cfg, build_backbone_from_config(cfg.model, num_embeds))
    _load_into(backbone, weights, root)
    model = MODEL_SCHEMAS[cfg.model.backbone](**{**vars(cfg.model), "text_num_embeds": num_embeds})
    duration = run_duration(root, cfg, ckpt, vocab)
    return LoadedSource(
        SourceKind.RUN, backbone.eval(), model, cfg.data.tokenizer, cfg.data.mel_type, vocab, ckpt.step, duration
    )


def run_checkpoint(root: Path, step: int | None) -> Checkpoint:
    """A run's newest intact checkpoint, or the one of update `step`.

    Raises:
        ValueError: there is none.
    """
    store = CheckpointStore(root / CHECKPOINTS, writer=False)
    ckpt = store.load_latest() if step is None else store.load_step(step)
    if ckpt is None:
        raise ValueError(f"{root} has no intact checkpoint" + ("" if step is None else f" of update {step}"))
    return ckpt


def run_duration(root: Path, cfg: TrainConfig, ckpt: Checkpoint, vocab: Vocab | None) -> LoadedDuration | None:
    """The duration predictor in a run's checkpoint (`duration.train=alongside`, or `objective=duration`), or None.

    Raises:
        ValueError: its tensors do not fit `duration.*` of the run's config.
    """
    if DURATION_TENSORS not in ckpt.tensors:
        return None
    arch = cfg.duration
    num_embeds = BYTE_NUM_EMBEDS if vocab is None else len(vocab)
    predictor = DurationPredictor(num_embeds, arch.dim, arch.depth, arch.kernel_size)
    try:
        predictor.load_state_dict(ckpt.tensors[DURATION_TENSORS])
    except RuntimeError:
        raise ValueError(f"{root}: the checkpoint's duration predictor does not fit duration.* of its config") from None
    updates = int(ckpt.meta.get(DURATION_UPDATES, 0))
    return LoadedDuration(predictor.eval(), TextEncoder(cfg.data.tokenizer, vocab), updates)


def _fold_adapters(
    model: ModelConfig,
    num_embeds: int,
    base_path: str,
    use_ema: bool,
    adapters: dict[str, torch.Tensor],
    settings: LoraSettings,
) -> dict[str, torch.Tensor]:
    """Plain weights of a LoRA model: the base at `base_path` with `adapters` folded in."""
    base = read_weights(base_path, use_ema=use_ema).state
    if TEXT_TABLE in adapters:  # the vocab grew: the whole table trained and was checkpointed with the adapters
        base[TEXT_TABLE] = adapters[TEXT_TABLE]
    try:
        return merged_weights(build_backbone_from_config(model, num_embeds), base, adapters, settings)
    except CheckpointError as err:
        raise ValueError(f"the base weights {base_path} do not fit the LoRA model: {err}") from None


def _load_adapter(root: Path) -> LoadedSource:
    path = root / ADAPTER_WEIGHTS
    try:
        with safe_open(str(path), framework="pt") as file:
            metadata = file.metadata() or {}
        described = json.loads(metadata[ADAPTER_MODEL_KEY])
        settings_json = json.loads((root / ADAPTER_CONFIG).read_text(encoding="utf-8"))
        model = MODEL_SCHEMAS[described["backbone"]](backbone=described["backbone"], **described["model"])
        settings = LoraSettings(
            int(settings_json["r"]),
            settings_json.get("lora_alpha"),
            target_modules=tuple(settings_json["target_modules"]),
        )
        tokenizer, mel_type = described["tokenizer"], described["mel_type"]
        base_path, use_ema = described["base_weights"], bool(described.get("use_ema", True))
        adapters = load_file(path)
    except KeyError as err:
        raise ValueError(
            f"{root} does not describe its model (missing {err}); export it again with f5lite-export"
        ) from None
    except (OSError, SafetensorError, ValueError, TypeError) as err:
        raise ValueError(f"{root} is not a readable LoRA adapter export: {err}") from None
    vocab = load_vocab(root / VOCAB_FILE) if uses_vocab(tokenizer) else None
    assert model.text_num_embeds is not None
    # peft's files drop the adapter name that the injected modules carry in their keys.
    named = {_with_adapter_name(k): v for k, v in adapters.items()}
    weights = _fold_adapters(model, model.text_num_embeds, base_path, use_ema, named, settings)
    backbone = build_backbone_from_config(model)
    _load_into(backbone, weights, root)
    return LoadedSource(SourceKind.ADAPTER, backbone.eval(), model, tokenizer, mel_type, vocab)


def _with_adapter_name(key: str) -> str:
    for part in (".lora_A.", ".lora_B."):
        if part in key and ".default." not in key:
            return key.replace(part, f"{part}default.")
    return key


def _load_official(
    path: Path, recipe: str | None, vocab_path: str | os.PathLike[str] | None, use_ema: bool
) -> LoadedSource:
    if recipe is None:
        raise ValueError(
            f"{path.name} holds only weights: give the recipe of its architecture, e.g. recipe=dit_base "
            "(F5-TTS v1 Base) or recipe=unett_base (E2-TTS Base)"
        )
    cfg = compose_config([f"+recipe={recipe}"])
    tokenizer = cfg.data.tokenizer
    if uses_vocab(tokenizer) and vocab_path is None:
        raise ValueError(
            f"recipe {recipe} uses the {tokenizer} tokenizer: give the vocab.txt released with the weights"
        )
    vocab = None if vocab_path is None else load_vocab(vocab_path)
    num_embeds = BYTE_NUM_EMBEDS if vocab is None else len(vocab)
    try:
        state = load_f5tts_state_dict(path, use_ema=use_ema)
    except CheckpointError as err:
        raise ValueError(str(err)) from None
    table = state.get(PREFIX + TEXT_TABLE)
    if table is not None and table.shape[0] != num_embeds + 1:
        raise ValueError(
            f"the vocab does not match the weights: {vocab_path or 'the byte tokenizer'} has {num_embeds} tokens but "
            f"{path.name} was trained with {table.shape[0] - 1}; use the vocab.txt released with it"
        )
    backbone = build_backbone_from_config(cfg.model, num_embeds)
    try:
        load_backbone_weights(backbone, state)
    except CheckpointError as err:
        raise ValueError(f"{path.name} does not fit recipe {recipe}: {err}") from None
    model = MODEL_SCHEMAS[cfg.model.backbone](**{**vars(cfg.model), "text_num_embeds": num_embeds})
    return LoadedSource(SourceKind.OFFICIAL, backbone.eval(), model, tokenizer, cfg.data.mel_type, vocab)


def _load_into(backbone: nn.Module, weights: dict[str, torch.Tensor], where: Path) -> None:
    try:
        load_backbone_weights(backbone, weights)
    except CheckpointError as err:
        raise ValueError(f"{where}: {err}") from None
