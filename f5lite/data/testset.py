"""Test-set files: which texts to speak in which voices, and the ground truth to compare against.

Two formats are read:

- ours, `id|ref_audio|ref_text|gen_text|gt_audio` with that header line (the `gt_audio` column may be left out of
  the header, or left empty in a row), paths relative to the file; `id|ref_audio|ref_text|gen_text|gt_audio|voice`
  adds the name of the voice the row speaks in (for the cloning metrics of `f5lite-eval voices=`; a row may leave
  it empty);
- seed-tts-eval's `meta.lst`, recognised by the absent header: `id|ref_text|ref_audio|gen_text[|gt_audio]`. Its
  4-field rows keep their ground truth at `wavs/<id>.wav` next to the list, which is used when it exists.

Every problem is a one-line `ValueError` naming the file and line, raised while reading, so an evaluation never
starts on a list it would fail on halfway.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from f5lite.atomic import write_text_atomic

TESTSET_HEADER = "id|ref_audio|ref_text|gen_text|gt_audio"
"""The header line of our format; every column but `gt_audio` is required."""
TESTSET_VOICE_HEADER = f"{TESTSET_HEADER}|voice"
"""The header line of our format with the optional sixth column, the voice's name; written when a row has one."""
_COLUMNS = TESTSET_VOICE_HEADER.split("|")
_HEADERS = {"|".join(_COLUMNS[:count]): count for count in (4, 5, 6)}  # without gt_audio, ours, with voice
_SEP = "|"


@dataclass(frozen=True)
class TestRow:
    """One item of a test set.

    Attributes:
        id: unique name; also the file name of the item's audio (`<id>.wav`), so it holds no path separator.
        ref_audio: the voice prompt (absolute path).
        ref_text: transcript of `ref_audio`.
        gen_text: the text to speak.
        gt_audio: `gen_text` spoken in the voice of `ref_audio` (absolute path), when known.
        voice: the name of the voice `ref_audio` and `gt_audio` are spoken in (non-empty, without `|`), when known:
            the cloning metrics of `f5lite-eval voices=` score the rows that have one.
    """

    __test__ = False  # the name starts with "Test"; pytest must not collect it

    id: str
    ref_audio: Path
    ref_text: str
    gen_text: str
    gt_audio: Path | None
    voice: str | None = None


def read_testset(path: str | os.PathLike[str]) -> list[TestRow]:
    """Read a test set in our format or as seed-tts-eval's `meta.lst`.

    Args:
        path: the file (UTF-8; blank lines are skipped).

    Returns:
        The rows in file order, at least one.

    Raises:
        ValueError: one line naming the file (and line): a missing or unreadable file, a row with the wrong number of
            fields, an empty id or text, an id that is not a plain file name, a duplicate id, a missing audio file,
            or no rows at all.
    """
    file = Path(path)
    if not file.is_file():
        problem = "is a directory, not a file" if file.is_dir() else "no such file"
        raise ValueError(f"test set {file}: {problem}")
    try:
        text = file.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) else "it is not UTF-8"
        raise ValueError(f"cannot read test set {file}: {reason}") from None
    lines = [(number, line) for number, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not lines:
        raise ValueError(f"test set {file} is empty")
    header = lines[0][1].strip()
    base = file.resolve().parent
    rows: list[TestRow] = []
    seen: dict[str, int] = {}
    for number, line in lines[1:] if header in _HEADERS else lines:
        if header in _HEADERS:
            row = _our_row(file, number, line, base, _HEADERS[header])
        else:
            row = _meta_lst_row(file, number, line, base)
        if row.id in seen:
            raise ValueError(f"{file}:{number}: id {row.id!r} is already used on line {seen[row.id]}")
        seen[row.id] = number
        rows.append(row)
    if not rows:
        raise ValueError(f"test set {file} has a header but no rows")
    return rows


def write_testset(path: str | os.PathLike[str], rows: Sequence[TestRow]) -> None:
    """Write rows in our format (with the header), audio paths relative to the file's directory.

    The `voice` column is written only when some row has a voice (`TESTSET_VOICE_HEADER`), so a test set without
    voices reads as before. The file is replaced atomically, so a reader never sees half of it.

    Args:
        path: the file to create or replace; its directory must exist.
        rows: the rows, written in order.

    Raises:
        ValueError: a field holds `|` or a line break, which the format cannot represent, or a voice is empty.
    """
    file = Path(path)
    base = file.resolve().parent
    with_voice = any(row.voice is not None for row in rows)
    lines = [TESTSET_VOICE_HEADER if with_voice else TESTSET_HEADER]
    for row in rows:
        fields = [row.id, _relative(row.ref_audio, base), row.ref_text, row.gen_text]
        fields.append("" if row.gt_audio is None else _relative(row.gt_audio, base))
        if with_voice:
            if row.voice is not None and not row.voice.strip():
                raise ValueError(f"test set row {row.id!r}: voice is empty (give a name, or None for no voice)")
            fields.append(row.voice or "")
        for name, value in zip(_COLUMNS[: len(fields)], fields, strict=True):
            if _SEP in value or "\n" in value or "\r" in value:
                raise ValueError(f"test set row {row.id!r}: {name} holds '|' or a line break: {value!r}")
        lines.append(_SEP.join(fields))
    write_text_atomic(file, "\n".join(lines) + "\n")


def _our_row(file: Path, number: int, line: str, base: Path, columns: int) -> TestRow:
    fields = line.rstrip("\r\n").split(_SEP)
    where = f"{file}:{number}"
    if len(fields) != columns:
        raise ValueError(
            f"{where}: expected {columns} fields separated by '|' ({'|'.join(_COLUMNS[:columns])}), "
            f"got {len(fields)} (text cannot hold '|')"
        )
    gt = fields[4].strip() if columns >= 5 else ""
    row = _row(where, base, fields[0], fields[1], fields[2], fields[3], gt or None)
    voice = fields[5].strip() if columns == 6 else ""
    return replace(row, voice=voice) if voice else row


def _meta_lst_row(file: Path, number: int, line: str, base: Path) -> TestRow:
    fields = line.rstrip("\r\n").split(_SEP)
    where = f"{file}:{number}"
    if len(fields) not in (4, 5):
        raise ValueError(
            f"{where}: no '{TESTSET_HEADER}' header, so read as seed-tts-eval meta.lst "
            f"(id|ref_text|ref_audio|gen_text[|gt_audio]), but the line has {len(fields)} fields"
        )
    ident, ref_text, ref_audio, gen_text = fields[:4]
    gt: str | None = fields[4].strip() if len(fields) == 5 else None
    if gt is None and (base / "wavs" / f"{ident.strip()}.wav").is_file():
        gt = f"wavs/{ident.strip()}.wav"
    return _row(where, base, ident, ref_audio, ref_text, gen_text, gt or None)


def _row(where: str, base: Path, ident: str, ref_audio: str, ref_text: str, gen_text: str, gt: str | None) -> TestRow:
    ident = ident.strip()
    if not ident:
        raise ValueError(f"{where}: the id is empty")
    if ident in (".", "..") or "/" in ident or "\\" in ident or "\0" in ident:
        raise ValueError(f"{where}: id {ident!r} is not a plain file name (it names the item's audio file)")
    for name, value in (("ref_text", ref_text), ("gen_text", gen_text)):
        if not value.strip():
            raise ValueError(f"{where}: {name} of {ident!r} is empty")
    return TestRow(
        id=ident,
        ref_audio=_audio_path(where, base, "ref_audio", ref_audio),
        ref_text=ref_text.strip(),
        gen_text=gen_text.strip(),
        gt_audio=None if gt is None else _audio_path(where, base, "gt_audio", gt),
    )


def _audio_path(where: str, base: Path, name: str, value: str) -> Path:
    value = value.strip()
    if not value:
        raise ValueError(f"{where}: {name} is empty")
    path = (base / value).resolve()
    if not path.is_file():
        raise ValueError(f"{where}: {name} {path} does not exist")
    return path


def _relative(path: Path, base: Path) -> str:
    return Path(os.path.relpath(Path(path).resolve(), base)).as_posix()
