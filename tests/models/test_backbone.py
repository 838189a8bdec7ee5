"""The `Backbone` contract as the networks implement it: the student flag, `blocks`, `time_extra`, and a student
whose step size and guidance are arguments all the way down (no state between calls, so concurrent calls are safe)."""

from __future__ import annotations

import threading

import pytest
import torch
from support.tiny_models import tiny_backbone, tiny_batch

from f5lite.models import Backbone
from f5lite.models.distill import StudentBackbone
from f5lite.sampling import SamplerOptions, sample

FAMILIES = ("dit", "mmdit", "unett")


@pytest.mark.parametrize("family", FAMILIES)
def test_plain_backbones_are_not_distilled_and_their_students_are(family: str) -> None:
    teacher = tiny_backbone(family)
    student = StudentBackbone(teacher)
    assert isinstance(teacher, Backbone) and isinstance(student, Backbone)
    assert teacher.distilled is False and student.distilled is True
    assert student.blocks is teacher.blocks  # compile and checkpointing reach the teacher's blocks
    assert (student.mel_dim, student.dim) == (teacher.mel_dim, teacher.dim) == (100, 64)
    with pytest.raises(TypeError, match="a student wraps a Backbone"):
        StudentBackbone(torch.nn.Linear(2, 2))


def test_the_contract_is_abstract_and_sample_takes_only_backbones() -> None:
    with pytest.raises(TypeError, match="abstract"):
        Backbone()  # type: ignore[abstract]
    cond, text = torch.zeros(1, 4, 100), torch.zeros(1, 2, dtype=torch.long)
    with pytest.raises(TypeError, match="backbone must be a Backbone"):
        sample(torch.nn.Linear(100, 100), cond, text, 8)


@pytest.mark.parametrize("family", FAMILIES)
def test_time_extra_is_added_to_the_time_embedding(family: str) -> None:
    model = tiny_backbone(family).eval()
    b = tiny_batch()
    args = (b["x"], b["cond"], b["text"], b["time"], b["mask"])
    extra = torch.randn(2, model.dim)
    plain = model(*args)
    assert torch.equal(model(*args, time_extra=None), plain)
    handle = model.time_embed.register_forward_hook(lambda module, inputs, out: out + extra)
    shifted = model(*args)
    handle.remove()
    assert not torch.allclose(shifted, plain)
    assert torch.equal(model(*args, time_extra=extra), shifted)


def test_a_student_hands_its_step_embedding_to_the_backbone_as_time_extra() -> None:
    teacher = tiny_backbone("dit").eval()
    student = StudentBackbone(teacher).eval()
    torch.nn.init.normal_(student.step_embed.step_mlp[2].weight, std=0.1)
    seen: list[torch.Tensor | None] = []
    teacher.register_forward_hook(lambda m, args, kwargs, out: seen.append(kwargs["time_extra"]), with_kwargs=True)
    b = tiny_batch()
    args = (b["x"], b["cond"], b["text"], b["time"], b["mask"])
    step, guidance = torch.tensor([0.25, 0.5]), torch.tensor([2.0, 1.0])
    extra = torch.randn(2, teacher.dim)
    got = student(*args, step=step, guidance=guidance, time_extra=extra)
    own = student.step_embed(step, guidance)
    assert torch.equal(seen[-1], own + extra)
    assert torch.equal(got, teacher(*args, time_extra=own + extra))
    student(*args)
    assert seen[-1] is None  # no step and guidance: the teacher's own velocity


def test_students_sampled_concurrently_with_different_guidance_get_what_each_gets_alone() -> None:
    teacher = tiny_backbone("dit").eval()
    student = StudentBackbone(teacher).eval()
    torch.nn.init.normal_(student.step_embed.guidance_mlp[2].weight, std=0.1)  # the guidance now matters
    g = torch.Generator().manual_seed(0)
    cond, text = torch.randn(1, 30, 100, generator=g), torch.randint(0, 40, (1, 12), generator=g)
    scales = (1.0, 3.0)
    alone = [sample(student, cond, text, 60, SamplerOptions(steps=4, cfg_strength=w), seed=0) for w in scales]
    assert not torch.equal(alone[0], alone[1])

    # Each pass waits at its time embedding until the other thread's pass is there too: both calls are under way
    # before either is conditioned, which a student holding its embedding between calls cannot survive.
    barrier = threading.Barrier(2, timeout=60)

    def meet(module: torch.nn.Module, args: tuple[object, ...]) -> None:
        barrier.wait()

    together: dict[int, torch.Tensor] = {}

    def worker(i: int) -> None:
        together[i] = sample(student, cond, text, 60, SamplerOptions(steps=4, cfg_strength=scales[i]), seed=0)

    handle = teacher.time_embed.register_forward_pre_hook(meet)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    handle.remove()
    assert sorted(together) == [0, 1]
    assert torch.equal(together[0], alone[0]) and torch.equal(together[1], alone[1])
