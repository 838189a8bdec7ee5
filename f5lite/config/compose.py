"""Compose a validated `TrainConfig` from the YAML configs, a recipe and command-line overrides.

Precedence, lowest first: schema defaults < group YAML (`model/dit.yaml`, ...) < `train.yaml` < recipe (`+recipe=...`)
< command-line `key=value`. Every Hydra or OmegaConf failure comes back as one `ValueError` whose one-line message
names the key or the option at fault.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.errors import HydraException, MissingConfigException
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from f5lite.audio.vocoder import VOCODER_SPELLINGS
from f5lite.config.schema import TrainConfig
from f5lite.config.store import register_configs
from f5lite.config.structured import open_structured
from f5lite.paths import config_roots

KEY_ALIASES = {"ckpt.async": "ckpt.async_save", "teacher": "distill.teacher"}
"""Spellings the training command line accepts: for fields whose real name cannot be a Python identifier, and the
distillation's teacher (`+recipe=distill teacher=DIR`)."""

T = TypeVar("T")


SAMPLE_ALIASES = {"seed": "sample.seed", "vocoder": "sample.vocoder", "vocoder_path": "sample.vocoder_source"}
"""The tools' short spellings of sampler-section keys (`f5lite-infer`, `f5lite-eval`)."""


def split_tool_args(args: Sequence[str], literal_keys: set[str]) -> tuple[list[str], dict[str, str]]:
    """Split a tool's `key=value` arguments into Hydra overrides and values set verbatim.

    Short spellings (`SAMPLE_ALIASES`) become their keys and other spellings of a vocoder name its name; the keys
    in `literal_keys` (free text and paths) bypass Hydra's override grammar.

    Args:
        args: the command-line arguments.
        literal_keys: the keys whose values are taken verbatim.

    Returns:
        The overrides for `compose_structured`, and its `literals`.
    """
    overrides: list[str] = []
    literals: dict[str, str] = {}
    for arg in args:
        key, sep, value = arg.partition("=")
        key = SAMPLE_ALIASES.get(key, key)
        if key == "sample.vocoder":
            value = VOCODER_SPELLINGS.get(value, value)
        if sep and key in literal_keys:
            literals[key] = value
        else:
            overrides.append(f"{key}{sep}{value}")
    return overrides, literals


def compose_config(
    overrides: Sequence[str] = (),
    *,
    config_name: str = "train",
    configs_dir: Path | None = None,
    recipes_dir: Path | None = None,
) -> TrainConfig:
    """Compose, resolve and validate a training config.

    Args:
        overrides: Hydra overrides as on the command line, e.g. ``["+recipe=dit_base", "perf.compile=true"]``.
        config_name: Primary config in `configs_dir` (without `.yaml`).
        configs_dir: Folder of primary configs and groups; default: the checkout's or the installed package's.
        recipes_dir: Folder of recipes; default: the checkout's or the installed package's.

    Returns:
        The config as dataclass objects (`model` is a `DiTConfig`, `MMDiTConfig` or `UNetTConfig`).

    Raises:
        ValueError: An unknown group option or recipe, an unknown key, a value of the wrong type, or a value the
            schema rejects. The message is one line and names the key.
    """
    cfg = compose_structured(
        overrides,
        config_name=config_name,
        configs_dir=configs_dir,
        recipes_dir=recipes_dir,
        listing="python -m f5lite.config",
    )
    return cast(TrainConfig, cfg)


def compose_tool_config(args: Sequence[str], *, name: str, schema: type[T], literal_keys: set[str], listing: str) -> T:
    """Compose a tool's config from its command-line `key=value` arguments.

    The tool's schema lives with the tool; it is stored here as `<name>_schema`, the node that the defaults list of
    `configs/<name>.yaml` names, on every call, so that it is there whichever entry point composed first in this
    process.

    Args:
        args: the arguments, e.g. ``["model=exp/", "text=Hi, you.", "sample.steps=7"]``.
        name: the tool's primary config in `configs/` (without `.yaml`), e.g. ``"infer"``.
        schema: the dataclass the config composes into.
        literal_keys: the keys whose values are taken verbatim (see `split_tool_args`).
        listing: where a user sees the tool's keys, named in the error about an unknown key.

    Returns:
        The validated config.

    Raises:
        ValueError: an unknown key or a bad value, in one line naming the key.
    """
    ConfigStore.instance().store(name=f"{name}_schema", node=open_structured(schema))
    overrides, literals = split_tool_args(args, literal_keys)
    cfg = compose_structured(overrides, config_name=name, literals=literals, listing=listing)
    if not isinstance(cfg, schema):
        raise TypeError(f"configs/{name}.yaml composed a {type(cfg).__name__}, not a {schema.__name__}")
    return cfg


def compose_structured(
    overrides: Sequence[str] = (),
    *,
    config_name: str,
    literals: Mapping[str, str] | None = None,
    configs_dir: Path | None = None,
    recipes_dir: Path | None = None,
    listing: str | None = None,
) -> object:
    """Compose any primary config of `configs_dir` into its dataclass objects (`compose_config` does `train`).

    Args:
        overrides: Hydra overrides as on the command line.
        config_name: Primary config in `configs_dir` (without `.yaml`), e.g. ``"infer"``.
        literals: Keys set to exactly these strings after the overrides. Hydra's override grammar does not parse
            them (free text with commas or quotes, paths), and a key named like a config group (`model=PATH` in
            `infer.yaml`) is not taken for a group choice.
        configs_dir: Folder of primary configs and groups; default: the checkout's or the installed package's.
        recipes_dir: Folder of recipes; default: the checkout's or the installed package's.
        listing: Where a user sees the config's keys, named in the error about an unknown key; default the YAML file.

    Returns:
        The config as the dataclass objects of its schema.

    Raises:
        ValueError: As for `compose_config`, one line naming the key.
    """
    default_configs, default_recipes = config_roots()
    configs_dir = (configs_dir or default_configs).resolve()
    recipes = register_configs((recipes_dir or default_recipes).resolve())
    overrides = [_apply_alias(o) for o in overrides]
    try:
        with initialize_config_dir(config_dir=str(configs_dir), version_base="1.3"):
            dcfg = compose(config_name=config_name, overrides=list(overrides))
        for key, value in (literals or {}).items():
            OmegaConf.update(dcfg, key, value, merge=False)
        cfg = OmegaConf.to_object(dcfg)
        unknown = _unknown_keys(OmegaConf.to_container(dcfg), OmegaConf.to_container(OmegaConf.structured(cfg)))
    except MissingConfigException as err:
        raise ValueError(_missing_option_message(err, configs_dir, recipes)) from err
    except (HydraException, OmegaConfBaseException) as err:
        raise ValueError(_one_line(err)) from err
    if unknown:
        # `+key=value` opens the typed config for new keys, and turning it into dataclasses would drop them silently.
        where = listing or f"configs/{config_name}.yaml"
        raise ValueError(f"{', '.join(unknown)}: not a config key (check the spelling; see {where})")
    return cfg


def config_to_yaml(cfg: TrainConfig) -> str:
    """Render a config as YAML, e.g. to freeze it into a run directory.

    Args:
        cfg: A composed config.

    Returns:
        The YAML text, every key present and interpolations already resolved (`run_dir` is a plain path).
    """
    return OmegaConf.to_yaml(OmegaConf.structured(cfg))


def _apply_alias(override: str) -> str:
    key, sep, value = override.partition("=")
    prefix = key[: len(key) - len(key.lstrip("+~"))]
    bare = key[len(prefix) :]
    return f"{prefix}{KEY_ALIASES.get(bare, bare)}{sep}{value}"


def _unknown_keys(composed: Any, typed: Any, prefix: str = "") -> list[str]:
    """Dotted keys present in `composed` but absent from `typed` (both plain nested dicts)."""
    unknown = []
    for key, value in composed.items():
        name = f"{prefix}{key}"
        if key not in typed:
            unknown.append(name)
        elif isinstance(value, dict) and isinstance(typed[key], dict):
            unknown.extend(_unknown_keys(value, typed[key], f"{name}."))
    return unknown


def _missing_option_message(err: MissingConfigException, configs_dir: Path, recipes: list[str]) -> str:
    # Hydra's message lists options over several lines and includes our internal `*_schema` entries.
    missing = err.missing_cfg_file or ""
    group, _, option = missing.rpartition("/")
    if group == "recipe":
        return f"recipe={option!r} is not a known recipe; choose one of: {', '.join(recipes)}"
    if group:
        options = ", ".join(sorted(p.stem for p in (configs_dir / group).glob("*.yaml")))
        return f"{group}={option!r} is not a known option; choose one of: {options}"
    return _one_line(err)


def _one_line(err: BaseException) -> str:
    # OmegaConf puts the useful part ("... could not be converted to Integer", "full_key: model.dim") in the cause,
    # while Hydra's own message only says which override failed; join both, one line.
    parts = []
    current: BaseException | None = err
    while current is not None:
        text = " ".join(line.strip() for line in str(current).splitlines() if line.strip())
        for noise in (" object_type=", " reference_type="):
            text = text.split(noise)[0]
        if text and text not in parts:
            parts.append(text)
        current = current.__cause__
    return ": ".join(parts) if parts else type(err).__name__
