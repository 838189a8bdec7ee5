"""Everything training needs from the data section of the config: sources, text encoder, sampler and loader."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from lhotse import CutSet
from torch.utils.data import DataLoader

from f5lite.config.data import DataConfig
from f5lite.data.batching import CutBatchSampler
from f5lite.data.collate import Batch
from f5lite.data.data_sources import DataSource, open_source
from f5lite.data.dataset import CutDataset
from f5lite.data.manifest import REPORT_NAME
from f5lite.text import TextEncoder, Vocab, load_vocab
from f5lite.text.ipa import IPA, ipa_language
from f5lite.text.tokenizers import tokenizer_family, uses_vocab


@dataclass(frozen=True)
class TrainData:
    """The data side of a training run.

    Attributes:
        loader: Yields `Batch`es; its sampler is `sampler`.
        sampler: The batch sampler: call `set_epoch` every epoch, save `state_dict` in checkpoints.
        dataset: Loads the batches (`dataset.num_failed` counts unreadable files in the main process).
        encoder: The text encoder; `encoder.num_embeds` is the model's `text_num_embeds`.
        sources: The opened data sources.
    """

    loader: DataLoader[Batch]
    sampler: CutBatchSampler
    dataset: CutDataset
    encoder: TextEncoder
    sources: tuple[DataSource, ...]

    def close_workers(self) -> None:
        """Stop the loader's worker processes now (the next iteration starts new ones).

        Persistent workers otherwise live until the loader is garbage-collected, which can be much later (another
        run in the same process has forked its own workers by then, and the shutdown waits on timeouts).
        """
        iterator = getattr(self.loader, "_iterator", None)  # where DataLoader keeps its persistent workers
        if iterator is not None:
            iterator._shutdown_workers()
            self.loader._iterator = None


def ignore_stop_signals(worker_id: int) -> None:
    """DataLoader worker start-up: leave SIGTERM and SIGINT from outside to the main process.

    Launchers (SLURM, torchrun) and Ctrl-C signal the whole process group. A worker killed by that makes the main
    process fail ("DataLoader worker ... killed by signal") wherever it is, before it can write its checkpoint. So
    a worker ignores SIGINT, and SIGTERM from anyone but its parent; from the parent, SIGTERM is how the loader
    stops a worker that does not exit by itself (`Process.terminate`), and it exits at once, as PyTorch's own
    worker handler does. The sender is only known to `sigwaitinfo`, so SIGTERM is blocked and a thread waits for it.
    """
    parent = os.getppid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})

    def watch() -> None:
        while True:
            if signal.sigwaitinfo({signal.SIGTERM}).si_pid == parent:
                os._exit(0)

    threading.Thread(target=watch, name="sigterm-watch", daemon=True).start()


def _unbatched(batch: Any) -> Any:
    """The dataset makes whole batches: nothing to collate."""
    return batch


class _EpochCuts:
    """The cuts of an epoch: one source, or a weighted mixture re-drawn each epoch; Shar shards in a new order."""

    def __init__(self, sources: tuple[DataSource, ...], weights: list[float], seed: int) -> None:
        self.sources = sources
        self.weights = weights
        self.seed = seed

    def __call__(self, epoch: int) -> CutSet:
        cutsets = []
        for index, source in enumerate(self.sources):
            order = None
            if source.kind == "shar":
                order = np.random.default_rng([self.seed % 2**63, epoch, index]).permutation(len(source.files))
            cutsets.append(source.cuts(None if order is None else order.tolist()))
        if len(cutsets) == 1:
            return cutsets[0]
        # stop_early: an epoch ends when a source runs out, so the weights hold in every batch of it.
        return CutSet.mux(*cutsets, weights=self.weights, seed=self.seed + epoch, stop_early=True)


def build_train_data(
    cfg: DataConfig,
    *,
    seed: int,
    rank: int = 0,
    num_replicas: int = 1,
    pin_memory: bool = False,
    audio: bool = True,
) -> TrainData:
    """Open the data sources and make this rank's loader.

    Args:
        cfg: The `data` section of the training config.
        seed: Seed of the batch order (the same on every rank).
        rank: This process's rank.
        num_replicas: Number of ranks.
        pin_memory: Put batches in page-locked memory, so `Batch.to(device, non_blocking=True)` copies to the GPU
            asynchronously; ignored without CUDA.
        audio: load the mels; False reads only text, lengths and speakers (`CutDataset`'s `audio`).

    Returns:
        The loader, its sampler, the dataset, the text encoder and the sources.

    Raises:
        ValueError: no data is given, a source is not readable as data, the vocab the tokenizer needs is missing,
            or a source was prepared with a vocab the run's vocab does not extend.
    """
    if cfg.dir is None and not cfg.sources:
        raise ValueError("data.dir is not set: give data.dir=PATH, a directory made by f5lite-prepare")
    paths = [cfg.dir] if cfg.dir is not None else [s.dir for s in cfg.sources]
    weights = [1.0] if cfg.dir is not None else [s.weight for s in cfg.sources]
    sources = tuple(open_source(p) for p in paths if p is not None)
    vocab = _run_vocab(cfg, sources)
    encoder = TextEncoder(cfg.tokenizer, vocab)
    fingerprint = hashlib.sha256(
        "\n".join(f"{s.fingerprint()} {w}" for s, w in zip(sources, weights, strict=True)).encode()
    ).hexdigest()
    sampler = CutBatchSampler(
        _EpochCuts(sources, weights, seed),
        frames_per_gpu=cfg.frames_per_gpu,
        max_samples=cfg.max_samples,
        window=cfg.window,
        fill_efficiency=cfg.fill_efficiency,
        quadratic_duration=cfg.quadratic_duration,
        pad_multiple=cfg.pad_multiple,
        seed=seed,
        num_replicas=num_replicas,
        rank=rank,
        fingerprint=fingerprint,
    )
    dataset = CutDataset(
        encoder,
        mel_type=cfg.mel_type,
        pad_multiple=cfg.pad_multiple,
        max_skip_ratio=cfg.max_skip_ratio,
        stored_ids=vocab is not None,
        audio=audio,
    )
    loader = DataLoader(
        dataset,
        sampler=sampler,
        batch_size=None,
        collate_fn=_unbatched,
        num_workers=cfg.num_workers,
        persistent_workers=cfg.num_workers > 0,  # keeps each worker's failed-read counts across epochs
        pin_memory=pin_memory and torch.cuda.is_available(),
        worker_init_fn=ignore_stop_signals,
    )
    return TrainData(loader, sampler, dataset, encoder, sources)


def _run_vocab(cfg: DataConfig, sources: tuple[DataSource, ...]) -> Vocab | None:
    """The run's vocab, after checking that every source's stored ids mean the same tokens in it."""
    if not uses_vocab(cfg.tokenizer):
        return None
    path = cfg.vocab if cfg.vocab is not None else sources[0].vocab_path
    if path is None:
        where = f"data.dir={str(sources[0].path)!r} has no vocab.txt" if cfg.vocab is None else ""
        raise ValueError(f"{where}, which data.tokenizer={cfg.tokenizer} needs: give data.vocab=PATH".lstrip(", "))
    vocab = load_vocab(path)
    for source in sources:
        if source.vocab_path is None:
            continue
        _check_prepared_tokenizer(source.vocab_path.parent / REPORT_NAME, cfg.tokenizer)
        own = load_vocab(source.vocab_path)
        if vocab.tokens[: len(own)] != own.tokens:
            raise ValueError(
                f"{source.path} was prepared with a vocab that {path} does not extend (its stored text ids would "
                f"mean other tokens): prepare it again with f5lite-prepare ... --vocab {path}"
            )
    return vocab


def _check_prepared_tokenizer(report: Path, tokenizer: str) -> None:
    """Refuse a prepared directory whose stored ids are phonemes for a run of letters, or the other way round.

    Only a change to or from ipa (or between ipa languages) is refused: char and pinyin give the same tokens to
    text without Chinese, and fine-tunes of F5-TTS's pinyin models on data prepared with char are legitimate.
    A source without a preparation report (a Shar export, a Lhotse CutSet) records nothing to compare.
    """
    try:
        prepared = json.loads(report.read_text(encoding="utf-8"))["vocab"]["tokenizer"]
    except (OSError, ValueError, KeyError, TypeError):
        return
    if not isinstance(prepared, str) or IPA not in (tokenizer_family(prepared), tokenizer_family(tokenizer)):
        return
    same_language = ipa_language(prepared) == ipa_language(tokenizer)
    if tokenizer_family(prepared) != tokenizer_family(tokenizer) or not same_language:
        raise ValueError(
            f"{report.parent} was prepared with --tokenizer {prepared}, so its stored text ids are {prepared} tokens, "
            f"but data.tokenizer={tokenizer}: prepare it again with f5lite-prepare ... --tokenizer {tokenizer}, or "
            f"set data.tokenizer={prepared}"
        )
