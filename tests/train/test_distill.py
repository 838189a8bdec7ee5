"""The distillation recipe on the trainer as it is: from a teacher export to a student export that samples in 4 steps.

The teacher is a `debug_tiny` DiT trained for a few updates on the demo data (its export is what a user distills);
the student runs `+recipe=distill` with the same data at a tiny batch.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from support.trainer_helpers import make

from f5lite.config import compose_config
from f5lite.models.distill import StudentBackbone
from f5lite.paths import demo_dir
from f5lite.sampling import SamplerOptions, sample
from f5lite.storage.model_sources import load_source
from f5lite.storage.names import TEACHER_GROUP
from f5lite.storage.rundir import load_run_config
from f5lite.train import Trainer


@pytest.fixture(scope="module")
def teacher(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trained debug_tiny teacher's export (its run exports at the end of training)."""
    root = tmp_path_factory.mktemp("teacher")
    make(root, "optim.max_updates=20", "model.dropout=0.0").fit()
    return root / "run" / "export"


def student_overrides(teacher: Path, run: Path, *extra: str) -> list[str]:
    return [
        "+recipe=distill", f"distill.teacher={teacher}", f"data.dir={demo_dir()}", f"run_dir={run}",
        "data.frames_per_gpu=2000", "data.max_samples=4", "eval.every=0", "logger.every=2", "optim.warmup_updates=2",
        "ema.update_after=0", "model.dropout=0.0", *extra,
    ]  # fmt: skip


def distance_to_teacher_32(student: torch.nn.Module, teacher: torch.nn.Module) -> float:
    """Mel L1 between the student's 4-step and the teacher's 32-step guided samples of two demo-like inputs."""
    g = torch.Generator().manual_seed(0)
    cond = torch.randn(2, 40, 100, generator=g)
    text = torch.randint(1, 20, (2, 24), generator=g)
    lens = torch.tensor([40, 30])
    reference = sample(teacher, cond, text, 120, SamplerOptions(steps=32), lens=lens, seed=1)
    fast = sample(student, cond, text, 120, SamplerOptions(steps=4), lens=lens, seed=1)
    return float((fast - reference)[:, 40:].abs().mean())


@pytest.mark.slow  # 20-30 s of training; measured 0.0283 -> 0.0196 on a 2-core AMD EPYC (2026-11-25)
def test_the_student_starts_as_the_teacher_and_learns_its_32_step_output(teacher: Path, tmp_path: Path) -> None:
    trainer = Trainer(compose_config(student_overrides(teacher, tmp_path / "run", "optim.max_updates=40")))
    assert isinstance(trainer.network, StudentBackbone)
    loaded = load_source(teacher)
    ran = load_run_config(trainer.run_dir)
    assert ran.model == loaded.model and ran.init.weights == str(teacher)
    # At update 0 the student's velocity is the teacher's, whatever its step and guidance inputs.
    x = torch.randn(1, 50, 100)
    cond, text, time = torch.zeros(1, 50, 100), torch.randint(1, 20, (1, 10)), torch.tensor([0.3])
    with torch.no_grad():
        assert torch.equal(
            trainer.network(x, cond, text, time, step=0.25, guidance=2.0), loaded.backbone(x, cond, text, time)
        )
    before = distance_to_teacher_32(trainer.network.eval(), loaded.backbone)
    trainer.network.train()
    trainer.fit()
    student = load_source(tmp_path / "run" / "export").backbone
    assert isinstance(student, StudentBackbone) and student.sampler_defaults == {"steps": 4, "cfg_strength": 2.0}
    after = distance_to_teacher_32(student, loaded.backbone)
    assert after < 0.8 * before, (before, after)


def test_a_distillation_resumes_exactly(teacher: Path, tmp_path: Path) -> None:
    straight = Trainer(compose_config(student_overrides(teacher, tmp_path / "a", "optim.max_updates=4")))
    straight.fit()
    first = Trainer(compose_config(student_overrides(teacher, tmp_path / "b", "optim.max_updates=4", "ckpt.every=2")))
    first.fit(until=2)
    resumed = Trainer(compose_config(student_overrides(teacher, tmp_path / "b", "optim.max_updates=4", "ckpt.every=2")))
    assert resumed.update == 2
    resumed.fit()
    for (name, a), b in zip(straight.network.state_dict().items(), resumed.network.state_dict().values(), strict=True):
        assert torch.equal(a, b), name


@pytest.fixture(scope="module")
def first_stage(teacher: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The export of a first-stage student of `teacher` (a few updates: its step embeddings are no longer zero)."""
    root = tmp_path_factory.mktemp("stage1")
    Trainer(compose_config(student_overrides(teacher, root / "run", "optim.max_updates=3"))).fit()
    return root / "run" / "export"


def states(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def test_the_second_stage_starts_from_the_student_and_its_teacher_averages_it(
    first_stage: Path, tmp_path: Path
) -> None:
    cfg = compose_config(
        [*student_overrides(first_stage, tmp_path / "run", "optim.max_updates=2"), "distill.teacher_decay=0.75"]
    )
    assert compose_config(["+recipe=distill", f"distill.teacher={first_stage}"]).distill.teacher == str(first_stage)
    trainer = Trainer(cfg)
    stage_one_model = load_source(first_stage).backbone
    # The export says what it was distilled for (the recipe's step counts and guidance range).
    assert getattr(stage_one_model, "trained", None) == {"steps": [2, 4, 8], "guidance": [1.0, 3.0]}
    stage_one = states(stage_one_model)
    assert any(v.abs().sum() > 0 for k, v in stage_one.items() if k.startswith("step_embed.") and "2." in k)
    distillation = trainer.objective.distillation
    assert distillation is not None and distillation.follow == 0.75
    # Student and teacher both start as the first stage's student, its trained step embeddings included.
    for name, value in stage_one.items():
        assert torch.equal(trainer.network.state_dict()[name], value), name
        assert torch.equal(distillation.teacher.state_dict()[name], value), name
    trainer.fit(until=1)
    student, teacher = states(trainer.network), states(distillation.teacher)
    moved = 0
    for name, start in stage_one.items():
        expected = start + 0.25 * (student[name] - start)  # 1 - decay of the way to the student, after one update
        torch.testing.assert_close(teacher[name], expected, rtol=0, atol=1e-6 * (1 + start.abs().max().item()))
        moved += int(not torch.equal(student[name], start))
    assert moved > len(stage_one) // 2  # the update changed the student, so the average is not trivially its start


def test_a_second_stage_resumes_exactly_with_its_teacher(first_stage: Path, tmp_path: Path) -> None:
    extra = ("optim.max_updates=4", "ckpt.every=2", "distill.teacher_decay=0.5")
    straight = Trainer(compose_config(student_overrides(first_stage, tmp_path / "a", *extra)))
    straight.fit()
    Trainer(compose_config(student_overrides(first_stage, tmp_path / "b", *extra))).fit(until=2)
    resumed = Trainer(compose_config(student_overrides(first_stage, tmp_path / "b", *extra)))
    assert resumed.update == 2
    resumed.fit()
    assert straight.objective.distillation is not None and resumed.objective.distillation is not None
    for a, b in (
        (straight.network, resumed.network),
        (straight.objective.distillation.teacher, resumed.objective.distillation.teacher),
    ):
        for (name, x), y in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
            assert torch.equal(x, y), name


def test_refusals_name_the_problem(teacher: Path, first_stage: Path, tmp_path: Path) -> None:
    # A distilled student's backbone is no flow model of its own: only a distillation starts from it.
    with pytest.raises(ValueError, match="is a distilled student: fine-tune the model it was distilled from"):
        make(tmp_path, f"init.weights={first_stage}", "optim.max_updates=1", name="plain")
    # A teacher whose vocab has one more token than the data's: the data must be tokenized as the teacher was.
    data = tmp_path / "data"
    shutil.copytree(demo_dir(), data)
    (data / "vocab.txt").write_text((data / "vocab.txt").read_text(encoding="utf-8") + "ж\n", encoding="utf-8")
    make(tmp_path, "optim.max_updates=1", f"data.dir={data}", name="other").fit()
    with pytest.raises(ValueError, match="another vocab than the training data"):
        Trainer(compose_config(student_overrides(tmp_path / "other" / "export", tmp_path / "s3")))
    for bad, message in (("distill.steps=[]", "distill.steps"), ("distill.guidance=[3,1]", "distill.guidance")):
        with pytest.raises(ValueError, match=message):
            compose_config(student_overrides(teacher, tmp_path / "s4", bad))


@pytest.mark.slow  # three two-rank runs under torchrun, ~1 min
def test_a_two_rank_second_stage_resumes_with_the_same_teacher_on_every_rank(first_stage: Path, tmp_path: Path) -> None:
    """Only rank 0 reads the checkpoint: rank 1's teacher comes from it too, or its targets (and so the all-reduced
    gradients, and so the student) would differ from a run that never stopped."""
    extra = ("optim.max_updates=4", "ckpt.every=2", "distill.teacher_decay=0.5", "data.num_workers=0")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}

    def torchrun(run: Path, *more: str) -> None:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "f5lite.train"]
        done = subprocess.run(
            [*cmd, *student_overrides(first_stage, run, *extra, *more)], capture_output=True, text=True, env=env
        )
        assert done.returncode == 0, done.stderr[-3000:]

    torchrun(tmp_path / "straight")
    torchrun(tmp_path / "stopped", "optim.max_updates=2")  # the same run, ended at its checkpoint of update 2
    torchrun(tmp_path / "stopped")  # resumed to update 4 (the changed max_updates is allowed on resume)
    for group in ("model", TEACHER_GROUP):
        straight, resumed = (load_file(tmp_path / run / "checkpoints" / "step-00000004" / f"{group}.safetensors")
                             for run in ("straight", "stopped"))  # fmt: skip
        for name, value in straight.items():
            assert torch.equal(value, resumed[name]), (group, name)
