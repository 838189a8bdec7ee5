"""Read one utterance's member of a Lhotse Shar shard without streaming the whole shard.

A Shar directory holds, per shard `k`, `cuts.{k:06d}.jsonl.gz` and one tar file per field (`recording.{k:06d}.tar`,
`mel.{k:06d}.tar`) whose members are named `<cut id>.<ext>`. Training reads the cuts (metadata only, small) in the
main process, where the batch sampler needs them for exact and elastic resume, and the loader workers fetch each
cut's audio or mel by seeking into the tar file: a tar's member headers are read once per shard (a few kB per 1000
members) and kept for the shards used recently.
"""

from __future__ import annotations

import tarfile
from collections import OrderedDict
from pathlib import Path

from lhotse.cut import Cut

_SHARD_PREFIX = "cuts."
_SHARD_SUFFIX = ".jsonl.gz"


def field_path(cut: Cut, field: str) -> Path:
    """The tar file of `field` for a cut read from a Shar directory (`cuts.000012.jsonl.gz` -> `mel.000012.tar`).

    Raises:
        ValueError: the cut does not come from a Shar directory.
    """
    origin = (cut.custom or {}).get("shard_origin")
    name = Path(str(origin)).name if origin else ""
    if not (name.startswith(_SHARD_PREFIX) and name.endswith(_SHARD_SUFFIX)):
        raise ValueError(f"cut {cut.id} does not come from a Shar directory (shard_origin={origin!r})")
    index = name[len(_SHARD_PREFIX) : -len(_SHARD_SUFFIX)]
    return Path(str(origin)).with_name(f"{field}.{index}.tar")


class SharMembers:
    """Reads tar members by name, keeping the member index of the `cache` most recently used shards.

    Args:
        cache: how many shards' member indexes to keep (each is a few kB per 1000 members).
    """

    def __init__(self, cache: int = 64) -> None:
        self._cache = cache
        self._indexes: OrderedDict[Path, dict[str, tuple[int, int]]] = OrderedDict()

    def read(self, tar_path: Path, member: str) -> bytes:
        """The bytes of `member` in `tar_path`.

        Raises:
            ValueError: the tar file cannot be read, or has no such member.
        """
        index = self._index(tar_path)
        if member not in index:
            raise ValueError(f"{tar_path} has no member {member}")
        offset, size = index[member]
        try:
            with open(tar_path, "rb") as file:
                file.seek(offset)
                data = file.read(size)
        except OSError as err:
            raise ValueError(f"cannot read {member} from {tar_path}: {err}") from None
        if len(data) != size:
            raise ValueError(f"{tar_path} is truncated: {member} has {len(data)} of {size} bytes")
        return data

    def member(self, tar_path: Path, stem: str) -> str:
        """The name of the data member of `stem` in `tar_path` (`<stem>.flac`, `.wav`, ...; not its `.json`).

        Raises:
            ValueError: the tar file cannot be read, or has no such member.
        """
        for name in (f"{stem}.flac", f"{stem}.wav", f"{stem}.opus", f"{stem}.mp3"):
            if name in self._index(tar_path):
                return name
        found = [n for n in self._index(tar_path) if n.rsplit(".", 1)[0] == stem and not n.endswith(".json")]
        if not found:
            raise ValueError(f"{tar_path} has no member for {stem}")
        return found[0]

    def _index(self, tar_path: Path) -> dict[str, tuple[int, int]]:
        if tar_path in self._indexes:
            self._indexes.move_to_end(tar_path)
            return self._indexes[tar_path]
        try:
            with tarfile.open(tar_path, mode="r:") as tar:
                index = {m.name: (m.offset_data, m.size) for m in tar if m.isfile()}
        except (OSError, tarfile.TarError) as err:
            raise ValueError(f"cannot read Shar shard {tar_path}: {err}") from None
        self._indexes[tar_path] = index
        if len(self._indexes) > self._cache:
            self._indexes.popitem(last=False)
        return index
