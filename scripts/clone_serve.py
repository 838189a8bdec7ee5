"""A voice never heard, end to end through `f5lite-serve` (issue 55, item 6): upload, speak, identify.

    python scripts/clone_serve.py --model runs/clone_cpu/export --corpus runs/clone_corpus

The server runs in its own process with an API key, upload allowed and `--server-args` (default: Griffin-Lim, the
vocoder the model was scored with). Each held-out voice of the clone corpus is uploaded (`POST /v1/voices`, its first
test row's prompt and transcript), then speaks `--rows` of its test rows one at a time through the `openai` SDK
(streamed PCM): time to first audio and per request, speaker similarity to the uploaded clip (calibrated on the
held-out voices' enrollment clips) and top-1 identification among the corpus's voices (`f5lite.metrics.cloning`).
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import openai
import soundfile as sf
import torch

from benchmarks import results, runner
from f5lite.audio import SAMPLE_RATE, load_audio
from f5lite.data.testset import TestRow, read_testset
from f5lite.metrics.cloning import CloningScorer
from f5lite.metrics.speaker import cosine_similarity, load_speaker_encoder
from f5lite.metrics.voices import read_enrollment


def upload(url: str, key: str, name: str, row: TestRow) -> None:
    """`row`'s prompt and transcript as the voice `name` (`POST /v1/voices`)."""
    files = {"file": (row.ref_audio.name, row.ref_audio.read_bytes())}
    answer = httpx.post(f"{url}/v1/voices", headers={"Authorization": f"Bearer {key}"},
                        data={"name": name, "text": row.ref_text}, files=files, timeout=120)  # fmt: skip
    if answer.status_code != 200:
        raise SystemExit(f"uploading {name} failed: {answer.status_code} {answer.text}")


def speak(client: openai.OpenAI, voice: str, text: str) -> tuple[torch.Tensor, float, float]:
    """`text` in `voice`, streamed as 16-bit PCM: the waveform `[samples]`, time to first audio, whole request (s)."""
    started, first, chunks = time.perf_counter(), None, []
    with client.audio.speech.with_streaming_response.create(model="tts-1", voice=voice, input=text,
                                                            response_format="pcm") as response:  # fmt: skip
        for chunk in response.iter_bytes():
            if chunk and first is None:
                first = time.perf_counter() - started
            chunks.append(chunk)
    total = time.perf_counter() - started
    pcm = np.frombuffer(b"".join(chunks), dtype="<i2").astype(np.float32) / 32768
    return torch.from_numpy(pcm), first if first is not None else total, total


def run(args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    """Start the server, upload and speak every held-out voice; returns the document written."""
    rows = read_testset(args.corpus / "test" / "testset.txt")
    enrollment = read_enrollment(args.corpus / "test" / "voices.txt")
    held_out = [v for v, split in enrollment.splits.items() if split == "held_out"]
    scorer = CloningScorer.enroll(load_speaker_encoder("resemblyzer"), enrollment, held_out)
    key = secrets.token_hex(16)
    (voices := scratch / "voices").mkdir()
    extra = ["--api-key", key, "--voice-upload", *args.server_args]
    process, url = runner.start_server(str(args.model), voices, extra, scratch / "server.log")
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=key, timeout=600)
    done = []
    try:
        for voice in held_out:
            mine = [r for r in rows if r.voice == voice][: args.rows]
            upload(url, key, voice, mine[0])
            reference = scorer.encoder.embed(load_audio(mine[0].ref_audio), SAMPLE_RATE)
            for row in mine:
                audio, first, total = speak(client, voice, row.gen_text)
                if args.keep:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    sf.write(args.keep / f"{row.id}.wav", audio.numpy(), SAMPLE_RATE)
                sim = cosine_similarity(scorer.encoder.embed(audio, SAMPLE_RATE), reference)
                scored = scorer.score(audio, SAMPLE_RATE, voice, sim)
                done.append({"id": row.id, "voice": voice, "first_audio_s": round(first, 3), "request_s": round(total, 3),
                             "audio_s": round(audio.numel() / SAMPLE_RATE, 2), "sim": round(sim, 4),
                             **{k: scored[k] for k in ("sim_calibrated", "speaker_top1", "speaker_correct")}})  # fmt: skip
                print(done[-1], flush=True)
    finally:
        process.terminate()
        process.wait(timeout=60)
    return {**results.run_header(["openai", "fastapi", "uvicorn", "resemblyzer"]), "model": str(args.model),
            "server_args": args.server_args, "calibration": vars(scorer.calibration), "rows": done,
            "summary": summarize(done)}  # fmt: skip


def summarize(done: list[dict[str, Any]]) -> dict[str, Any]:
    """Means over every request, and per voice."""

    def means(items: list[dict[str, Any]]) -> dict[str, Any]:
        return {"requests": len(items),
                "top1": round(statistics.mean(float(r["speaker_correct"]) for r in items), 3),
                "sim_calibrated": round(statistics.mean(r["sim_calibrated"] for r in items), 3),
                "first_audio_s_p50": round(statistics.median(r["first_audio_s"] for r in items), 3),
                "request_s_p50": round(statistics.median(r["request_s"] for r in items), 3),
                "rtf": round(sum(r["request_s"] for r in items) / sum(r["audio_s"] for r in items), 3)}  # fmt: skip

    voices = sorted({r["voice"] for r in done})
    return {"all": means(done), **{v: means([r for r in done if r["voice"] == v]) for v in voices}}


def markdown(document: dict[str, Any]) -> str:
    """The results as a page."""
    head = ["voice", "requests", "top-1", "calibrated SIM", "first audio p50 (s)", "request p50 (s)", "RTF"]
    rows = [[voice, *m.values()] for voice, m in document["summary"].items()]
    lines = [f"# f5lite-serve: held-out voices uploaded and spoken ({results.describe(document)})", "",
             f"Model {document['model']}, server options {' '.join(document['server_args'])}; one request at a time,"
             " streamed 16-bit PCM through the openai SDK.", "", *results.table(head, rows)]  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    """Run and write `NAME.json` and `.md`."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    add = parser.add_argument
    add("--model", type=Path, required=True, help="the clone_cpu export (or run directory)")
    add("--corpus", type=Path, default=Path("runs/clone_corpus"), help="make clone-corpus's folder")
    add("--rows", type=int, default=5, help="test rows spoken per held-out voice (default 5)")
    add("--keep", type=Path, help="write the outputs here as WAV files")
    add("--out-dir", type=Path, default=Path(__file__).resolve().parent / "results")
    add("--name", default="clone_serve_cpu")
    add("--server-args", nargs=argparse.REMAINDER, default=["sample.vocoder=griffin_lim"],
        help="options for f5lite-serve (default: sample.vocoder=griffin_lim)")  # fmt: skip
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        document = run(args, Path(scratch))
    page = markdown(document)
    print(page)
    results.write_results(args.out_dir / f"{args.name}.json", document, page)


if __name__ == "__main__":
    main()
