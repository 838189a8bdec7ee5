"""Write a `.safetensors` file and its sha256 in one pass, so a checkpoint never has to be read back to be hashed.

The format (the same `safetensors.torch.load_file` reads): an 8-byte little-endian header length, a JSON header
naming each tensor's dtype, shape and byte range (padded with spaces to a multiple of 8 bytes), then the tensors'
bytes back to back. `safetensors.torch.save_file` builds the file itself and offers no hook to hash what it writes;
hashing afterwards means reading gigabytes again at the worst moment (a preempted job has about 30 s), so the
tensors' bytes are written here, in chunks, through the hash.

The files are written in place, each flushed to disk as it is closed: they go into a checkpoint's staging folder,
which `f5lite.storage.store` commits as a whole (`f5lite.atomic.rename_durably`); they are not atomic writes of
their own.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path

import torch

_DTYPES = {
    torch.float64: "F64",
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.int16: "I16",
    torch.int8: "I8",
    torch.uint8: "U8",
    torch.bool: "BOOL",
}
_CHUNK = 64 << 20  # bytes handed to write() and the hash at a time


def write_safetensors(
    path: str | os.PathLike[str], tensors: dict[str, torch.Tensor], metadata: dict[str, str] | None = None
) -> tuple[int, str]:
    """Write CPU tensors as a safetensors file, flushed to disk, hashing every byte as it goes.

    Args:
        path: the file to create (replaced if it exists).
        tensors: name to CPU tensor (any shape, 0-d included; made contiguous here).
        metadata: string pairs for the header's `__metadata__`.

    Returns:
        `(size in bytes, sha256 hex digest)` of the written file.

    Raises:
        ValueError: a tensor on another device than the CPU, or of a dtype safetensors has no name for.
        OSError: the file cannot be written.
    """
    flat: dict[str, torch.Tensor] = {}
    header: dict[str, object] = {}
    offset = 0
    for name in sorted(tensors):
        tensor = tensors[name]
        if tensor.device.type != "cpu":
            raise ValueError(f"tensor {name!r} is on {tensor.device}; snapshot it to the CPU first")
        if tensor.dtype not in _DTYPES:
            raise ValueError(f"tensor {name!r} has dtype {tensor.dtype}, which a checkpoint cannot hold")
        data = tensor.detach().contiguous().reshape(-1).view(torch.uint8)
        header[name] = {
            "dtype": _DTYPES[tensor.dtype],
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + data.numel()],
        }
        flat[name] = data
        offset += data.numel()
    if metadata:
        header["__metadata__"] = dict(metadata)
    encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
    encoded += b" " * (-(8 + len(encoded)) % 8)
    digest = hashlib.sha256()
    size = 0
    with open(path, "wb") as file:
        for piece in (struct.pack("<Q", len(encoded)), encoded):
            file.write(piece)
            digest.update(piece)
            size += len(piece)
        for name in sorted(flat):
            view = memoryview(flat[name].numpy().data)
            for start in range(0, len(view), _CHUNK):
                chunk = view[start : start + _CHUNK]
                file.write(chunk)
                digest.update(chunk)
            size += len(view)
        file.flush()
        os.fsync(file.fileno())
    return size, digest.hexdigest()


def write_bytes_synced(path: str | os.PathLike[str], data: bytes) -> tuple[int, str]:
    """Write bytes flushed to disk; returns `(size, sha256)` computed from the bytes, not by reading the file."""
    with open(Path(path), "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    return len(data), hashlib.sha256(data).hexdigest()
