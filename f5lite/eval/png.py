"""PNG encoding of grey-scale images with the standard library, so that reports need no imaging package."""

from __future__ import annotations

import struct
import zlib

import numpy as np

_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def grey_png(image: np.ndarray) -> bytes:
    """Encode an 8-bit grey-scale image as PNG.

    Args:
        image: `[height, width]` uint8, row 0 at the top.

    Returns:
        The PNG file's bytes.

    Raises:
        ValueError: `image` is not a non-empty 2-D uint8 array.
    """
    if image.ndim != 2 or image.dtype != np.uint8 or image.size == 0:
        raise ValueError(f"expected a non-empty [height, width] uint8 image, got {image.dtype} {image.shape}")
    height, width = image.shape
    # Each scanline starts with its filter type; 0 stores the bytes as they are.
    scanlines = np.concatenate([np.zeros((height, 1), np.uint8), image], axis=1)
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8 bits, grey, deflate, no filter, no interlace
    return (
        _SIGNATURE
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(scanlines.tobytes(), 9))
        + _chunk(b"IEND", b"")
    )


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
