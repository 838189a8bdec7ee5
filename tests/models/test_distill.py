"""Few-step distillation's parts: a student that starts as its teacher, the teacher's two-step target, the sampler."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from support.infer_assets import make_model_files, make_reference
from support.tiny_models import tiny_backbone, tiny_batch

from f5lite.models.distill import STUDENT_PREFIX, StudentBackbone
from f5lite.sampling import SamplerOptions, sample
from f5lite.sampling.distill import two_step_target
from f5lite.sampling.guidance import velocity_field
from f5lite.sampling.ode import solve
from f5lite.sampling.schedules import time_grid

FAMILIES = ("dit", "mmdit", "unett")


def bound(*values: torch.Tensor, ulps: float = 64) -> float:
    """An absolute tolerance for float32 results of these magnitudes: `ulps` float32 epsilons of the largest."""
    return ulps * torch.finfo(torch.float32).eps * max(float(v.detach().abs().max()) for v in values)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_new_student_is_its_teacher_whatever_step_and_guidance(family: str) -> None:
    teacher = tiny_backbone(family).eval()
    student = StudentBackbone(copy.deepcopy(teacher)).eval()
    batch = tiny_batch()
    expected = teacher(batch["x"], batch["cond"], batch["text"], batch["time"], batch["mask"])
    for step, guidance in ((0.25, 2.0), (torch.tensor([1.0, 0.125]), torch.tensor([0.0, 3.5]))):
        got = student(
            batch["x"], batch["cond"], batch["text"], batch["time"], batch["mask"], step=step, guidance=guidance
        )
        assert torch.equal(got, expected)
    # The teacher's tensors keep their names; the student's own are apart.
    keys = set(student.state_dict())
    assert {f"backbone.{k}" for k in teacher.state_dict()} | {k for k in keys if k.startswith(STUDENT_PREFIX)} == keys
    # Once the step embedding moves, the inputs matter: the embedding really reaches the backbone.
    torch.nn.init.normal_(student.step_embed.step_mlp[2].weight, std=0.1)
    moved = student(batch["x"], batch["cond"], batch["text"], batch["time"], batch["mask"], step=0.25, guidance=2.0)
    assert not torch.allclose(moved, expected)
    after = teacher(batch["x"], batch["cond"], batch["text"], batch["time"], batch["mask"])
    assert torch.equal(after, expected)  # a plain call of the backbone is untouched by the student


def test_the_target_is_two_guided_euler_steps_of_the_sampler() -> None:
    teacher = tiny_backbone("dit").eval()
    batch = tiny_batch()
    x, cond, text, mask = batch["x"], batch["cond"], batch["text"], batch["mask"]
    t, d, w = 0.3, 0.25, 2.0
    b = x.shape[0]
    target = two_step_target(
        teacher, x, cond, text, torch.full((b,), t), torch.full((b,), d), torch.full((b,), w), mask
    )
    field = velocity_field(teacher, cond, text, mask, w)
    end = solve(field, x, torch.tensor([t, t + d / 2, t + d]), "euler")
    expected = (end - x) / d
    assert (target - expected).abs().max() <= bound(expected)
    # Per-sample settings: each row is its own two steps.
    times, steps, scales = torch.tensor([0.1, 0.6]), torch.tensor([0.5, 0.125]), torch.tensor([1.0, 3.0])
    rows = two_step_target(teacher, x, cond, text, times, steps, scales, mask)
    for i in range(b):
        one = two_step_target(teacher, x[i : i + 1], cond[i : i + 1], text[i : i + 1], times[i : i + 1], steps[i : i + 1], scales[i : i + 1], mask[i : i + 1])  # fmt: skip
        assert (rows[i : i + 1] - one).abs().max() <= bound(one)


def test_the_sampler_steps_a_student_once_per_step_with_its_size_and_no_unconditional_pass() -> None:
    teacher = tiny_backbone("dit").eval()
    student = StudentBackbone(copy.deepcopy(teacher)).eval()
    calls: list[tuple[int, float, float]] = []
    original = student.step_embed.forward

    def spy(step: torch.Tensor, guidance: torch.Tensor) -> torch.Tensor:
        calls.append((step.shape[0], float(step[0]), float(guidance[0])))
        return original(step, guidance)

    student.step_embed.forward = spy  # type: ignore[method-assign]
    cond = torch.randn(1, 30, 100)
    text = torch.randint(0, 40, (1, 12))
    options = SamplerOptions(steps=4, cfg_strength=2.0)
    out = sample(student, cond, text, 60, options, seed=0)
    grid = time_grid(4, options.schedule, options.sway)
    assert [c[0] for c in calls] == [1] * 4  # batch 1: no unconditional rows
    assert [c[1] for c in calls] == pytest.approx((grid[1:] - grid[:-1]).tolist())
    assert all(c[2] == 2.0 for c in calls)
    # A new student with guidance 0 samples exactly what its teacher samples unguided.
    plain = SamplerOptions(steps=4, cfg_strength=0.0)
    assert torch.equal(sample(student, cond, text, 60, plain, seed=0), sample(teacher, cond, text, 60, plain, seed=0))
    assert out.shape == (1, 60, 100)
    for bad in (SamplerOptions(steps=4, method="midpoint"), SamplerOptions(steps=4, cfg_zero_star=True)):
        with pytest.raises(ValueError, match="distilled model takes Euler steps"):
            sample(student, cond, text, 60, bad, seed=0)


def test_a_student_carries_what_it_was_trained_for_and_warns_outside_it(tmp_path: Path) -> None:
    import warnings

    from f5lite.storage.pretrained import load_pretrained, save_pretrained

    export, _ = make_model_files(tmp_path)
    teacher, info = load_pretrained(export)
    trained = {"steps": [2, 4], "guidance": [1.0, 3.0]}
    student = StudentBackbone(copy.deepcopy(teacher), {"steps": 4}, trained)
    out = save_pretrained(tmp_path / "student", student, info.model, info.vocab, tokenizer=info.tokenizer)
    loaded, _ = load_pretrained(out)
    assert isinstance(loaded, StudentBackbone) and loaded.trained == trained
    cond, text = torch.randn(1, 30, 100), torch.randint(1, 20, (1, 12))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # inside its training: silent
        sample(loaded, cond, text, 60, SamplerOptions(steps=2, cfg_strength=3.0), seed=0)
    with pytest.warns(UserWarning, match=r"with 8 steps \(trained: 2, 4\): outside what it learned"):
        sample(loaded, cond, text, 60, SamplerOptions(steps=8, cfg_strength=2.0), seed=0)
    with pytest.warns(UserWarning, match=r"guidance 5 \(trained: 1 to 3\)"):
        sample(loaded, cond, text, 60, SamplerOptions(steps=4, cfg_strength=5.0), seed=0)


def test_a_student_export_runs_with_its_own_settings_in_every_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import f5lite.sampling.sampler as sampler_module
    from f5lite.infer import Synthesizer
    from f5lite.infer.cli import main as infer
    from f5lite.storage.pretrained import STUDENT_FILE, PretrainedError, load_pretrained, save_pretrained

    export, _ = make_model_files(tmp_path)
    teacher, info = load_pretrained(export)
    student = StudentBackbone(copy.deepcopy(teacher), {"steps": 4, "schedule": "uniform"})
    torch.nn.init.normal_(student.step_embed.guidance_mlp[2].weight, std=0.1)
    out = save_pretrained(tmp_path / "student", student, info.model, info.vocab, tokenizer=info.tokenizer)
    loaded, _ = load_pretrained(out)
    assert isinstance(loaded, StudentBackbone) and loaded.sampler_defaults == student.sampler_defaults
    assert all(
        torch.equal(a, b) for a, b in zip(loaded.state_dict().values(), student.state_dict().values(), strict=True)
    )
    # The backbone's weights stay the teacher's file, under the teacher's names.
    assert load_pretrained(export)[0].state_dict().keys() == loaded.backbone.state_dict().keys()

    grids: list[int] = []
    check = sampler_module._check_student
    monkeypatch.setattr(sampler_module, "_check_student", lambda *a: grids.append(a[1]) or check(*a))
    synthesizer = Synthesizer.from_pretrained(out, "griffin_lim", device="cpu", compile=False)
    synthesizer.synthesize("DEAF CAB.", make_reference(tmp_path), "ABC 12. ", seed=0)
    synthesizer.synthesize("DEAF CAB.", make_reference(tmp_path), "ABC 12. ", SamplerOptions(steps=8), seed=0)
    args = [f"model={out}", f"ref_audio={make_reference(tmp_path)}", "ref_text=ABC 12.", "text=DEAF CAB."]
    assert infer([*args, f"output={tmp_path / 'out.wav'}", "sample.vocoder=griffin_lim", "device=cpu"]) == 0
    assert grids == [4, 8, 4]  # its own 4 steps unless told otherwise, in the library and in f5lite-infer
    grids.clear()
    spoken(synthesizer, make_reference(tmp_path))
    assert grids == [4]  # the studio's Speak at its tab's settings (f5lite-serve: tests/serve/test_student.py)

    (out / STUDENT_FILE).unlink()
    with pytest.raises(PretrainedError, match="student.safetensors"):
        load_pretrained(out)


def spoken(synthesizer: object, reference: Path) -> None:
    """One piece through the studio's Speak at the settings its tab shows when nothing is changed."""
    from f5lite.audio import load_audio
    from f5lite.studio.speak import Clip, speak

    shown = SamplerOptions(steps=32, cfg_strength=2.0, cfg_zero_star=False, speed=1.0)
    list(speak(synthesizer, [(Clip(load_audio(reference), "ABC 12. "), "DEAF CAB.")], shown, seed=0))
