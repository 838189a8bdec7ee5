"""The cloning recipes of issue 55: `clone_cpu` (speak_cpu's model on the clone corpus) and `clone_cpu_adapt` (one
voice's 5 minutes, every weight or LoRA), as the trainer and the studio's Train tab compose them; with the engines
installed, a small corpus trains both a few updates, the adaptation starting from the first's export."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.scripts import load_script

from f5lite.config import compose_config

ENGINES = all(shutil.which(p) for p in ("flite", "text2wave", "espeak-ng"))


def test_clone_cpu_is_speak_cpus_model_on_the_clone_corpus() -> None:
    clone, speak = compose_config(["+recipe=clone_cpu"]), compose_config(["+recipe=speak_cpu"])
    assert vars(clone.model) == vars(speak.model)
    assert (clone.data.dir, clone.data.tokenizer, clone.run_name) == ("runs/clone_corpus", "ipa", "clone_cpu")
    assert clone.optim.max_updates == 5000 and clone.init.weights is None


def test_the_adaptation_starts_from_clone_cpu_with_its_architecture_and_switches_to_lora() -> None:
    clone, adapt = compose_config(["+recipe=clone_cpu"]), compose_config(["+recipe=clone_cpu_adapt"])
    assert vars(adapt.model) == vars(clone.model) and adapt.data.tokenizer == clone.data.tokenizer
    assert adapt.init.weights == "runs/clone_cpu/export" and adapt.data.dir == "runs/clone_corpus/adapt/slt"
    assert adapt.optim.lr < clone.optim.lr and adapt.optim.max_updates <= 1000 and adapt.finetune.lora.rank == 0
    # An EMA as slow as clone_cpu's would export mostly the base model after a few hundred updates.
    assert adapt.ema.decay <= 0.99 and adapt.ema.update_after == 0
    lora = compose_config(["+recipe=clone_cpu_adapt", "finetune.lora.rank=16", "optim.lr=2.0e-3"])
    assert lora.finetune.lora.rank == 16 and lora.init.weights == adapt.init.weights


def test_the_studio_train_tab_runs_the_adaptation_in_both_modes(tmp_path: Path) -> None:
    from f5lite.studio.training import Plan, compose, recipes

    assert {"clone_cpu", "clone_cpu_adapt"} <= set(recipes())
    base = tmp_path / "clone_cpu" / "export"
    for mode in ("full", "lora"):
        plan = Plan("clone_cpu_adapt", mode=mode, base=str(base), max_updates=600, precision="auto")
        config = compose(plan.overrides(tmp_path / "slt", tmp_path / f"run_{mode}"))
        assert config.init.weights == str(base) and config.data.dir == str(tmp_path / "slt")
        assert config.finetune.lora.rank == (16 if mode == "lora" else 0)
        assert vars(config.model) == vars(compose_config(["+recipe=clone_cpu"]).model)


@pytest.mark.heavy  # a small clone corpus, then a few updates of each recipe (about a minute); `make test-heavy`
@pytest.mark.skipif(not ENGINES, reason="needs flite, festival and espeak-ng (apt-get install flite festival "
                    "festvox-kallpc16k festvox-kdlpc16k espeak-ng)")  # fmt: skip
def test_clone_cpu_trains_and_its_export_is_adapted_fully_and_with_lora(tmp_path: Path) -> None:
    pytest.importorskip("phonemizer")
    pytest.importorskip("peft")
    from f5lite.storage.model_sources import load_source
    from f5lite.train.cli import main as train

    corpus = tmp_path / "clone"
    argv = ["--out", str(corpus), "--train", "44", "--test-per-voice", "1", "--train-rows-per-voice", "1",
            "--prompts", "1", "--enroll", "2", "--val", "2", "--workers", "2", "--adapt-minutes", "0.3"]  # fmt: skip
    assert load_script("make_clone_corpus").main(argv) == 0
    small = ["optim.max_updates=2", "ckpt.every=2", "eval.every=0", "data.num_workers=0", "data.frames_per_gpu=1500",
             "logger.every=1"]  # fmt: skip
    base = tmp_path / "base"
    assert train(["+recipe=clone_cpu", f"data.dir={corpus}", f"run_dir={base}", *small]) == 0
    adapt = [f"data.dir={corpus / 'adapt' / 'slt'}", f"init.weights={base / 'export'}", *small]
    assert train(["+recipe=clone_cpu_adapt", f"run_dir={tmp_path / 'full'}", *adapt]) == 0
    assert train(["+recipe=clone_cpu_adapt", f"run_dir={tmp_path / 'lora'}", "finetune.lora.rank=4", *adapt]) == 0
    for run in ("full", "lora"):
        assert load_source(tmp_path / run / "export").tokenizer == "ipa"
