"""The audio formats of OpenAI's speech endpoint, encoded as the speech is made: piece by piece, one stream.

`response_format` is one of `mp3`, `opus` (in Ogg), `aac` (ADTS), `flac`, `wav`, `pcm` (raw 24 kHz 16-bit signed
little-endian mono, no header). One `StreamEncoder` per response takes the waveform in pieces and hands back the
bytes ready so far, so a streamed response starts with the first piece and every format is one continuous stream
(not a concatenation of files, which would click at each junction and which FLAC and Ogg readers reject).

A whole FLAC is written by libsndfile (soundfile), with its length in its header; the compressed formats go through PyAV (FFmpeg's encoders inside its wheel: libmp3lame, libopus, aac, flac): the
`serve` extra. WAV is written here: a whole response gets its exact header; a streamed one, whose length is not known
when the header goes out, gets the largest sizes, as streaming servers do (readers take the data up to the end).
"""

from __future__ import annotations

import io
import struct
from typing import Any

import numpy as np
import soundfile as sf
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
_STREAM_SIZE = 0xFFFFFFFF


def pcm16(wave: Tensor) -> bytes:
    """A waveform `[samples]` in [-1, 1] as 16-bit signed little-endian PCM."""
    samples = np.clip(wave.detach().float().cpu().numpy(), -1.0, 1.0)
    return (np.round(samples * 32767.0)).astype("<i2").tobytes()


def wav_header(data_bytes: int | None) -> bytes:
    """A 44-byte RIFF/WAVE header for 16-bit mono at `SAMPLE_RATE`; None: the length is unknown (streaming)."""
    data = _STREAM_SIZE if data_bytes is None else data_bytes
    riff = _STREAM_SIZE if data_bytes is None else 36 + data_bytes
    return struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF",
        riff,
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
    """One response's audio stream: `feed` pieces of waveform, then `finish`.

    Args:
        fmt: one of `FORMATS`.
        streaming: the response goes out as it is made (a WAV header without the length), rather than whole.

    Raises:
        ValueError: an unknown format.
        ImportError: a compressed format without PyAV (the `serve` extra).
    """

    def __init__(self, fmt: str, *, streaming: bool) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"response_format={fmt!r} is not valid; choose one of: {', '.join(FORMATS)}")
        self.fmt = fmt
        self._streaming = streaming
        self._pcm: list[bytes] = []  # a whole WAV waits for its length
        self._header_sent = False
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
        if self.fmt == "pcm":
            return pcm16(wave)
        if self.fmt == "wav":
            if not self._streaming:
                self._pcm.append(pcm16(wave))
                return b""
            head = b"" if self._header_sent else wav_header(None)
            self._header_sent = True
            return head + pcm16(wave)
        samples = wave.detach().float().cpu().numpy()[None]
        frame = self._av.AudioFrame.from_ndarray(np.ascontiguousarray(samples), format="flt", layout="mono")
        frame.sample_rate = SAMPLE_RATE
        for packet in self._stream.encode(frame):
            self._container.mux(packet)
        return self._sink.drain()

    def finish(self) -> bytes:
        """Flush the encoder and close the stream; returns the last bytes (a whole WAV: all of it)."""
        if self.fmt == "pcm":
            return b""
        if self.fmt == "wav":
            if self._streaming:
                return b"" if self._header_sent else wav_header(None)
            data = b"".join(self._pcm)
            return wav_header(len(data)) + data
        for packet in self._stream.encode(None):
            self._container.mux(packet)
        self._container.close()
        return self._sink.drain()


def encode(wave: Tensor, fmt: str) -> bytes:
    """A whole waveform `[samples]` (24 kHz) as one file of `fmt`."""
    if fmt == "flac":  # whole, with its length in the header (a stream's header cannot be rewritten at the end)
        out = io.BytesIO()
        sf.write(out, wave.detach().float().cpu().numpy(), SAMPLE_RATE, format="FLAC", subtype="PCM_16")
        return out.getvalue()
    encoder = StreamEncoder(fmt, streaming=False)
    return encoder.feed(wave) + encoder.finish()
