"""Audio front end: file I/O, F5-TTS-compatible log-mels, reference loudness, and vocoders.

Everything assumes F5-TTS's audio format (`constants`): 24 kHz mono, 100-band log-mels with a hop of 256 samples,
laid out `[batch, frames, N_MELS]`.
"""

from f5lite.audio.constants import F_MAX, F_MIN, HOP_LENGTH, N_FFT, N_MELS, SAMPLE_RATE, WIN_LENGTH
from f5lite.audio.io import AudioError, decode_audio, load_audio, save_audio
from f5lite.audio.loudness import TARGET_RMS, normalize_rms, restore_rms
from f5lite.audio.mel import (
    MEL_KINDS,
    MelKind,
    frame_center_offset,
    frames_for_samples,
    log_mel,
    mel_filterbank,
    min_samples,
    samples_for_frames,
)
from f5lite.audio.vocoder import (
    DEFAULT_VOCOS_REPO,
    VOCODER_NAMES,
    GriffinLimVocoder,
    Vocoder,
    VocosVocoder,
    load_vocoder,
)

__all__ = [
    "DEFAULT_VOCOS_REPO",
    "F_MAX",
    "F_MIN",
    "HOP_LENGTH",
    "MEL_KINDS",
    "N_FFT",
    "N_MELS",
    "SAMPLE_RATE",
    "TARGET_RMS",
    "VOCODER_NAMES",
    "WIN_LENGTH",
    "AudioError",
    "decode_audio",
    "GriffinLimVocoder",
    "MelKind",
    "Vocoder",
    "VocosVocoder",
    "frame_center_offset",
    "frames_for_samples",
    "load_audio",
    "load_vocoder",
    "log_mel",
    "mel_filterbank",
    "min_samples",
    "normalize_rms",
    "restore_rms",
    "samples_for_frames",
    "save_audio",
]
