"""`objective`: one key picks how a run trains; a setting no chosen objective reads is refused; old runs still load."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from f5lite.config import compose_config, config_to_yaml
from f5lite.config.objective import OBJECTIVES, READERS
from f5lite.sampling import SamplerOptions
from f5lite.storage.names import CONFIG_FILE
from f5lite.storage.rundir import load_run_config
from f5lite.train.objective import ENTRIES, prepare_objective


@pytest.mark.parametrize(
    ("recipe", "objective"),
    [("speak_cpu", "flow"), ("distill", "distill"), ("grpo", "grpo"), ("duration_small", "duration"),
     ("duration_grpo", "duration_grpo")],
)  # fmt: skip
def test_each_recipe_names_its_objective(recipe: str, objective: str) -> None:
    assert compose_config([f"+recipe={recipe}"]).objective == objective


def test_every_objective_has_an_entry_and_every_reader_is_an_objective() -> None:
    assert set(ENTRIES) == set(OBJECTIVES)
    assert all(set(readers) <= set(OBJECTIVES) for readers in READERS.values())


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["distill.teacher=runs/x"], "distill.teacher='runs/x' is read only with objective=distill, not with objective=flow"),
        (["+recipe=grpo", "finetune.lora.rank=4"], "finetune.lora.rank=4 is read only with objective=flow"),
        (["+recipe=distill", "duration=small"], "duration.train='alongside' is read only with objective=flow"),
        (["duration.init=runs/p"], "duration.init='runs/p' is read only with objective=duration or objective=duration_grpo"),
        (["objective=ppo"], "objective='ppo' is not valid; choose one of: flow, distill, grpo, duration, duration_grpo"),
        (["duration.train=alone"], "duration.train=alone was removed; use objective=duration"),
        (["duration.train=grpo"], "duration.train=grpo was removed; use objective=duration_grpo"),
    ],
)  # fmt: skip
def test_a_setting_no_chosen_objective_reads_is_refused_in_one_line(overrides: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message) as err:
        compose_config(overrides)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("recipe", "missing"),
    [("distill", "distill.teacher"), ("grpo", "grpo.prompts and init.weights"),
     ("duration_grpo", "grpo.prompts and init.weights and duration.init")],
)  # fmt: skip
def test_a_recipe_composes_without_its_inputs_but_does_not_start(recipe: str, missing: str) -> None:
    cfg = compose_config([f"+recipe={recipe}"])  # printing a recipe's config needs none of them
    with pytest.raises(ValueError, match=f"^objective={recipe} needs {missing}$"):
        prepare_objective(cfg)


def stored(tmp_path: Path, **sections: dict[str, object]) -> Path:
    """A run directory whose frozen config is of before `objective`: `sections` set, `objective` absent."""
    raw = yaml.safe_load(config_to_yaml(compose_config(["+recipe=debug_tiny"])))
    del raw["objective"]
    # Its sampler keys as they were then: in the sections, not in their `sample`.
    grpo, distill = raw["grpo"].pop("sample"), raw["distill"].pop("sample")
    raw["grpo"].update(steps=grpo["steps"], cfg_strength=grpo["cfg_strength"])
    raw["distill"].update(student_steps=distill["steps"], student_guidance=distill["cfg_strength"])
    for name, values in sections.items():
        raw[name].update(values)
    (tmp_path / CONFIG_FILE).write_text(yaml.safe_dump(raw), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("sections", "objective"),
    [({}, "flow"), ({"duration": {"train": "alongside"}}, "flow"), ({"duration": {"train": "alone"}}, "duration"),
     ({"duration": {"train": "grpo"}, "grpo": {"prompts": "p.txt"}}, "duration_grpo"),
     ({"distill": {"teacher": "runs/t"}}, "distill"), ({"grpo": {"prompts": "p.txt"}}, "grpo")],
)  # fmt: skip
def test_a_run_directory_of_before_objective_loads_with_its_objective_inferred(
    tmp_path: Path, sections: dict[str, dict[str, object]], objective: str
) -> None:
    cfg = load_run_config(stored(tmp_path, **sections))
    assert cfg.objective == objective
    assert cfg.duration.train == ("alongside" if sections.get("duration", {}).get("train") == "alongside" else "none")


def test_an_old_run_s_sampler_keys_load_into_their_sections_with_the_grid_it_used(tmp_path: Path) -> None:
    old = {"grpo": {"steps": 16, "cfg_strength": 2.0}, "distill": {"student_steps": 6, "student_guidance": 1.5},
           "sample": {"schedule": "uniform", "sway": None, "steps": 32}}  # fmt: skip
    cfg = load_run_config(stored(tmp_path, **old))
    assert cfg.grpo.sample == SamplerOptions(steps=16, cfg_strength=2.0, schedule="uniform", sway=None)
    assert cfg.distill.sample == SamplerOptions(steps=6, cfg_strength=1.5, schedule="uniform", sway=None)


@pytest.mark.parametrize(
    ("given", "message"),
    [("grpo.steps=4", "grpo.steps=4 is no longer accepted; write grpo.sample.steps=4"),
     ("grpo.cfg_strength=2", "grpo.cfg_strength=2 is no longer accepted; write grpo.sample.cfg_strength=2"),
     ("distill.student_guidance=1", "distill.student_guidance=1 is no longer accepted; write distill.sample.cfg_strength=1"),
     ("grpo.sample.steps=0", "grpo.sample.steps=0 is not valid; it must be >= 1"),
     ("grpo.train_steps=10", "grpo.train_steps=10 is not valid"),
     ("distill.sample.cfg_zero_star=true", "distill.sample.cfg_zero_star=True is not valid; a distilled student")],
)  # fmt: skip
def test_the_sampler_settings_of_grpo_and_distill_are_their_sample_sections(given: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        compose_config(["+recipe=grpo", "grpo.sample.cfg_zero_init_steps=1", given])
    assert str(caught.value).startswith(message)
    options = compose_config(["+recipe=grpo", "grpo.sample.method=midpoint", "grpo.sample.steps=7"]).grpo.sample
    assert options == SamplerOptions(steps=7, method="midpoint", cfg_strength=0.0)


def train(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m f5lite.train ARGS` as a user runs it."""
    return subprocess.run([sys.executable, "-m", "f5lite.train", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(
    ("args", "message"),
    [(["+recipe=duration_grpo"], "f5lite-train: objective=duration_grpo needs grpo.prompts and init.weights and duration.init\n"),
     (["+recipe=duration_small", "duration.train=alone"], "duration.train=alone was removed; use objective=duration\n"),
     (["+recipe=distill", "teacher=runs/t"], "teacher=runs/t is no longer accepted; write distill.teacher=runs/t\n")],
)  # fmt: skip
def test_the_command_refuses_a_run_it_cannot_start_in_one_line_and_writes_nothing(
    tmp_path: Path, args: list[str], message: str
) -> None:
    done = train(*args, f"run_dir={tmp_path / 'run'}")
    assert done.returncode == 2 and done.stderr.endswith(message) and done.stderr.count("\n") == 1, done.stderr
    assert not (tmp_path / "run").exists()


def test_the_command_trains_the_predictor_alone_through_the_one_loop_to_its_export(tmp_path: Path) -> None:
    done = train("+recipe=duration_small", f"run_dir={tmp_path / 'run'}", "optim.max_updates=3", "eval.every=0")
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(p.name for p in (tmp_path / "run" / "export").iterdir()) == [
        "duration.json", "duration.safetensors", "vocab.txt",
    ]  # fmt: skip
    assert yaml.safe_load((tmp_path / "run" / CONFIG_FILE).read_text())["objective"] == "duration"
