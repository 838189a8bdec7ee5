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

from f5lite.audio.vocoder import REMOVED_VOCODER_NAMES
from f5lite.config.store import register_configs
from f5lite.config.structured import check_sampler_sections, open_structured
from f5lite.config.train_run import TrainConfig
from f5lite.paths import config_roots

COMMAND_LINE_NAMES = {"ckpt.async": "ckpt.async_save"}
"""Training keys whose field cannot carry the name the command line gives them: `async` is a Python keyword, which no
dataclass field can be named, so the field of `ckpt.async` is `async_save` (either name sets it)."""

REMOVED_KEYS = {
    "teacher": "distill.teacher",
    "grpo.steps": "grpo.sample.steps",
    "grpo.cfg_strength": "grpo.sample.cfg_strength",
    "distill.student_steps": "distill.sample.steps",
    "distill.student_guidance": "distill.sample.cfg_strength",
}
"""Training keys of earlier versions, by the key that replaced them: refused in one line naming it."""

REMOVED_TOOL_KEYS = {"seed": "sample.seed", "vocoder": "sample.vocoder", "vocoder_path": "sample.vocoder_source"}
"""The tools' short spellings of sampler keys in earlier versions (`f5lite-infer`, `f5lite-eval`, `f5lite-serve`,
`f5lite-studio`), by the key that replaced them: refused in one line naming it."""

T = TypeVar("T")


def refuse_removed_keys(args: Sequence[str], removed: Mapping[str, str]) -> None:
    """Refuse an argument that spells its key as an earlier version did.

    Args:
        args: `key=value` arguments or Hydra overrides (`+key=value` and `~key` too).
        removed: the removed keys, by the key to write instead.

    Raises:
        ValueError: one line naming the argument and how to write it now (its value too, for a vocoder name of an
            earlier version).
    """
    for arg in args:
        key, sep, value = arg.partition("=")
        bare = key.lstrip("+~")
        if bare in removed:
            new = REMOVED_VOCODER_NAMES.get(value, value) if removed[bare] == "sample.vocoder" else value
            raise ValueError(f"{bare}{sep}{value} is no longer accepted; write {removed[bare]}{sep}{new}")


def refuse_removed_flags(argv: Sequence[str], removed: Mapping[str, str]) -> None:
    """Refuse a flag that a tool took in earlier versions and now takes as a `key=value` argument.

    Args:
        argv: the command line, e.g. ``["model=m", "--device", "cpu"]``.
        removed: the removed flags (`--device`), by the key to write instead (`device`).

    Raises:
        ValueError: one line naming the flag and how to write it now.
    """
    for i, arg in enumerate(argv):
        flag, sep, value = arg.partition("=")
        if flag in removed:
            given = value if sep else (argv[i + 1] if i + 1 < len(argv) else "VALUE")
            shown = f"{flag}{sep}{value}" if sep else f"{flag} {given}".rstrip()
            raise ValueError(f"{shown} is no longer accepted; write {removed[flag]}={given}")


def split_tool_args(args: Sequence[str], literal_keys: set[str]) -> tuple[list[str], dict[str, str]]:
    """Split a tool's `key=value` arguments into Hydra overrides and values set verbatim.

    The keys in `literal_keys` (free text and paths) bypass Hydra's override grammar; a removed spelling of a key
    (`REMOVED_TOOL_KEYS`) is refused.

    Args:
        args: the command-line arguments.
        literal_keys: the keys whose values are taken verbatim.

    Returns:
        The overrides for `compose_structured`, and its `literals`.

    Raises:
        ValueError: a removed spelling, in one line naming the key to write.
    """
    refuse_removed_keys(args, REMOVED_TOOL_KEYS)
    overrides: list[str] = []
    literals: dict[str, str] = {}
    for arg in args:
        key, sep, value = arg.partition("=")
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
        ValueError: An unknown group option or recipe, an unknown key, a value of the wrong type, a value the
            schema rejects, or a key spelled as an earlier version did. The message is one line and names the key.
    """
    refuse_removed_keys(overrides, REMOVED_KEYS)
    cfg = compose_structured(
        [_command_line_name(o) for o in overrides],
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
    try:
        with initialize_config_dir(config_dir=str(configs_dir), version_base="1.3"):
            dcfg = compose(config_name=config_name, overrides=list(overrides))
        for key, value in (literals or {}).items():
            OmegaConf.update(dcfg, key, value, merge=False)
        check_sampler_sections(dcfg)
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


def _command_line_name(override: str) -> str:
    """The override with a key's command-line name (`COMMAND_LINE_NAMES`) made its field's."""
    key, sep, value = override.partition("=")
    prefix = key[: len(key) - len(key.lstrip("+~"))]
    bare = key[len(prefix) :]
    return f"{prefix}{COMMAND_LINE_NAMES.get(bare, bare)}{sep}{value}"


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
