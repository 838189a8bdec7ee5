"""Sequence packing (`perf.pack`): the packed DiT computes what the padded one computes with its keys masked (outputs,
loss and gradients), utterances never see each other, and everything around it refuses what it cannot pack."""

from __future__ import annotations

import pytest
import torch
from support.tiny_models import tiny_backbone, tiny_batch
from support.trainer_helpers import overrides

import f5lite
from f5lite.config import compose_config
from f5lite.models import CFM, apply_packing
from f5lite.models.packing import VARLEN_OPS, pack_mask, packed_attention, uses_varlen

# fp32 outputs of a 4-block model whose packed and padded runs add the same products in another order (attention's
# softmax over n keys against over the utterance's own keys, matmuls of other shapes): a few ulps per operation,
# growing with depth. 1e-5 relative to the output's scale is ~80 ulps of float32, an order of magnitude above what
# was measured here (2e-7 for outputs, 9e-7 for gradients), and far below a leak between utterances (which moves outputs by their own size).
RTOL, ATOL_SCALE = 1e-5, 1e-5


def lengths_mask(lengths: list[int], n: int) -> torch.Tensor:
    return torch.arange(n)[None, :] < torch.tensor(lengths)[:, None]


def test_pack_mask_places_every_real_frame() -> None:
    p = pack_mask(lengths_mask([3, 1, 4], 5))
    assert p.index.tolist() == [0, 1, 2, 5, 10, 11, 12, 13]
    assert p.document.tolist() == [0, 0, 0, 1, 2, 2, 2, 2]
    assert p.positions.tolist() == [0, 1, 2, 0, 0, 1, 2, 3]
    assert p.cu_seqlens.tolist() == [0, 3, 4, 8] and p.cu_seqlens.dtype == torch.int32
    assert (p.max_len, p.batch, p.frames) == (4, 3, 5)
    x = torch.randn(3, 5, 2)
    packed = p.pack(x)
    assert packed.shape == (1, 8, 2) and torch.equal(packed[0, 3], x[1, 0])
    back = p.unpack(packed)
    mask = lengths_mask([3, 1, 4], 5)
    assert torch.equal(back[mask], x[mask]) and not back[~mask].any()


def test_pack_mask_refuses_holes() -> None:
    mask = lengths_mask([3, 2], 4)
    mask[0, 1] = False
    with pytest.raises(ValueError, match="length masks"):
        pack_mask(mask)


def test_packed_attention_keeps_utterances_apart() -> None:
    """Each frame's output depends on its own utterance only: changing another one's frames changes nothing."""
    p = pack_mask(lengths_mask([5, 3, 6], 6))
    q, k, v = (torch.randn(1, 2, 14, 8) for _ in range(3))
    out = packed_attention(q, k, v, p)
    k2, v2 = k.clone(), v.clone()
    k2[:, :, 5:8], v2[:, :, 5:8] = torch.randn(1, 2, 3, 8), torch.randn(1, 2, 3, 8)  # utterance 1 only
    out2 = packed_attention(q, k2, v2, p)
    others = torch.cat((torch.arange(0, 5), torch.arange(8, 14)))
    assert torch.equal(out[:, :, others], out2[:, :, others])
    # Each utterance alone, through plain attention, is the reference.
    for start, end in ((0, 5), (5, 8), (8, 14)):
        alone = torch.nn.functional.scaled_dot_product_attention(*(t[:, :, start:end] for t in (q, k, v)))
        torch.testing.assert_close(out[:, :, start:end], alone)


def padded_and_packed(**model: object) -> tuple[torch.nn.Module, torch.nn.Module]:
    padded = tiny_backbone("dit", attn_mask_enabled=True, **model)
    packed = tiny_backbone("dit", attn_mask_enabled=True, **model)
    apply_packing(packed)
    return padded, packed


@pytest.mark.parametrize("model", [{}, {"long_skip_connection": True, "pe_attn_head": 1, "qk_norm": "rms_norm"}])
def test_packed_dit_equals_padded_dit_with_masked_keys(model: dict[str, object]) -> None:
    padded, packed = padded_and_packed(**model)
    assert list(packed.state_dict()) == list(padded.state_dict())
    batch = tiny_batch(b=3, n=40)
    ref = padded(**batch)
    out = packed(**batch)
    mask = batch["mask"]
    scale = ref[mask].abs().max()
    torch.testing.assert_close(out[mask], ref[mask], rtol=RTOL, atol=ATOL_SCALE * scale.item())
    assert not out[~mask].any()  # padded frames are zero (the loss never reads them)


def loss_and_grads(model: torch.nn.Module, seed: int = 3) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """One CFM training loss (its draws from `seed`) and the gradients it gives."""
    g = torch.Generator().manual_seed(seed)
    lens = torch.tensor([40, 23, 31, 12])
    x1 = torch.randn(4, 40, 100, generator=g) * lengths_mask(lens.tolist(), 40)[..., None]
    text = torch.randint(0, 40, (4, 18), generator=g)
    model.zero_grad()
    loss = CFM(model)(x1, text, lens, generator=g)
    loss.backward()
    return loss.detach(), {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}


def test_packed_step_has_the_padded_loss_and_gradients() -> None:
    padded, packed = padded_and_packed()
    loss, grads = loss_and_grads(padded)
    packed_loss, packed_grads = loss_and_grads(packed)
    torch.testing.assert_close(packed_loss, loss, rtol=RTOL, atol=0)
    assert packed_grads.keys() == grads.keys()
    for key, grad in grads.items():
        torch.testing.assert_close(
            packed_grads[key], grad, rtol=RTOL, atol=ATOL_SCALE * grad.abs().max().item(), msg=key
        )


def test_packing_with_checkpointing_and_compile() -> None:
    """Packed blocks run under activation checkpointing and per-block compile (one graph, no break) unchanged."""
    padded, packed = padded_and_packed()
    loss, grads = loss_and_grads(padded)
    f5lite.apply_ac(packed, "selective", 1)
    f5lite.apply_compile(packed, backend="aot_eager")
    for seed in (3, 3):  # the second call reuses the compiled graphs
        compiled_loss, compiled_grads = loss_and_grads(packed, seed)
        torch.testing.assert_close(compiled_loss, loss, rtol=RTOL, atol=0)
        for key, grad in grads.items():
            torch.testing.assert_close(compiled_grads[key], grad, rtol=RTOL, atol=ATOL_SCALE * grad.abs().max().item())


def test_unmasked_batches_run_unpacked() -> None:
    """Sampling without a mask (one utterance, no padding) is untouched by packing."""
    padded, packed = padded_and_packed()
    batch = tiny_batch(b=1, n=24)
    batch["mask"] = None
    assert torch.equal(packed(**batch), padded(**batch))


def test_apply_packing_refuses_what_it_cannot_pack() -> None:
    with pytest.raises(ValueError, match=r"perf.pack=true packs DiT backbones only; this one is a MMDiT"):
        apply_packing(tiny_backbone("mmdit"))
    with pytest.raises(ValueError, match=r"perf.pack=true needs model.attn_mask_enabled=true"):
        apply_packing(tiny_backbone("dit"))


def test_config_refuses_packing_before_any_work(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=r"^perf.pack=true needs model.attn_mask_enabled=true: .*$"):
        compose_config(overrides(tmp_path, "perf.pack=true"))
    with pytest.raises(ValueError, match=r"^perf.pack=true packs DiT backbones only; model.backbone='mmdit'$"):
        compose_config(overrides(tmp_path, "perf.pack=true", "model.attn_mask_enabled=true", family="mmdit"))
    cfg = compose_config(overrides(tmp_path, "perf.pack=true", "model.attn_mask_enabled=true"))
    assert cfg.perf.pack and cfg.model.attn_mask_enabled


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="varlen flash attention needs a CUDA GPU")
def test_varlen_kernel_equals_the_masked_reference_on_cuda() -> None:
    p = pack_mask(lengths_mask([300, 170, 411], 411).cuda())
    q, k, v = (torch.randn(1, 4, 881, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    assert uses_varlen(q.device, q.dtype)
    out = packed_attention(q, k, v, p)
    doc = p.document
    ref = torch.nn.functional.scaled_dot_product_attention(
        q.float(), k.float(), v.float(), attn_mask=(doc[:, None] == doc[None, :])[None, None]
    )
    # bf16 inputs and output: 8 bits of mantissa, the output rounded once more than the fp32 reference.
    torch.testing.assert_close(out.float(), ref, rtol=2**-7, atol=2**-7)


@pytest.mark.skipif(not VARLEN_OPS, reason="this torch has no varlen attention")
def test_selective_checkpointing_keeps_the_varlen_kernels_output() -> None:
    """Recomputing attention in backward is what selective checkpointing exists to avoid, varlen kernel included."""
    from f5lite.models.ac import _SAVE_OPS

    assert set(VARLEN_OPS) <= _SAVE_OPS
