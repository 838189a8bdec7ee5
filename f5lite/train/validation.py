"""The validation loss: the training objective on held-out utterances with fixed draws, comparable over time.

Shapes: b batch, n frames, d mel channels (N_MELS), nt text ids, B time bins.

Every validation utterance gets its own draws, derived from (`eval.seed`, its cut id) alone: the span to generate
(F5-TTS's 70-100 % of the frames), the noise, and a flow time. The times are stratified over the set (utterance
`i` of a seeded order gets a time in `[i/N, (i+1)/N)`), so each time bin holds its share of utterances however
small the set is. The audio and text conditions are always kept (the loss of the conditional model, the one that
speaks). So the same weights give the same number in every evaluation, in another run, after a resume, and under
another batching (each utterance's error is summed on its own; batches only group them).

The loss is the training loss's flattened mean (squared velocity error over every span frame and channel), overall
and per time bin: at small t the target is mostly the noise, at large t the fine detail of the mel, so the bins move
differently as training goes. Everything is summed on the device; the only host sync is the final read-out.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import torch
from lhotse.cut import Cut
from torch import Tensor, nn

from f5lite.audio import N_MELS
from f5lite.config import DataConfig
from f5lite.config.evaluation import TrainEvalConfig
from f5lite.data.collate import Utterance, collate
from f5lite.data.data_sources import open_source
from f5lite.data.dataset import CutDataset
from f5lite.data.manifest import VAL_DIR_NAME
from f5lite.models.cfm import SPAN_FRACTION, flow_errors, span_mask
from f5lite.text import TextEncoder


@dataclass(frozen=True)
class ValBatch:
    """A batch of validation utterances with their fixed draws (CPU tensors).

    Attributes:
        mel: `[b, n, d]` log-mels, zero-padded.
        lens: `[b]` int64 frames.
        text: `[b, nt]` int64 ids, padded with -1.
        x0: `[b, n, d]` noise (zero in padded frames).
        time: `[b]` flow times.
        span: `[b, n]` bool, the frames to generate.
        bins: `[b]` int64 time bin of each utterance.
    """

    mel: Tensor
    lens: Tensor
    text: Tensor
    x0: Tensor
    time: Tensor
    span: Tensor
    bins: Tensor


def utterance_seed(seed: int, cut_id: str) -> int:
    """A 63-bit seed from the evaluation seed and an utterance's id (stable across processes and versions)."""
    digest = hashlib.sha256(f"{seed}\0{cut_id}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def bin_names(time_bins: int) -> list[str]:
    """Names of the time bins' losses, e.g. `loss_t0.00-0.25` for the first of 4."""
    edges = [i / time_bins for i in range(time_bins + 1)]
    return [f"loss_t{lo:.2f}-{hi:.2f}" for lo, hi in zip(edges, edges[1:], strict=False)]


class ValidationSet:
    """Held-out utterances, batched once with their fixed draws.

    Args:
        utterances: `(cut id, utterance)` pairs, in any order.
        seed: seed of the draws.
        time_bins: number of flow-time bins B.
        frames_per_batch: padded frames per batch at most (a single longer utterance gets a batch of its own).
        max_samples: utterances per batch at most.

    Raises:
        ValueError: no utterances, or two with the same id.
    """

    def __init__(
        self,
        utterances: list[tuple[str, Utterance]],
        *,
        seed: int,
        time_bins: int,
        frames_per_batch: int,
        max_samples: int,
    ) -> None:
        if not utterances:
            raise ValueError("the validation data holds no utterance")
        ids = [cut_id for cut_id, _ in utterances]
        if len(set(ids)) != len(ids):
            raise ValueError("the validation data holds two utterances with the same id")
        self.time_bins = time_bins
        self.size = len(utterances)
        # The stratified times' order comes from the ids alone, not from the order the source lists them in.
        order = sorted(ids, key=lambda cut_id: utterance_seed(seed, cut_id))
        stratum = {cut_id: index for index, cut_id in enumerate(order)}
        drawn = [(_draw(seed, cut_id, u, stratum[cut_id], len(order)), u) for cut_id, u in utterances]
        drawn.sort(key=lambda pair: pair[1].mel.shape[0])
        self.batches = [_batch(group, time_bins) for group in _groups(drawn, frames_per_batch, max_samples)]

    @torch.no_grad()
    def evaluate(
        self,
        backbone: nn.Module,
        device: torch.device,
        autocast: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext,
    ) -> dict[str, float]:
        """The validation loss of `backbone` (which should be in eval mode), overall and per time bin.

        Args:
            backbone: the velocity network.
            device: where `backbone` is.
            autocast: the training's mixed-precision context, so the number matches what training computes.

        Returns:
            `loss` and one `loss_t<lo>-<hi>` per time bin (NaN for a bin without utterances).
        """
        sums = torch.zeros(self.time_bins, device=device)
        counts = torch.zeros(self.time_bins, device=device)
        for batch in self.batches:
            with autocast():
                errors, sizes = flow_errors(
                    backbone,
                    batch.mel.to(device, non_blocking=True),
                    batch.text.to(device, non_blocking=True),
                    batch.lens.to(device, non_blocking=True),
                    x0=batch.x0.to(device, non_blocking=True),
                    time=batch.time.to(device, non_blocking=True),
                    span_mask=batch.span.to(device, non_blocking=True),
                )
            bins = batch.bins.to(device, non_blocking=True)
            sums.index_add_(0, bins, errors.float())
            counts.index_add_(0, bins, sizes.float())
        sums_host, counts_host = torch.stack([sums, counts]).double().cpu()  # the one host sync
        results = {"loss": float(sums_host.sum() / counts_host.sum().clamp(min=1.0))}
        for name, total, count in zip(bin_names(self.time_bins), sums_host, counts_host, strict=True):
            results[name] = float(total / count) if count > 0 else float("nan")
        return results


@dataclass(frozen=True)
class _Drawn:
    cut_id: str
    x0: Tensor
    time: float
    start: float
    fraction: float


def _draw(seed: int, cut_id: str, utterance: Utterance, stratum: int, total: int) -> _Drawn:
    generator = torch.Generator().manual_seed(utterance_seed(seed, cut_id))
    low, high = SPAN_FRACTION
    fraction = low + (high - low) * float(torch.rand((), generator=generator))
    start = float(torch.rand((), generator=generator))
    time = (stratum + float(torch.rand((), generator=generator))) / total
    x0 = torch.randn(utterance.mel.shape, generator=generator)
    return _Drawn(cut_id, x0, time, start, fraction)


def _groups(
    drawn: list[tuple[_Drawn, Utterance]], frames_per_batch: int, max_samples: int
) -> Iterable[list[tuple[_Drawn, Utterance]]]:
    """Consecutive runs of the length-sorted utterances whose padded size fits the budget."""
    group: list[tuple[_Drawn, Utterance]] = []
    for item in drawn:
        longest = item[1].mel.shape[0]  # sorted by length: the newest is the longest
        if group and ((len(group) + 1) * longest > frames_per_batch or len(group) == max_samples):
            yield group
            group = []
        group.append(item)
    if group:
        yield group


def _batch(group: list[tuple[_Drawn, Utterance]], time_bins: int) -> ValBatch:
    padded = collate([u for _, u in group])
    n = padded.mel.shape[1]
    x0 = torch.zeros(len(group), n, N_MELS)
    for row, (drawn, _) in enumerate(group):
        x0[row, : drawn.x0.shape[0]] = drawn.x0
    time = torch.tensor([d.time for d, _ in group])
    span = span_mask(
        padded.mel_lengths, n, torch.tensor([d.fraction for d, _ in group]), torch.tensor([d.start for d, _ in group])
    )
    bins = (time * time_bins).long().clamp(max=time_bins - 1)
    return ValBatch(padded.mel, padded.mel_lengths, padded.text_ids, x0, time, span, bins)


def load_validation_set(
    path: str | Path,
    encoder: TextEncoder,
    *,
    mel_type: str,
    seed: int,
    max_utterances: int,
    time_bins: int,
    frames_per_batch: int,
    max_samples: int,
) -> ValidationSet:
    """Read held-out data (anything `data.dir` takes) into a `ValidationSet`.

    At most `max_utterances` are used: those whose seeded hash of the id is smallest, a subset that stays the same
    while the data grows. Their text is tokenized with the run's `encoder` (ids stored by another vocab are not
    trusted).

    Args:
        path: the validation data.
        encoder: the run's text encoder.
        mel_type: the run's mel convention.
        seed: `eval.seed`.
        max_utterances: utterances to use at most.
        time_bins: flow-time bins.
        frames_per_batch: padded frames per batch at most.
        max_samples: utterances per batch at most.

    Returns:
        The set.

    Raises:
        ValueError: the data cannot be opened, is empty, or one of its utterances cannot be read (named).
    """
    source = open_source(path)
    picked = heapq.nsmallest(max_utterances, source.cuts(), key=lambda cut: utterance_seed(seed, cut.id))
    dataset = CutDataset(encoder, mel_type=mel_type, stored_ids=False, max_skip_ratio=0.0)
    return ValidationSet(
        [(cut.id, _load(dataset, cut, path)) for cut in picked],
        seed=seed,
        time_bins=time_bins,
        frames_per_batch=frames_per_batch,
        max_samples=max_samples,
    )


def _load(dataset: CutDataset, cut: Cut, path: str | Path) -> Utterance:
    try:
        return dataset.load(cut)
    except (ValueError, OSError) as err:
        raise ValueError(f"validation utterance {cut.id} of {path} cannot be read: {err}") from None


def find_val_dir(data: DataConfig, ev: TrainEvalConfig) -> Path | None:
    """The validation data: `eval.val_dir`, else `DATA_DIR/val` when it exists, else None.

    Raises:
        ValueError: `eval.val_dir` is set but does not exist.
    """
    if ev.val_dir is not None:
        path = Path(ev.val_dir)
        if not path.exists():
            raise ValueError(f"eval.val_dir={ev.val_dir} does not exist")
        return path
    data_dir = data.dir if data.dir is not None else (data.sources[0].dir if data.sources else None)
    if data_dir is None:
        return None
    candidate = Path(data_dir) / VAL_DIR_NAME
    return candidate if candidate.is_dir() else None
