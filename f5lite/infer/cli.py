r"""f5lite-infer: speak a text in the voice of a reference clip.

Usage:
  f5lite-infer model=PATH ref_audio=PATH ref_text=STR (text=STR | text_file=PATH) [key=value ...]

Examples:
  f5lite-infer model=exports/my_model ref_audio=ref.wav ref_text="Some call me nature." \\
      text="Hello there. How are you?" output=out.wav sample.steps=7 sample.cfg_zero_init_steps=1
  f5lite-infer model=F5TTS_v1_Base/model_1250000.safetensors recipe=dit_base vocab=F5TTS_v1_Base/vocab.txt \\
      sample.vocoder_source=vocos-mel-24khz/ ref_audio=ref.wav ref_text="..." text_file=story.txt

Keys (configs/infer.yaml, schema f5lite/infer/config.py):
  model         an f5lite export directory, or an official F5-TTS .safetensors/.pt (with recipe= and vocab=)
  recipe        architecture of a checkpoint file: dit_base, dit_small, unett_base, mmdit_base, debug_tiny
  vocab         vocab.txt of a checkpoint file
  ref_audio     reference clip; ref_text: its transcript (required)
  text          text to speak, or text_file=PATH
  output        output audio file (default output.wav)
  device        auto (default), cpu, cuda, cuda:N
  dtype         auto (default: bf16 where the CPU/GPU has native bf16, else fp32), fp32, bf16, fp16
  compile       auto (default: when the text plans enough backbone calls), true, false
  threads       CPU threads (default: the physical cores, unless OMP_NUM_THREADS is set)
  cross_fade    seconds of cross-fade between chunks (default 0.15; 0 allowed)
  duration      what sizes the speech: auto (default: the model's duration predictor if it has one, else the
                byte-ratio rule), rule, or a predictor directory (e.g. runs/duration_small/export)
  seconds       seconds of speech to generate instead of an estimate (the reference excluded)
  sample.*      the sampler's settings, listed below (e.g. sample.steps=7 sample.seed=1 sample.vocoder=griffin_lim)

Values of model, recipe, vocab, ref_audio, ref_text, text, text_file, output, duration and sample.vocoder_source are
taken verbatim (no Hydra quoting needed for commas or quotes). A bad input prints one line and exits with status 2.
The path chosen for this machine (dtype, compile, threads) is printed in one line on stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from f5lite.audio import save_audio
from f5lite.config.compose import compose_tool_config
from f5lite.config.sample_args import sample_keys_help
from f5lite.infer.config import InferConfig
from f5lite.infer.synthesizer import Synthesizer

# Free text and paths: set verbatim instead of going through Hydra's override grammar.
_LITERAL_KEYS = {
    "model",
    "recipe",
    "vocab",
    "ref_audio",
    "ref_text",
    "text",
    "text_file",
    "output",
    "duration",
    "sample.vocoder_source",
}


def compose_infer_config(args: Sequence[str]) -> InferConfig:
    """Compose the `f5lite-infer` config from command-line `key=value` arguments.

    Args:
        args: the arguments, e.g. ``["model=exp/", "ref_audio=ref.wav", "text=Hi, you.", "sample.steps=7"]``.

    Returns:
        The validated config.

    Raises:
        ValueError: an unknown key or a bad value, in one line naming the key.
    """
    return compose_tool_config(
        args, name="infer", schema=InferConfig, literal_keys=_LITERAL_KEYS, listing="f5lite-infer --help"
    )


def run(cfg: InferConfig) -> Path:
    """Load the model, synthesize the text and write the audio file.

    Args:
        cfg: a composed config.

    Returns:
        The written file.

    Raises:
        ValueError, OSError, ImportError: bad inputs (see `Synthesizer`), an unreadable text file, or a missing
            optional dependency.
    """
    output = Path(cfg.output)
    if not output.parent.is_dir():
        # Checked before the model loads and the audio is generated, which can take minutes.
        raise ValueError(f"cannot write {output}: directory {output.parent} does not exist")
    text = cfg.text if cfg.text is not None else _read_text(Path(str(cfg.text_file)))
    sample = cfg.sample
    synthesizer = Synthesizer.from_pretrained(
        str(cfg.model),
        vocoder=sample.vocoder,
        vocoder_source=sample.vocoder_source if sample.vocoder == "vocos" else None,
        **cfg.load_options(),
    )
    sys.stderr.write(synthesizer.path.describe() + "\n")
    compiled_before = synthesizer.path.compile
    wave, sample_rate = synthesizer.synthesize(
        text,
        str(cfg.ref_audio),
        cfg.ref_text,
        sample.sampler_options(),
        seed=sample.seed,
        cross_fade=cfg.cross_fade,
        progress=True,
        seconds=cfg.seconds,
    )
    if synthesizer.path.compile and not compiled_before:  # compile=auto decided to compile for this text
        sys.stderr.write(synthesizer.path.describe() + "\n")
    save_audio(output, wave, sample_rate)
    return output


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `f5lite-infer`.

    Args:
        argv: `key=value` arguments (default: the command line).

    Returns:
        Exit status: 0, or 2 for bad input (after one line on stderr).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in args):
        sys.stdout.write(f"{__doc__}\n{sample_keys_help()}\n")
        return 0
    try:
        output = run(compose_infer_config(args))
    except (ValueError, OSError, ImportError) as err:
        message = " ".join(str(err).split()) or type(err).__name__
        sys.stderr.write(f"f5lite-infer: error: {message}\n")
        return 2
    sys.stdout.write(f"wrote {output}\n")
    return 0


def _read_text(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) else "it is not UTF-8"
        raise ValueError(f"cannot read text_file {path}: {reason}") from None
    if not text.strip():
        raise ValueError(f"text_file {path} is empty: there is nothing to say")
    return text


if __name__ == "__main__":
    sys.exit(main())
