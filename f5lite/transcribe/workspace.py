"""OUT of `f5lite-transcribe`: its layout, who owns it, and how a source's clips appear there whole or not at all.

Layout:

    OUT/clips/<folder under IN>/<source stem>/<source stem>_00001.wav   a kept clip (16-bit mono, the source's rate)
    OUT/clips/<folder under IN>/<source stem>/<source stem>_00001.txt   its transcript: edit it to correct the text
    OUT/report.json, OUT/report.html                                    every source, clip and left-out stretch
    OUT/vocab.txt                                                       with --vocab-of: the extended vocabulary
    OUT/.f5lite-transcribe/run.json                                     the settings the clips were made with
    OUT/.f5lite-transcribe/sources/<hash>.json                          one per finished source: its record
    OUT/.f5lite-transcribe/staging/<hash>/                              clips of a source in the making

`OUT/clips` is a folder `f5lite-prepare` reads as it is (audio beside same-named `.txt`); a recording at IN's top
level is its own speaker, a recording in a folder of IN takes that folder's name as speaker. The folder and stem
names are IN's, made unique where they would clash (below).

Clip folders: no source's clip folder equals, contains or lies inside another's, so that removing one (a retry
clearing what an interrupted run left) never reaches another source's clips. A finished source keeps its clip
folder for good, and a folder of IN keeps the clip folder its finished sources gave it. Every other folder of IN
gets its own path under `clips/`, unless that path is taken (a finished source's clip folder, `a.wav` finished as
`clips/a` and a folder `a/` of recordings added later; or another folder's): its name then takes the first free of
`_2`, `_3`, ... (`a/b.wav`'s clips in `clips/a_2/b`, speaker `a_2`). Every other source gets its stem in its
folder's clip folder, or, where that is taken by a folder or another source, the first free of `<stem>_<suffix>`,
`<stem>_2`, `<stem>_3`, ... (`a.wav` beside `a.flac`, or beside a folder `a/` of recordings: `clips/a_wav`). Folders
are named before recordings, each in the order of their paths under IN, so that a folder keeps its name (its
recordings' speaker) and a recording's clip folder gives way.

A source is finished when its record exists. Its clips are written into its staging folder, the folder is renamed
into `clips/` (one step), and the record is written last (atomically); so an interrupted run leaves, per source,
either nothing, a staging folder (removed by the next run) or, in the instant between rename and record, a clip
folder without a record (also removed by the next run, which redoes the source). Nothing is ever written twice
into a published folder, and finished sources are skipped.

Ownership: OUT must be new, empty, or made by f5lite-transcribe with the same settings (its `run.json`), and may
then hold nothing but what the layout above names (a kept clip's files may be edited or deleted). OUT inside IN is
refused (the clips would be read as input by the next run), so is IN inside OUT (OUT holds only what
f5lite-transcribe writes), and IN is only ever read. One run at a time writes OUT: a run holds a lock on OUT
(`f5lite.storage.lock.FolderLock`, on the folder itself) from before its first check to its end, and a second run
on the same OUT is refused at once, touching nothing; a run refused or stopped before it wrote anything removes the
OUT it created for its lock.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain, count
from pathlib import Path, PurePosixPath
from typing import Any

from f5lite.atomic import rename_durably, write_json_atomic
from f5lite.storage.lock import FolderLock
from f5lite.transcribe.source import Job, SourceRecord

CLIPS_DIR = "clips"
"""Folder of OUT that holds the clips (give it to `f5lite-prepare`)."""
STATE_DIR = ".f5lite-transcribe"
"""Folder of OUT with the run's settings, the finished sources' records and the staging folders."""
REPORT_JSON = "report.json"
REPORT_HTML = "report.html"
VOCAB_OUT = "vocab.txt"
"""The extended vocabulary written with --vocab-of."""
_TOP_LEVEL = frozenset({CLIPS_DIR, STATE_DIR, REPORT_JSON, REPORT_HTML, VOCAB_OUT})
_CLIP_FILE = re.compile(r".+_\d{5,}\.(wav|txt)")
_TOOL = "f5lite-transcribe"


@dataclass(frozen=True)
class TranscribeWorkspace:
    """An OUT checked for this run, with the sources still to do.

    Attributes:
        out: OUT, absolute.
        done: records of the sources finished by this or an earlier run, by key.
        jobs: the sources still to transcribe, in key order.
    """

    out: Path
    done: dict[str, SourceRecord]
    jobs: list[Job]

    def publish(self, job: Job, record: SourceRecord) -> None:
        """Move a finished source's clips into place and write its record (the module docstring's order).

        Args:
            job: the source.
            record: what `process_source` returned for it.
        """
        target = self.out / job.clip_dir
        if record.kept:
            target.parent.mkdir(parents=True, exist_ok=True)
            rename_durably(job.staging, target)  # on disk before the record says the source is finished
        else:
            shutil.rmtree(job.staging, ignore_errors=True)
        write_json_atomic(_record_path(self.out, job.key), record.to_json())
        self.done[record.key] = record

    def close(self) -> None:
        """Remove the staging folder at the end of a run (what failed sources left there, too)."""
        shutil.rmtree(self.out / STATE_DIR / "staging", ignore_errors=True)


@contextmanager
def claim_out(in_dir: Path, out: Path) -> Iterator[None]:
    """Check where OUT is against IN and hold OUT's lock for the block (the module docstring's "Ownership").

    OUT is created for its lock when missing (with its missing parents); when the block fails while OUT is still
    empty, what was created is removed again.

    Args:
        in_dir: IN (absolute).
        out: OUT (absolute).

    Raises:
        ValueError: OUT is inside IN, IN is inside OUT, OUT is a file, or another run holds OUT (one line); nothing
            was written.
    """
    if out == in_dir or in_dir in out.parents:
        raise ValueError(f"OUT {out} is inside IN {in_dir}: its clips would be read as recordings; choose another OUT")
    if out in in_dir.parents:
        raise ValueError(
            f"IN {in_dir} is inside OUT {out}, which holds only what f5lite-transcribe writes; choose an OUT outside IN"
        )
    if out.exists() and not out.is_dir():
        raise ValueError(f"OUT {out} is a file, not a folder")
    made = next((folder for folder in reversed([out, *out.parents]) if not folder.exists()), None)
    out.mkdir(parents=True, exist_ok=True)
    busy = f"OUT {out} is in use by another f5lite-transcribe run; wait for it to end, or choose another OUT"
    # Refused here, this run touches nothing: an OUT it made a moment ago is the other run's now.
    lock = FolderLock(out, busy).acquire()
    try:
        yield
    except BaseException:
        if made is not None:
            _remove_empty(out, made)
        raise
    finally:
        lock.release()


def _remove_empty(out: Path, made: Path) -> None:
    """Remove OUT and its parents up to `made` (the first one this run created), as long as each is empty."""
    for folder in [out, *out.parents]:
        try:
            folder.rmdir()
        except OSError:  # not empty: this run wrote something, or someone else did
            return
        if folder == made:
            return


def open_workspace(in_dir: Path, out: Path, sources: list[Path], settings: dict[str, Any]) -> TranscribeWorkspace:
    """Check OUT's contents against the settings, clear what an interrupted run left half-done, and plan the jobs.

    Call it inside `claim_out`, which checks where OUT is. Nothing is written or removed before every check has
    passed.

    Args:
        in_dir: IN (absolute).
        out: OUT (absolute), an existing folder.
        sources: the recordings under IN, absolute.
        settings: `TranscribeSettings.as_dict()`, recorded in `run.json` and compared on a re-run.

    Returns:
        The workspace, `run.json` written.

    Raises:
        ValueError: OUT holds files f5lite-transcribe did not write, or was made with other settings (one line
            naming the file or the settings).
    """
    ours = _check_run_file(out, settings)
    done = _read_records(out) if ours else {}
    keys = {path: path.relative_to(in_dir).as_posix() for path in sources}
    dirs = _clip_dirs([keys[p] for p in sources], done)
    pending = [path for path in sorted(sources, key=keys.__getitem__) if keys[path] not in done]
    leftovers = {dirs[keys[p]] for p in pending}
    _check_contents(out, {record.clip_dir for record in done.values()}, leftovers)
    # Every check passed: now clear half-done work and record the settings. A leftover folder holds no other
    # source's clip folder (see `_clip_dirs`), so removing it whole reaches no one else's clips.
    shutil.rmtree(out / STATE_DIR / "staging", ignore_errors=True)
    for clip_dir in leftovers:
        shutil.rmtree(out / clip_dir, ignore_errors=True)
    (out / STATE_DIR / "sources").mkdir(parents=True, exist_ok=True)
    if not ours:
        write_json_atomic(out / STATE_DIR / "run.json", {"tool": _TOOL, "settings": settings})
    jobs = [
        Job(path, keys[path], dirs[keys[path]], out / STATE_DIR / "staging" / _hash(keys[path])) for path in pending
    ]
    return TranscribeWorkspace(out, done, jobs)


def _check_run_file(out: Path, settings: dict[str, Any]) -> bool:
    """Whether OUT was made by an earlier run (with the same settings); False for a new or empty OUT."""
    if not any(out.iterdir()):
        return False
    run_file = out / STATE_DIR / "run.json"
    try:
        run = json.loads(run_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        first = min(str(p.relative_to(out)) for p in out.iterdir())
        raise ValueError(
            f"OUT {out} holds files that f5lite-transcribe did not write (such as {first}); choose a new or empty OUT"
        ) from None
    if not isinstance(run, dict) or run.get("tool") != _TOOL:
        raise ValueError(f"{run_file} was not written by f5lite-transcribe; choose a new or empty OUT")
    old = run.get("settings", {})
    changed = sorted(k for k in set(old) | set(settings) if old.get(k) != settings.get(k))
    if changed:
        diffs = ", ".join(f"{k}={old.get(k)!r} (now {settings.get(k)!r})" for k in changed)
        raise ValueError(
            f"OUT {out} was made with other settings: {diffs}; run with those, or choose a new OUT for these"
        )
    return True


def _read_records(out: Path) -> dict[str, SourceRecord]:
    records = {}
    for path in sorted((out / STATE_DIR / "sources").glob("*.json")):
        try:
            record = SourceRecord.from_json(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ValueError(
                f"{path}: a damaged record of a finished source ({err}); remove it to redo that source"
            ) from None
        records[record.key] = record
    return records


def _check_contents(out: Path, published: set[str], leftovers: set[str]) -> None:
    """Refuse a file in an earlier run's OUT that the layout does not name (see the module docstring)."""
    for root, dirs, files in os.walk(out):
        here = Path(root)
        rel = PurePosixPath(here.relative_to(out).as_posix())
        if rel == PurePosixPath("."):
            foreign = sorted(set(dirs + files) - _TOP_LEVEL)
            if foreign:
                raise ValueError(_foreign(out, out / foreign[0]))
            dirs[:] = [d for d in dirs if d == CLIPS_DIR]  # the state folder is checked by reading it
            continue
        for name in files:
            # A leftover folder of an unfinished source is removed whole; a published one holds only clip files.
            if not (str(rel) in leftovers or (str(rel) in published and _CLIP_FILE.fullmatch(name))):
                raise ValueError(_foreign(out, here / name))


def _foreign(out: Path, path: Path) -> str:
    return (
        f"{path} was not written by f5lite-transcribe, which never mixes its clips with other files: move it away "
        f"or choose another OUT than {out}"
    )


def _clip_dirs(keys: list[str], done: dict[str, SourceRecord]) -> dict[str, str]:
    """Each source's clip folder, none equal to, inside or around another's (the module docstring's rule).

    Args:
        keys: every source under IN, by key.
        done: the finished sources' records (of sources still under IN or not), by key.

    Returns:
        The clip folder (relative to OUT, POSIX) of every key and of every finished source.
    """
    # A folder of IN keeps the clip folder its finished sources gave it: their keys and clip folders have as many
    # parts, so each parent of a key pairs with the clip folder's parent at the same depth ("." with "clips"; the
    # clip folder's last parent, ".", is left over).
    folders = {PurePosixPath("."): PurePosixPath(CLIPS_DIR)}
    for key, record in sorted(done.items()):
        pairs = zip(PurePosixPath(key).parents, PurePosixPath(record.clip_dir).parents, strict=False)
        for folder, clip_folder in pairs:
            folders.setdefault(folder, clip_folder)
    # The clip paths in use: the finished sources' clip folders and every folder's. Whatever holds a clip folder is a
    # folder's, so a new clip folder outside this set neither equals nor holds another; and it lies inside none, as
    # its parent is a folder's.
    taken = set(folders.values()) | {PurePosixPath(record.clip_dir) for record in done.values()}
    pending = [PurePosixPath(key) for key in sorted(set(keys) - set(done))]
    for path in pending:  # folders first: a recording never takes the name of a folder of IN (its speaker)
        for folder in reversed(path.parents):
            if folder not in folders:
                renamed = (f"{folder.name}_{n}" for n in count(2))
                folders[folder] = _free(folders[folder.parent], chain([folder.name], renamed), taken)
    dirs = {key: record.clip_dir for key, record in done.items()}
    for path in pending:
        renamed = (f"{path.stem}_{n}" for n in count(2))
        names = chain([path.stem, f"{path.stem}_{path.suffix.lstrip('.')}"], renamed)
        dirs[path.as_posix()] = _free(folders[path.parent], names, taken).as_posix()
    return dirs


def _free(parent: PurePosixPath, names: Iterable[str], taken: set[PurePosixPath]) -> PurePosixPath:
    """`parent/<the first of names not taken>`, now taken."""
    path = next(parent / name for name in names if parent / name not in taken)
    taken.add(path)
    return path


def _hash(key: str) -> str:
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:16]


def _record_path(out: Path, key: str) -> Path:
    return out / STATE_DIR / "sources" / f"{_hash(key)}.json"
