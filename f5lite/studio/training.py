"""Training runs of a project: started as `python -m f5lite.train` processes, read back from their run directories.

The studio never trains in its own process. `start` makes the overrides of a plan (a recipe, the project's
dataset, the mode: from scratch, full fine-tuning or LoRA from a base model, the settings, and the "More overrides"
the page allows: paths quoted and extra keys allow-listed by `f5lite.studio.overrides`), composes them here so that
a bad value is refused in one line before anything is written, claims the project's one training (a lock on its
`runs/` folder, held by the trainer's wrapper while it runs: two starts at once cannot both start), checks that no
run of the project trains from a terminal, and only then writes the overrides and starts the trainer through
`f5lite.studio.jobs` with its job files in `RUN_DIR/studio/` (the command's output in `output.log`, its exit
status). The overrides kept there let `resume` start the same command again, which the trainer resumes from the
newest checkpoint (run directories are deterministic); they are checked again when read back (`read_overrides`), as
the file may have been edited since. `stop` sends SIGTERM: the trainer writes a checkpoint of the last finished
update and exits 143.

`view` reads only the run directory: `run.lock` (a live holder: running, also for a run started from a terminal),
`logs/train.jsonl` (the loss curve), `logs/eval.jsonl` (the validation curve), `logs/samples/` (training samples as
written), `checkpoints/`, `export/` and the job files (finished, stopped, failed with the last lines of the log).
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from f5lite.atomic import write_text_atomic
from f5lite.config import TrainConfig, compose_config
from f5lite.config.perf import PRECISIONS
from f5lite.paths import config_roots
from f5lite.storage.names import CHECKPOINTS, EVAL_LOG, EXPORT, LOCK_FILE, LOGS, SAMPLES_DIR, TRAIN_LOG
from f5lite.studio import jobs
from f5lite.studio.overrides import check_extra, check_saved, quote
from f5lite.studio.project import Project

JOB_DIR = "studio"
"""The studio's job files inside a run directory."""
OVERRIDES_FILE = "overrides.json"
MODES = ("scratch", "full", "lora")
"""Training from scratch, fine-tuning every weight, fine-tuning low-rank adapters."""
_COMPOSE = threading.Lock()
"""Hydra's compose API keeps global state: one composition at a time in this process (the page runs calls at once)."""


def recipes() -> list[str]:
    """The recipes a run can start from."""
    # The page's modes (from scratch, full, LoRA) are the flow objective's; the other objectives need inputs it does
    # not ask for (a teacher, prompts, a predictor to start from) or train no voice.
    paths = config_roots()[1].glob("*.yaml")
    return sorted(
        p.stem
        for p in paths
        if (yaml.safe_load(p.read_text(encoding="utf-8")) or {}).get("objective", "flow") == "flow"
    )


def check_recipe(name: str) -> str:
    """`name`, if it is one of `recipes()`.

    Raises:
        ValueError: naming the recipes there are.
    """
    known = recipes()
    if name not in known:
        raise ValueError(f"recipe {name!r} is not one of the studio's recipes: {', '.join(known)}")
    return name


def compose(overrides: list[str]) -> TrainConfig:
    """The trainer's config from its overrides, composed in this process as the trainer will compose it.

    Raises:
        ValueError: one line naming the key at fault.
    """
    with _COMPOSE:
        return compose_config(overrides)


@dataclass(frozen=True)
class Plan:
    """What to train.

    Attributes:
        recipe: the recipe (`debug_tiny`, `demo`, `dit_base_finetune`, ...): the architecture and its defaults.
        mode: one of `MODES`.
        base: the pretrained model to fine-tune (an export or run directory, or an F5-TTS checkpoint file); not for
            `scratch`.
        base_vocab: the `vocab.txt` of a checkpoint file (an export or run directory has its own).
        max_updates: `optim.max_updates`.
        lr: `optim.lr`; None keeps the recipe's.
        frames_per_gpu: `data.frames_per_gpu`.
        precision: `perf.precision`.
        lora_rank: the adapters' rank in `lora` mode.
        every: checkpoints, validation and training samples every this many updates.
        vocoder: the training samples' vocoder (`sample.vocoder`).
        vocoder_source: its weights (`sample.vocoder_source`); None: the default.
        extra: further `key=value` overrides, as typed.
    """

    recipe: str
    mode: str = "scratch"
    base: str | None = None
    base_vocab: str | None = None
    max_updates: int = 1000
    lr: float | None = None
    frames_per_gpu: int | None = None
    precision: str = "no"
    lora_rank: int = 16
    every: int = 100
    vocoder: str = "vocos"
    vocoder_source: str | None = None
    extra: tuple[str, ...] = field(default_factory=tuple)

    def overrides(self, data_dir: Path, run_dir: Path) -> list[str]:
        """The trainer's command-line overrides: the paths quoted (`quote`), `extra` last (checked: `check_extra`).

        Raises:
            ValueError: a plan that cannot run, or a refused override (naming what is wrong).
        """
        check_recipe(self.recipe)
        if self.mode not in MODES:
            raise ValueError(f"training mode {self.mode!r} is not valid; choose one of: {', '.join(MODES)}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision {self.precision!r} is not valid; choose one of: {', '.join(PRECISIONS)}")
        if self.max_updates < 1 or self.every < 1:
            raise ValueError("updates and the checkpoint interval must be at least 1")
        args = [
            f"+recipe={self.recipe}", f"data.dir={quote(str(data_dir), 'the dataset')}",
            f"run_dir={quote(str(run_dir), 'the run directory')}", "data.num_workers=0",
            f"optim.max_updates={self.max_updates}", f"optim.warmup_updates={max(1, self.max_updates // 10)}",
            f"perf.precision={self.precision}", f"ckpt.every={self.every}", f"eval.every={self.every}",
            f"logger.every={max(1, min(self.every, 10))}", f"logger.sample_every={self.every}",
            f"sample.vocoder={self.vocoder}",
        ]  # fmt: skip
        if self.vocoder_source:
            args.append(f"sample.vocoder_source={quote(self.vocoder_source, 'the vocoder source')}")
        if self.frames_per_gpu:
            args.append(f"data.frames_per_gpu={self.frames_per_gpu}")
        if self.lr is not None:
            args.append(f"optim.lr={self.lr}")
        if self.mode != "scratch":
            if not self.base:
                raise ValueError(f"{self.mode} fine-tuning needs a base model: pick or type one")
            args.append(f"init.weights={quote(self.base, 'the base model')}")
            if self.base_vocab:
                args.append(f"init.vocab={quote(self.base_vocab, 'the vocab.txt')}")
        if self.mode == "lora":
            args.append(f"finetune.lora.rank={self.lora_rank}")
        return [*args, *check_extra(self.extra)]


@dataclass(frozen=True)
class RunView:
    """A run as its directory shows it.

    Attributes:
        state: `running`, `done`, `stopped`, `failed`, `lost` (ended without an exit status) or `none` (nothing
            started yet).
        rc: the trainer's exit status, when known.
        updates: `(update, loss)` of each logging window (the last line of a repeated update counts).
        val: `(update, val/loss)` of each validation.
        samples: the training samples' WAV files, oldest first.
        checkpoints: the updates of the kept checkpoints.
        exported: whether `RUN_DIR/export` exists.
        log: the last lines of the trainer's output.
    """

    state: str
    rc: int | None
    updates: list[tuple[int, float]]
    val: list[tuple[int, float]]
    samples: list[Path]
    checkpoints: list[int]
    exported: bool
    log: str

    @property
    def last_update(self) -> int:
        """The newest update the run shows: logged, or checkpointed (a stop saves between two logged windows)."""
        return max([*(self.checkpoints[-1:]), *(u for u, _ in self.updates[-1:]), 0])


def run_dir(project: Project, name: str) -> Path:
    """The run directory of a run name (checked)."""
    return project.child("runs", name)


def start(project: Project, name: str, plan: Plan) -> RunView:
    """Start a new run (or continue one with a new plan) as a trainer process.

    Raises:
        ValueError: no dataset, a plan that cannot run, or another training of the project runs (or starts).
    """
    folder = run_dir(project, name)
    data = project.dataset()
    if data is None:
        raise ValueError("the project has no prepared dataset: prepare one on the Data tab first")
    overrides = plan.overrides(data, folder)
    compose(overrides)
    _start(project, folder, overrides, write=True)
    return view(folder)


def resume(project: Project, name: str) -> RunView:
    """Start a stopped or failed run again with the overrides it was started with, checked again (`read_overrides`).

    Raises:
        ValueError: no such run started from the studio, a kept override the page would not write, or another
            training of the project runs (or starts).
    """
    folder = run_dir(project, name)
    saved = folder / JOB_DIR / OVERRIDES_FILE
    if not saved.is_file():
        raise ValueError(f"run {name!r} was not started from the studio: there is nothing to resume")
    _start(project, folder, read_overrides(saved), write=False)
    return view(folder)


def read_overrides(saved: Path) -> list[str]:
    """The overrides a run was started with, checked again (`check_saved`): the file may have been edited since.

    Raises:
        ValueError: one line naming the file, and the token it refuses or why it cannot be read.
    """
    try:
        found = json.loads(saved.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ValueError(f"{saved} cannot be read as overrides ({err}): start the run again with Start") from None
    return check_saved(found, saved)


def _start(project: Project, folder: Path, overrides: list[str], write: bool) -> None:
    """Claim the project's one training, check for one from a terminal, keep the overrides (`write`), start.

    Raises:
        ValueError: another run of the project trains, or is starting.
    """
    try:
        with jobs.Claim(folder / JOB_DIR, lock=project.folder / "runs") as claim:
            busy = running_run(project)  # one started from a terminal: its run.lock, no claim
            if busy is not None:
                raise _busy(project, busy)
            if write:  # only now that the start is certain: a refused one leaves the run's files as they were
                (folder / JOB_DIR).mkdir(parents=True, exist_ok=True)
                write_text_atomic(folder / JOB_DIR / OVERRIDES_FILE, json.dumps(overrides, indent=1))
            claim.start([sys.executable, "-m", "f5lite.train", *overrides], cwd=project.folder)
    except jobs.JobBusyError:
        raise _busy(project, running_run(project)) from None


def stop(project: Project, name: str) -> bool:
    """Ask the run's trainer to stop (SIGTERM: it saves a checkpoint, then exits). Whether one was running."""
    return jobs.stop(run_dir(project, name) / JOB_DIR)


def running_run(project: Project) -> str | None:
    """The name of the project's run that is training now, if any."""
    for name in project.runs():
        if view(project.folder / "runs" / name, with_curves=False).state == "running":
            return name
    return None


def _busy(project: Project, name: str | None) -> ValueError:
    what = f"run {name!r}" if name else "another run"  # None: the other start has not written its job yet
    return ValueError(f"{what} of project {project.name!r} is training: stop it first (one at a time)")


def _lock_holder_alive(folder: Path) -> bool:
    try:
        holder = json.loads((folder / LOCK_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    same_host = holder.get("host") == socket.gethostname()
    return same_host and jobs.alive(int(holder.get("pid", -1)), holder.get("start"))


def view(folder: Path, with_curves: bool = True) -> RunView:
    """Read a run directory (see the module docstring)."""
    job = jobs.state(folder / JOB_DIR)
    state = job.state
    if _lock_holder_alive(folder):
        state = "running"
    checkpoints = sorted(
        int(p.name.split("-")[1]) for p in (folder / CHECKPOINTS).glob("step-*") if p.name.split("-")[1].isdigit()
    )
    exported = (folder / EXPORT).is_dir()
    if state == "none" and checkpoints:  # a run from a terminal: finished if exported, else resumable
        state = "done" if exported else "stopped"
    logs = folder / LOGS
    updates = _curve(logs / TRAIN_LOG, "loss") if with_curves else []
    val = _curve(logs / EVAL_LOG, "val/loss") if with_curves else []
    samples = sorted((logs / SAMPLES_DIR / "sample").glob("update-*.wav")) if with_curves else []
    return RunView(state, job.rc, updates, val, samples, checkpoints, exported, jobs.log_tail(folder / JOB_DIR))


def _curve(path: Path, key: str) -> list[tuple[int, float]]:
    """`(update, value)` pairs of a JSON-lines log, the last line of an update winning; a torn last line skipped."""
    points: dict[int, float] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue  # the line being written
        value = row.get(key)
        if isinstance(value, (int, float)):
            points[int(row["update"])] = float(value)
    return sorted(points.items())
