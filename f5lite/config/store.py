"""Registers the schemas and the recipes in Hydra's ConfigStore.

Recipes live in the top-level `recipes/` folder but are selected as the group `recipe` (`+recipe=dit_base`). A Hydra
group is named after its folder, so instead of putting `recipes/` on the search path (which would make the group
`recipes`, and resolve relative paths from the working directory) each file is stored under group `recipe` with
`package="_global_"`: a recipe is a delta over the whole config, and it works from any directory.
"""

from __future__ import annotations

from pathlib import Path

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from f5lite.config.model import MODEL_SCHEMAS
from f5lite.config.structured import open_structured
from f5lite.config.train_run import TrainConfig
from f5lite.paths import DEMO_RESOLVER, demo_dir


def register_configs(recipes_dir: Path) -> list[str]:
    """Store the training schemas (the run, one per backbone family) and every `recipes_dir/*.yaml` as group `recipe`.

    Also registers the OmegaConf resolver `${f5lite.demo_dir:}` (the shipped demo dataset's directory).

    Args:
        recipes_dir: Folder of recipe YAML files.

    Returns:
        The recipe names, sorted.

    Raises:
        ValueError: A recipe file is not valid YAML, or is not a mapping.
    """
    if not OmegaConf.has_resolver(DEMO_RESOLVER):
        # `data.dir: ${f5lite.demo_dir:}` names the shipped demo dataset whatever the working directory.
        OmegaConf.register_new_resolver(DEMO_RESOLVER, lambda: str(demo_dir()))
    store = ConfigStore.instance()
    store.store(name="train_schema", node=open_structured(TrainConfig))
    for name, schema in MODEL_SCHEMAS.items():
        store.store(group="model", name=f"{name}_schema", node=schema)
    # Forget recipes registered from another folder earlier in this process, so only `recipes_dir` is offered.
    store.repo.pop("recipe", None)
    names = []
    for path in sorted(recipes_dir.glob("*.yaml")):
        try:
            node = OmegaConf.load(path)
        except Exception as err:  # yaml and OmegaConf raise several unrelated types for a malformed file
            raise ValueError(f"recipe {path} is not valid YAML: {err}".replace("\n", " ")) from err
        if not OmegaConf.is_dict(node):
            raise ValueError(f"recipe {path} must be a mapping of config keys")
        store.store(group="recipe", name=path.stem, node=node, package="_global_")
        names.append(path.stem)
    return names
