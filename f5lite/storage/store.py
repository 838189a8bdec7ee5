"""Atomic, verifiable, optionally asynchronous training checkpoints.

Layout of `RUN_DIR/checkpoints/`:

    step-00001000/          one committed checkpoint
        model.safetensors   (and ema, optimizer, ...: one file per tensor group)
        meta.json           everything that is not a tensor
        manifest.json       written last: size and sha256 of every file; its presence marks the commit
    latest                  name of the newest committed checkpoint (replaced atomically after each commit)

A save writes into `step-N.tmp/`, each file flushed to disk and hashed while it is written (nothing is read back),
writes the manifest, renames the directory into place, fsyncs the parent, and only then points `latest` at it. A
kill at any moment leaves either the old or the new checkpoint complete; `*.tmp` leftovers are removed by `tidy`
when the next run starts. Loading walks checkpoints from the newest, verifies sizes and checksums, and skips a
damaged one with a warning.

Rotation keeps the newest `keep_last` checkpoints and, with `keep_best`, the `keep_best` best-scored ones: a
checkpoint's score is `meta["score"]` (`{"metric", "value", "lower_is_better"}`, written by the trainer when the
checkpoint's update was evaluated); `best()` finds the best one for `f5lite-export --best`.

`save` copies the tensors into host snapshot buffers and hands them to a writer thread. The buffers are allocated
by the first save (page-locked for tensors on a GPU, so the copies run asynchronously and are waited for once) and
reused by every later one while shapes and dtypes stay the same: a save allocates no new host memory, which
for a large model is gigabytes each time. Reuse is safe because a save first waits for the previous one to be
written. With `async_save` it returns then and
training continues while the files are written; otherwise it waits. One save is in flight at a time; its error
surfaces at the next `save`, `wait` or `close`. `wait(timeout)` bounds the wait (a preempted job has seconds).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from f5lite.atomic import rename_durably, write_text_atomic
from f5lite.storage.names import LATEST, MANIFEST, META, SCORE, STEP_PREFIX, TMP_SUFFIX
from f5lite.storage.safetensors_stream import write_bytes_synced, write_safetensors

log = logging.getLogger(__name__)

"""Key of a checkpoint's score in its metadata: `{"metric": str, "value": float, "lower_is_better": bool}`."""


class CheckpointSaveError(RuntimeError):
    """A checkpoint could not be written (disk full, permissions, ...)."""


@dataclass
class Checkpoint:
    """A loaded checkpoint: its update count, tensor groups and metadata."""

    step: int
    path: Path
    tensors: dict[str, dict[str, torch.Tensor]]
    meta: dict[str, Any]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _step_of(path: Path) -> int | None:
    name = path.name
    if not name.startswith(STEP_PREFIX) or name.endswith(TMP_SUFFIX):
        return None
    try:
        return int(name[len(STEP_PREFIX) :])
    except ValueError:
        return None


class CheckpointStore:
    """Writes, rotates and finds training checkpoints in one directory."""

    def __init__(
        self,
        root: str | Path,
        keep_last: int = 3,
        async_save: bool = False,
        writer: bool = True,
        *,
        keep_best: int = 0,
        best_metric: str | None = None,
    ) -> None:
        """Open a checkpoint directory (nothing is written until `tidy` or `save`).

        Args:
            root: `RUN_DIR/checkpoints`.
            keep_last: newest committed checkpoints to keep; 0 keeps all.
            async_save: return from `save` once the tensors are copied, while a thread writes them.
            writer: whether this process writes (rank 0); other ranks only read.
            keep_best: also keep this many best-scored checkpoints (by `best_metric`).
            best_metric: the metric of `keep_best` (a score of another metric does not count).
        """
        self.root = Path(root)
        self.keep_last = keep_last
        self.keep_best = keep_best
        self.best_metric = best_metric
        self.async_save = async_save
        self.writer = writer
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ckpt") if writer else None
        self._inflight: Future[None] | None = None
        self._last_step: int | None = None  # the step of the newest save handed to the writer
        self._snapshot: dict[str, dict[str, torch.Tensor]] = {}  # host buffers reused by every save

    def tidy(self) -> None:
        """Create the directory and remove what interrupted saves left (`*.tmp`). Call once the run is settled."""
        if not self.writer:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        for stale in self.root.glob(f"*{TMP_SUFFIX}"):
            log.warning("removing unfinished checkpoint %s (a save was interrupted)", stale)
            shutil.rmtree(stale, ignore_errors=True) if stale.is_dir() else stale.unlink(missing_ok=True)

    # ----------------------------------------------------------------------------------------------- saving

    def save(
        self,
        step: int,
        tensors: dict[str, dict[str, torch.Tensor]],
        meta: dict[str, Any],
        *,
        timeout: float | None = None,
    ) -> bool:
        """Save one checkpoint; a step already saved by this store is not written twice.

        Args:
            step: optimizer updates done.
            tensors: groups of tensors, e.g. `{"model": ..., "ema": ..., "optimizer": ...}`; one file per group.
            meta: JSON-serializable metadata (scheduler, sampler position, counters, config hash).
            timeout: seconds to wait at most, for the previous save and (unless asynchronous) this one.

        Returns:
            False when the timeout passed first (the newest committed checkpoint is still intact); True otherwise.

        Raises:
            CheckpointSaveError: this save, or the previous asynchronous one, failed.
        """
        if self._pool is None:
            return True
        if not self.wait(timeout):
            return False
        if step == self._last_step:
            return True  # e.g. a stop request right after the periodic save of the same update
        meta_text = json.dumps({**meta, "step": step}, indent=1, sort_keys=True)
        # The snapshot must be complete before the caller's next optimizer step changes the tensors.
        groups = self._take_snapshot(tensors)
        self._inflight = self._pool.submit(self._write_guarded, step, groups, meta_text)
        self._last_step = step
        return True if self.async_save else self.wait(timeout)

    def _take_snapshot(self, tensors: dict[str, dict[str, torch.Tensor]]) -> dict[str, dict[str, torch.Tensor]]:
        """Copy the tensors into the reused host buffers (no save may be in flight); one wait for all copies."""
        previous = self._snapshot
        snapshot: dict[str, dict[str, torch.Tensor]] = {}
        for group, sd in tensors.items():
            old, new = previous.get(group, {}), snapshot.setdefault(group, {})
            for key, value in sd.items():
                buffer = old.get(key)
                if buffer is None or buffer.shape != value.shape or buffer.dtype != value.dtype:
                    buffer = torch.empty(value.shape, dtype=value.dtype, pin_memory=value.is_cuda)
                buffer.copy_(value.detach(), non_blocking=True)
                new[key] = buffer
        for device in {v.device for sd in tensors.values() for v in sd.values() if v.is_cuda}:
            torch.cuda.current_stream(device).synchronize()
        self._snapshot = snapshot  # buffers of tensors no longer saved are freed
        return snapshot

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the in-flight save is written (at most `timeout` seconds); raise its error if it failed.

        Returns:
            False when the timeout passed with the save still running.
        """
        inflight = self._inflight
        if inflight is None:
            return True
        try:
            inflight.result(timeout=None if timeout is None else max(timeout, 0.0))
        except FutureTimeout:
            return False
        finally:
            if inflight.done():
                self._inflight = None
        return True

    def close(self) -> None:
        """Finish the in-flight save and stop the writer thread (raises a failed save's error)."""
        try:
            self.wait()
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)

    def _write_guarded(self, step: int, groups: dict[str, dict[str, torch.Tensor]], meta_text: str) -> None:
        try:
            self._write(step, groups, meta_text)
        except OSError as err:
            raise CheckpointSaveError(f"could not write checkpoint {step} in {self.root}: {err}") from err

    def _write(self, step: int, groups: dict[str, dict[str, torch.Tensor]], meta_text: str) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        final = self.root / f"{STEP_PREFIX}{step:08d}"
        tmp = final.with_name(final.name + TMP_SUFFIX)
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        manifest: dict[str, dict[str, Any]] = {}
        for group, sd in groups.items():
            name = f"{group}.safetensors"
            size, digest = write_safetensors(tmp / name, sd)
            manifest[name] = {"bytes": size, "sha256": digest}
        size, digest = write_bytes_synced(tmp / META, meta_text.encode("utf-8"))
        manifest[META] = {"bytes": size, "sha256": digest}
        write_bytes_synced(tmp / MANIFEST, json.dumps({"step": step, "files": manifest}, indent=1).encode("utf-8"))
        # Not `atomic_directory`: the staging directory is `step-N.tmp`, a name `tidy` and `_step_of` know (what a
        # kill leaves is removed at the next start, never taken for a checkpoint), and an existing copy of the step
        # goes to the trash rather than aside. Its files were synced as they were hashed (`safetensors_stream`), so
        # syncing them again in `rename_durably` costs next to nothing.
        if final.exists():  # an earlier copy of the same step (a damaged one, or from before a restart)
            trash = final.with_name(final.name + ".replaced" + TMP_SUFFIX)
            os.replace(final, trash)  # a rename to delete, not a write: `tidy` removes what a kill leaves
            shutil.rmtree(trash, ignore_errors=True)
        rename_durably(tmp, final)
        write_text_atomic(self.root / LATEST, final.name + "\n")
        self._rotate(keep=final)

    def _rotate(self, keep: Path) -> None:
        if self.keep_last == 0:
            return
        committed = self.committed()
        kept = {keep, *committed[-self.keep_last :]}
        if self.keep_best and self.best_metric is not None:
            kept.update(self.ranked(self.best_metric)[: self.keep_best])
        for old in committed:
            if old in kept:
                continue
            # Renamed first (atomic), so a kill during the removal leaves only a `*.tmp` to tidy, never a
            # half-deleted checkpoint that still looks committed.
            doomed = old.with_name(old.name + ".rotated" + TMP_SUFFIX)
            os.replace(old, doomed)
            shutil.rmtree(doomed, ignore_errors=True)

    # ---------------------------------------------------------------------------------------------- loading

    def committed(self) -> list[Path]:
        """Checkpoint directories with a manifest, oldest first (not yet verified)."""
        if not self.root.is_dir():
            return []
        found = [(s, p) for p in self.root.iterdir() if (s := _step_of(p)) is not None and (p / MANIFEST).is_file()]
        return [p for _, p in sorted(found)]

    def ranked(self, metric: str) -> list[Path]:
        """Committed checkpoints scored by `metric`, best first (ties: the older first); unverified.

        Args:
            metric: the score's metric name, e.g. `val/loss`.
        """
        scored = []
        for path in self.committed():
            score = _score(path)
            if score is not None and score.get("metric") == metric and score.get("value") is not None:
                value = float(score["value"])
                if value == value:  # NaN never ranks
                    sign = 1.0 if score.get("lower_is_better", True) else -1.0
                    scored.append((sign * value, _step_of(path) or 0, path))
        return [path for _, _, path in sorted(scored)]

    def best_step(self, metric: str) -> int:
        """The update of the best intact checkpoint by `metric` (a damaged one is skipped with a warning).

        Raises:
            ValueError: no intact checkpoint has a score of `metric`.
        """
        for path in self.ranked(metric):
            problem = self._verify(path)
            if problem is None:
                return int(_step_of(path) or 0)
            log.warning("skipping damaged checkpoint %s: %s", path, problem)
        raise ValueError(
            f"no checkpoint in {self.root} has a score of {metric} (a checkpoint is scored when its update is "
            "evaluated: set ckpt.keep_best, with eval.every dividing ckpt.every)"
        )

    def _verify(self, path: Path) -> str | None:
        """None if the checkpoint is intact, else why not."""
        try:
            manifest = json.loads((path / MANIFEST).read_text())
            files = manifest["files"]
        except (OSError, ValueError, KeyError, TypeError) as err:
            return f"unreadable manifest ({err})"
        for name, want in files.items():
            file = path / name
            if not file.is_file():
                return f"{name} is missing"
            if file.stat().st_size != want["bytes"]:
                return f"{name} has {file.stat().st_size} bytes, expected {want['bytes']}"
            if _sha256(file) != want["sha256"]:
                return f"{name} fails its checksum"
        return None

    def load_latest(self) -> Checkpoint | None:
        """The newest intact checkpoint, skipping damaged ones with a warning; None when there is none."""
        for path in reversed(self.committed()):
            problem = self._verify(path)
            if problem is None:
                try:
                    return self._load(path)
                except (OSError, ValueError) as err:
                    problem = str(err)
            log.warning("skipping damaged checkpoint %s: %s", path, problem)
        return None

    def load_step(self, step: int) -> Checkpoint:
        """The checkpoint of one update.

        Raises:
            ValueError: there is none, or it is damaged.
        """
        path = self.root / f"{STEP_PREFIX}{step:08d}"
        if not (path / MANIFEST).is_file():
            have = ", ".join(str(_step_of(p)) for p in self.committed()) or "none"
            raise ValueError(f"no checkpoint of update {step} in {self.root} (have: {have})")
        problem = self._verify(path)
        if problem is not None:
            raise ValueError(f"checkpoint {path} is damaged: {problem}")
        return self._load(path)

    def _load(self, path: Path) -> Checkpoint:
        manifest = json.loads((path / MANIFEST).read_text())
        tensors = {
            Path(name).stem: load_file(path / name) for name in manifest["files"] if name.endswith(".safetensors")
        }
        meta = json.loads((path / META).read_text())
        return Checkpoint(step=int(manifest["step"]), path=path, tensors=tensors, meta=meta)


def _score(path: Path) -> dict[str, Any] | None:
    """A committed checkpoint's score from its metadata (None when it has none or the file is unreadable)."""
    try:
        score = json.loads((path / META).read_text()).get(SCORE)
    except (OSError, ValueError, AttributeError):
        return None
    return score if isinstance(score, dict) else None
