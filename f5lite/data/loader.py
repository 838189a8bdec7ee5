"""Everything training needs from the data section of the config: dataset, text encoder, sampler and loader."""

from __future__ import annotations

import os
import signal
import threading
from dataclasses import dataclass

import torch
from torch.utils.data import DataLoader

from f5lite.config.schema import DataConfig
from f5lite.data.collate import Collate
from f5lite.data.dataset import ManifestDataset, Utterance
from f5lite.data.sampler import FrameBudgetSampler
from f5lite.text import TextEncoder, load_vocab
from f5lite.text.tokenizers import VOCAB_TOKENIZERS


@dataclass(frozen=True)
class TrainData:
    """The data side of a training run.

    Attributes:
        loader: Yields `Batch`es (typed by its dataset's items, as torch does); its batch sampler is `sampler`.
        sampler: The frame-budget sampler: call `set_epoch` every epoch, save `state_dict` in checkpoints.
        dataset: The utterances (`dataset.num_failed` counts unreadable files in the main process).
        encoder: The text encoder; `encoder.num_embeds` is the model's `text_num_embeds`.
    """

    loader: DataLoader[Utterance]
    sampler: FrameBudgetSampler
    dataset: ManifestDataset
    encoder: TextEncoder

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


def build_train_data(
    cfg: DataConfig, *, seed: int, rank: int = 0, num_replicas: int = 1, pin_memory: bool = False
) -> TrainData:
    """Open `cfg.dir` and make this rank's loader.

    Args:
        cfg: The `data` section of the training config.
        seed: Seed of the batch order (the same on every rank).
        rank: This process's rank.
        num_replicas: Number of ranks.
        pin_memory: Put batches in page-locked memory, so `Batch.to(device, non_blocking=True)` copies to the GPU
            asynchronously; ignored without CUDA.

    Returns:
        The loader, its sampler, the dataset and the text encoder.

    Raises:
        ValueError: `data.dir` is not set or is not a prepared directory, or the vocab the tokenizer needs is
            missing from it.
    """
    if cfg.dir is None:
        raise ValueError("data.dir is not set: give data.dir=PATH, a directory made by f5lite-prepare")
    dataset = ManifestDataset(cfg.dir, mel_type=cfg.mel_type, max_skip_ratio=cfg.max_skip_ratio)
    vocab = None
    if cfg.tokenizer in VOCAB_TOKENIZERS:
        if dataset.vocab_path is None:
            raise ValueError(f"data.dir={cfg.dir!r} has no vocab.txt, which data.tokenizer={cfg.tokenizer} needs")
        vocab = load_vocab(dataset.vocab_path)
    encoder = TextEncoder(cfg.tokenizer, vocab)
    sampler = FrameBudgetSampler(
        dataset.frames,
        cfg.frames_per_gpu,
        cfg.max_samples,
        seed=seed,
        num_replicas=num_replicas,
        rank=rank,
        pad_multiple=cfg.pad_multiple,
    )
    loader = DataLoader(
        dataset,
        batch_sampler=sampler,
        collate_fn=Collate(encoder, cfg.pad_multiple),
        num_workers=cfg.num_workers,
        persistent_workers=cfg.num_workers > 0,  # keeps each worker's failed-read counts across epochs
        pin_memory=pin_memory and torch.cuda.is_available(),
        worker_init_fn=ignore_stop_signals,
    )
    return TrainData(loader, sampler, dataset, encoder)
