"""The audio formats of OpenAI's speech endpoint, encoded as the speech is made: piece by piece, one stream.

`response_format` is one of `mp3`, `opus` (in Ogg), `aac` (ADTS), `flac`, `wav`, `pcm` (raw 24 kHz 16-bit signed
little-endian mono, no header). One `StreamEncoder` per response takes the waveform in pieces and hands back the
bytes ready so far, so a response starts with the first piece and every format is one continuous stream (not a
concatenation of files, which would click at each junction and which FLAC and Ogg readers reject).

A response's length in samples is known before its first byte (`f5lite.serve.speech.plan_request` sizes every piece
before sampling), so the headers that hold a length carry the exact one even though they go out first: WAV's
RIFF and data sizes, FLAC's total samples in STREAMINFO. Readers that trust a header (libsndfile, which takes an
unknown FLAC length for an endless one and refuses it; browsers; PyAV) read every format. The encoder holds the
stream to that length: a piece that would run past it is cut, a stream that ends short is padded with silence.

WAV is written here; the compressed formats go through PyAV (FFmpeg's encoders inside its wheel: libmp3lame,
libopus, aac, flac): the `serve` extra. FFmpeg writes FLAC's STREAMINFO before the audio and, on a stream that
cannot seek back, never fills in the length: the total is written into those header bytes before they are sent.
"""

from __future__ import annotations

import io
import struct
from typing import Any

import numpy as np
import torch
from torch import Tensor

SAMPLE_RATE = 24_000
"""The rate of every response (the model's)."""
FORMATS = ("mp3", "opus", "aac", "flac", "wav", "pcm")
"""The accepted `response_format` values."""
CONTENT_TYPES = {
    "mp3": "audio/mpeg",
    "opus": "audio/ogg",
    "aac": "audio/aac",
    "flac": "audio/flac",
    "wav": "audio/wav",
    "pcm": "audio/pcm",
}
# (container format, codec, the codec's rate) for PyAV; libopus takes 48 kHz only.
_PYAV = {
    "mp3": ("mp3", "libmp3lame", 24_000),
    "opus": ("ogg", "libopus", 48_000),
    "aac": ("adts", "aac", 24_000),
    "flac": ("flac", "flac", 24_000),
}
_FLAC_HEAD = 4 + 4 + 34
"""`fLaC`, the first metadata block's header, then STREAMINFO (always the first block)."""
_FLAC_TOTAL = 4 + 4 + 13
"""Offset of STREAMINFO's byte whose low 4 bits start the 36-bit total of samples (the next 4 bytes end it)."""
_WAV_MAX_SAMPLES = (0xFFFFFFFF - 36) // 2
"""The most 16-bit samples a RIFF header can count."""


def pcm16(wave: Tensor) -> bytes:
    """A waveform `[samples]` in [-1, 1] as 16-bit signed little-endian PCM."""
    samples = np.clip(wave.detach().float().cpu().numpy(), -1.0, 1.0)
    return (np.round(samples * 32767.0)).astype("<i2").tobytes()


def wav_header(samples: int) -> bytes:
    """A 44-byte RIFF/WAVE header for `samples` 16-bit mono samples at `SAMPLE_RATE`."""
    data = 2 * samples
    return struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF",
        36 + data,
        b"WAVE",
        b"fmt ",
        16,
        1,
        1,
        SAMPLE_RATE,
        SAMPLE_RATE * 2,
        2,
        16,
        b"data",
        data,
    )


def with_flac_total(head: bytes, samples: int) -> bytes:
    """A FLAC stream's first bytes (at least `fLaC` and STREAMINFO) with its total of samples set to `samples`.

    Raises:
        ValueError: `head` does not start a FLAC stream with STREAMINFO, or `samples` does not fit 36 bits.
    """
    if len(head) < _FLAC_HEAD or head[:4] != b"fLaC" or head[4] & 0x7F != 0:
        raise ValueError("not the start of a FLAC stream with its STREAMINFO")
    if not 0 <= samples < 1 << 36:
        raise ValueError(f"{samples} samples do not fit FLAC's 36-bit total")
    out = bytearray(head)
    out[_FLAC_TOTAL] = (out[_FLAC_TOTAL] & 0xF0) | (samples >> 32)
    out[_FLAC_TOTAL + 1 : _FLAC_TOTAL + 5] = (samples & 0xFFFFFFFF).to_bytes(4, "big")
    return bytes(out)


class _Sink(io.RawIOBase):
    """A write-only file for PyAV that keeps what was written until it is drained."""

    def __init__(self) -> None:
        super().__init__()
        self._parts: list[bytes] = []
        self._position = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self._parts.append(chunk)
        self._position += len(chunk)
        return len(chunk)

    def tell(self) -> int:
        return self._position

    def drain(self) -> bytes:
        out = b"".join(self._parts)
        self._parts.clear()
        return out


class StreamEncoder:
    """One response's audio stream of exactly `samples` samples: `feed` pieces of waveform, then `finish`.

    Args:
        fmt: one of `FORMATS`.
        samples: the stream's length (see the module docstring).

    Raises:
        ValueError: an unknown format, or a length no header of the format can hold.
        ImportError: a compressed format without PyAV (the `serve` extra).
    """

    def __init__(self, fmt: str, samples: int) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"response_format={fmt!r} is not valid; choose one of: {', '.join(FORMATS)}")
        if not 0 <= samples <= _WAV_MAX_SAMPLES:
            raise ValueError(f"{samples} samples are more than a response can hold")
        self.fmt = fmt
        self.samples = samples
        self._left = samples
        self._head = wav_header(samples) if fmt == "wav" else b""  # sent before the first samples
        self._held = b""  # FLAC's first bytes, until its STREAMINFO is whole
        self._flac_done = fmt != "flac"
        if fmt in _PYAV:
            try:
                import av
            except ImportError as err:
                raise ImportError(f"response_format={fmt} needs PyAV: pip install 'f5lite[serve]' ({err})") from None
            container, codec, rate = _PYAV[fmt]
            self._av = av
            self._sink = _Sink()
            # Ogg holds a page back for up to a second by default: pages of 0.1 s let each piece out at once.
            options = {"page_duration": "100000"} if container == "ogg" else {}
            self._container = av.open(self._sink, "w", format=container, options=options)
            stream = self._container.add_stream(codec, rate=rate, layout="mono")
            assert isinstance(stream, av.audio.stream.AudioStream)  # an audio codec gives an audio stream
            self._stream = stream

    def feed(self, wave: Tensor) -> bytes:
        """Encode the next piece `[samples]` (24 kHz, float in [-1, 1]); returns the bytes ready to send."""
        wave = wave[: self._left]
        self._left -= wave.shape[0]
        head, self._head = self._head, b""
        if self.fmt in ("pcm", "wav"):
            return head + pcm16(wave)
        if wave.shape[0]:
            samples = wave.detach().float().cpu().numpy()[None]
            frame = self._av.AudioFrame.from_ndarray(np.ascontiguousarray(samples), format="flt", layout="mono")
            frame.sample_rate = SAMPLE_RATE
            for packet in self._stream.encode(frame):
                self._container.mux(packet)
        return self._drained()

    def finish(self) -> bytes:
        """Pad a short stream with silence, flush the encoder and close the stream; returns the last bytes."""
        tail = self.feed(torch.zeros(self._left)) if self._left else b""
        if self.fmt in ("pcm", "wav"):
            return tail + self._head  # a stream of no samples is its header alone
        for packet in self._stream.encode(None):
            self._container.mux(packet)
        self._container.close()
        return tail + self._drained(final=True)

    def _drained(self, final: bool = False) -> bytes:
        """What PyAV wrote since the last call; FLAC's first bytes held until STREAMINFO can be given its total."""
        data = self._sink.drain()
        if self._flac_done:
            return data
        self._held += data
        if len(self._held) < _FLAC_HEAD and not final:
            return b""
        out, self._held, self._flac_done = with_flac_total(self._held, self.samples), b"", True
        return out
