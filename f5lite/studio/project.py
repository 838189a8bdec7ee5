"""A studio workspace: one folder per project under the studio's root, and what each project folder holds.

    ROOT/PROJECT/raw/           recordings added on the Data tab (read by f5lite-transcribe)
    ROOT/PROJECT/transcribed/   f5lite-transcribe's OUT: clips/ with their .txt transcripts, report.html
    ROOT/PROJECT/dataset/       f5lite-prepare's output: what training reads
    ROOT/PROJECT/voices/        NAME.wav + NAME.txt references (a folder `f5lite-serve --voices` takes as it is)
    ROOT/PROJECT/runs/RUN/      training run directories (RUN/studio/ holds the studio's process files)
    ROOT/PROJECT/exports/NAME/  exported models; pruned checkpoints
    ROOT/PROJECT/evals/NAME/    f5lite-eval outputs
    ROOT/PROJECT/speech/        what the Speak tab made
    ROOT/PROJECT/jobs/KIND/     the process files of the other jobs (transcribe, prepare, eval, export)
    ROOT/PROJECT/downloads/     zips made for download
    ROOT/PROJECT/dataset-source.txt  a dataset prepared elsewhere, when one is linked instead of dataset/

Every name comes through `f5lite.studio.names.typed_name`, so every path the studio builds stays under ROOT.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from f5lite.storage.names import CHECKPOINTS, EXPORT, STEP_PREFIX
from f5lite.storage.pretrained import CONFIG_FILE as EXPORT_CONFIG
from f5lite.storage.rundir import is_run_dir
from f5lite.studio.names import typed_name

DATASET_FILE = "cuts.jsonl.gz"
"""What makes a folder a prepared dataset (f5lite-prepare writes it)."""
DATASET_LINK = "dataset-source.txt"
"""A project file naming a prepared dataset outside the project, to train on it where it is (read only)."""


@dataclass(frozen=True)
class Project:
    """One project folder.

    Attributes:
        name: the project's name (a checked name).
        folder: ROOT/name.
    """

    name: str
    folder: Path

    @property
    def raw(self) -> Path:
        """Recordings to transcribe."""
        return self.folder / "raw"

    @property
    def transcribed(self) -> Path:
        """f5lite-transcribe's output folder."""
        return self.folder / "transcribed"

    @property
    def voices(self) -> Path:
        """Reference clips with transcripts."""
        return self.folder / "voices"

    @property
    def speech(self) -> Path:
        """Synthesized audio."""
        return self.folder / "speech"

    def child(self, kind: str, name: str) -> Path:
        """`PROJECT/kind/name` for a user-typed name (`runs`, `exports`, `evals`).

        Raises:
            ValueError: a name that is not valid.
        """
        return self.folder / kind / typed_name(name, kind.rstrip("s"))

    def dataset(self) -> Path | None:
        """The prepared dataset to train on: PROJECT/dataset, else the linked one; None if there is none."""
        own = self.folder / "dataset"
        if (own / DATASET_FILE).is_file():
            return own
        link = self.folder / DATASET_LINK
        if link.is_file():
            linked = Path(link.read_text(encoding="utf-8").strip())
            if (linked / DATASET_FILE).is_file():
                return linked
        return None

    def runs(self) -> list[str]:
        """The names of the project's training runs (the folders under runs/)."""
        folder = self.folder / "runs"
        return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []

    def models(self) -> dict[str, Path]:
        """Every model Speak and Evaluate can load, by label: exports, run exports, runs (their newest checkpoint)."""
        found: dict[str, Path] = {}
        exports = self.folder / "exports"
        for path in sorted(exports.iterdir()) if exports.is_dir() else []:
            if (path / EXPORT_CONFIG).is_file():
                found[f"exports/{path.name}"] = path
        for run in self.runs():
            path = self.folder / "runs" / run
            if (path / EXPORT / EXPORT_CONFIG).is_file():
                found[f"runs/{run}/export"] = path / EXPORT
            if is_run_dir(path) and any((path / CHECKPOINTS).glob(f"{STEP_PREFIX}*")):
                found[f"runs/{run} (newest checkpoint)"] = path
        return found

    def voice_names(self) -> list[str]:
        """Saved voices: `NAME.wav` with a `NAME.txt`."""
        if not self.voices.is_dir():
            return []
        return sorted(p.stem for p in self.voices.glob("*.wav") if p.with_suffix(".txt").is_file())


class StudioRoot:
    """The studio's root folder and its projects.

    Args:
        root: the folder (created if missing).
    """

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def projects(self) -> list[str]:
        """The projects' names."""
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and not p.name.startswith("."))

    def project(self, name: str, create: bool = False) -> Project:
        """The project of that name.

        Args:
            name: what the user typed or picked.
            create: make its folder if it does not exist.

        Raises:
            ValueError: a name that is not valid, or no such project (and `create` not set).
        """
        name = typed_name(name, "project")
        folder = self.root / name
        if create:
            folder.mkdir(exist_ok=True)
        elif not folder.is_dir():
            raise ValueError(f"there is no project {name!r}: create it first")
        return Project(name, folder)
