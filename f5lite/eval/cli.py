r"""f5lite-eval: synthesize a test set with a model (or take audio already made) and score it.

Usage:
  f5lite-eval model=PATH testset=FILE output=DIR [metrics=[wer,sim,mos,mel]] [key=value ...]
  f5lite-eval audio_dir=DIR testset=FILE output=DIR [key=value ...]

Examples:
  f5lite-eval model=runs/my_run testset=data/my_set/val.lst output=eval/my_run sample.steps=16
  f5lite-eval model=F5TTS_v1_Base/model_1250000.safetensors recipe=dit_base vocab=F5TTS_v1_Base/vocab.txt \\
      sample.vocoder_source=vocos-mel-24khz/ testset=seedtts_testset/en/meta.lst output=eval/v1_base \\
      asr=whisper:whisper-large-v3/ speaker=wavlm:wavlm-base-plus-sv/
  f5lite-eval audio_dir=seedtts_testset/en/wavs testset=seedtts_testset/en/meta.lst output=eval/ground_truth

Keys (configs/eval.yaml, schema f5lite/eval/config.py):
  model         an f5lite export or run directory, or an official F5-TTS .safetensors/.pt (with recipe= and vocab=)
  audio_dir     instead of model: score <id>.wav (or .flac, .ogg, .mp3) found there
  testset       id|ref_audio|ref_text|gen_text|gt_audio with that header (gt_audio optional, paths relative to the
                file; a sixth column, voice, names each row's voice), or seed-tts-eval's meta.lst
                (id|ref_text|ref_audio|gen_text[|gt_audio])
  output        directory of results.jsonl, summary.json, report.html and audio/<id>.wav; a rerun with the same
                settings resumes there, any other non-empty directory is refused
  metrics       any of wer (cer for lang=zh), sim, mos, mel (default: all; mel needs gt_audio)
  asr           pocketsphinx (default), pocketsphinx:<vocabulary dir> (lm.arpa + words.dict built from a corpus's
                training sentences, e.g. by scripts/make_speak_corpus.py), whisper:<dir or hub id>,
                faster-whisper:<dir or size>, paraformer:<dir>
  speaker       resemblyzer (default), wavlm:<dir or hub id>
  voices        an enrollment list (voice|split|audio, split train or held_out, at least two clips per voice): the
                rows with a voice are also scored for cloning (calibrated SIM, speaker identification, EER; needs sim)
  mos           dnsmos (default)
  lang          en (default) or zh
  limit         evaluate only the first N rows
  report_items  how many items, worst first, report.html embeds audio and mels for (default 20)
  device        auto (default), cpu, cuda, cuda:N; dtype: fp32 (default), bf16, fp16
  cross_fade    seconds of cross-fade between chunks (default 0.15); compile: true compiles the model
  duration      auto (default: the model's duration predictor if it has one, else the byte-ratio rule), rule, or a
                predictor directory; rows with gt_audio report both estimates' relative error against its length
  floor_vocoder the vocoded floor: the ground truth made a log-mel and decoded by this vocoder, then scored: auto
                (default: the model's vocoder; none with audio_dir), none, griffin_lim, vocos
  sample.*      the sampler's settings, listed below (e.g. sample.steps=7 sample.vocoder=griffin_lim); sample.seed
                is the base seed (default 0): each row's seed is derived from it and the row's id

Values of model, recipe, vocab, audio_dir, testset, output, asr, speaker, voices, mos, duration and
sample.vocoder_source are taken verbatim.
Every input is checked before the first row is synthesized; a bad one prints one line and exits with status 2.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from f5lite.config.compose import compose_tool_config
from f5lite.config.sample_args import sample_keys_help
from f5lite.eval.cloning import SOURCES
from f5lite.eval.config import EvalConfig
from f5lite.eval.outdir import REPORT_FILE
from f5lite.eval.run import evaluate

# Paths and backend specs (`whisper:/models/large-v3`): set verbatim instead of going through Hydra's grammar.
_LITERAL_KEYS = {
    "model",
    "recipe",
    "vocab",
    "audio_dir",
    "testset",
    "output",
    "asr",
    "speaker",
    "voices",
    "mos",
    "duration",
    "sample.vocoder_source",
}


def compose_eval_config(args: Sequence[str]) -> EvalConfig:
    """Compose the `f5lite-eval` config from command-line `key=value` arguments.

    Args:
        args: the arguments, e.g. ``["model=exp/", "testset=test.lst", "output=eval/", "metrics=[wer,sim]"]``.

    Returns:
        The validated config.

    Raises:
        ValueError: an unknown key or a bad value, in one line naming the key.
    """
    return compose_tool_config(
        args, name="eval", schema=EvalConfig, literal_keys=_LITERAL_KEYS, listing="f5lite-eval --help"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `f5lite-eval`.

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
        outcome = evaluate(compose_eval_config(args), progress=True)
    except (ValueError, OSError, ImportError) as err:
        message = " ".join(str(err).split()) or type(err).__name__
        sys.stderr.write(f"f5lite-eval: error: {message}\n")
        return 2
    means = outcome.summary["means"]
    shown = ", ".join(f"{k}={v:.4g}" for k, v in means.items() if k != "count")
    sys.stdout.write(f"{len(outcome.rows)} items: {shown}\n")
    for key, label in (("ground_truth", "ground truth"), ("ground_truth_vocoded", "ground truth, vocoded")):
        floor = outcome.summary.get(key)
        if floor:
            figures = ", ".join(f"{k}={v:.4g}" for k, v in floor.items() if k != "count")
            sys.stdout.write(f"{label} ({int(floor['count'])} items): {figures}\n")
    _print_cloning(outcome.summary.get("cloning"))
    sys.stdout.write(f"wrote {outcome.output / REPORT_FILE}\n")
    return 0


def _print_cloning(cloning: Mapping[str, Any] | None) -> None:
    if not cloning:
        return
    for source in SOURCES:
        figures = cloning["overall"].get(source)
        if figures:
            shown = ", ".join(f"{k}={figures[k]:.4g}" for k in ("sim_calibrated", "top1", "eer") if k in figures)
            sys.stdout.write(f"cloning, {source.replace('_', ' ')} ({figures['rows']} items): {shown}\n")


if __name__ == "__main__":
    sys.exit(main())
