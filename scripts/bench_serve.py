"""`f5lite-serve` under load: N concurrent clients for a while; or unheard voices uploaded, spoken and identified.

    python scripts/bench_serve.py --model runs/demo/export --voices VOICES    # batched against unbatched
    python scripts/bench_serve.py --url http://127.0.0.1:8000 --voice narrator --clients 8 --seconds 60
    python scripts/bench_serve.py --model runs/clone_cpu/export --clone runs/clone_corpus    # issue 55, item 6

With `--model` one server process per configuration, `batched` (the defaults) and `unbatched` (`--max-batch 1`),
alternating over `--rounds`; with `--url` a running server (memory only with `--pid`). Each client loops for
`--seconds` over streamed PCM requests. Reported per configuration and round (`serve_cpu`): requests, errors,
requests/s, p50/p95 latency and time to first audio, the real-time factor, the server's VmRSS after warm-up and at
the end (sampled every `--rss-every` s), and the sampler calls and pieces from its `/metrics`.

With `--clone CORPUS` each held-out voice is uploaded (`POST /v1/voices`) and speaks `--rows` test rows one request
at a time (`clone_serve_cpu`): time to first audio and per request, calibrated similarity to the uploaded clip and
top-1 among the corpus's voices (`f5lite.metrics.cloning`).
"""

from __future__ import annotations

import argparse
import re
import secrets
import shutil
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import soundfile as sf
import torch

from benchmarks import results, runner
from f5lite.audio import SAMPLE_RATE, load_audio
from f5lite.data.testset import read_testset
from f5lite.metrics.cloning import CloningScorer
from f5lite.metrics.speaker import cosine_similarity, load_speaker_encoder
from f5lite.metrics.voices import read_enrollment
from f5lite.paths import demo_dir

TEXTS = (
    "Hello there, how are you today?",
    "The kettle started to whistle just as the phone rang in the hall.",
    "Please leave your muddy boots by the back door. We will meet again at the old oak tree tomorrow.",
    "A small model, trained on a laptop, can still say a few words.",
)
CONFIGS = {"batched": [], "unbatched": ["--max-batch", "1"]}
CLONE_SCORES = ("sim_calibrated", "speaker_top1", "speaker_correct")


def demo_voices(folder: Path) -> str:
    """Three demo clips with their transcripts; returns a voice name."""
    rows = [line.split("|") for line in (demo_dir() / "metadata.csv").read_text().splitlines()[1:]]
    for speaker in ("us_male", "us_female", "gb_female"):
        audio, text, _ = next(row for row in rows if row[2] == speaker)
        shutil.copy(demo_dir() / audio, folder / f"{speaker}.ogg")
        (folder / f"{speaker}.txt").write_text(text + "\n")
    return "us_male"


def rss_mb(pid: int | None) -> float | None:
    """Resident memory of a process in MiB (Linux), or None."""
    kb = None if pid is None else runner.status_kb(pid, "VmRSS")
    return None if kb is None else round(kb / 1024, 1)


def metric(url: str, name: str) -> float:
    """A counter of the server's `/metrics` (0 when absent)."""
    found = re.search(rf"^{name} (\S+)$", httpx.get(f"{url}/metrics").text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def one_request(url: str, voice: str, text: str, key: str | None, pcm: list[bytes] | None = None) -> dict[str, Any]:
    """One streamed `POST /v1/audio/speech` (PCM, kept in `pcm`): status, latency, time to first audio, audio s."""
    body = {"model": "tts-1", "voice": voice, "input": text, "response_format": "pcm"}
    started, first, size, status = time.perf_counter(), None, 0, -1
    try:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        with httpx.stream("POST", f"{url}/v1/audio/speech", json=body, headers=headers, timeout=600) as response:
            for chunk in response.iter_bytes():
                first = time.perf_counter() - started if first is None else first
                size += len(chunk)
                if pcm is not None:
                    pcm.append(chunk)
            status = response.status_code
    except httpx.HTTPError:
        pass
    return {"status": status, "latency": time.perf_counter() - started, "first": first, "audio_s": size / 48_000}


def summary(records: list[dict[str, Any]], wall: float) -> dict[str, Any]:
    """Requests, errors, rates, p50/p95 latency and time to first audio, RTF of the successful requests."""
    ok = [r for r in records if r["status"] == 200]
    firsts, latencies = sorted(r["first"] for r in ok if r["first"] is not None), sorted(r["latency"] for r in ok)
    audio = sum(r["audio_s"] for r in ok)

    def pct(values: list[float], q: float) -> float | None:
        return round(values[min(len(values) - 1, int(q * len(values)))], 3) if values else None

    return {"requests": len(records), "errors": len(records) - len(ok), "requests_per_s": round(len(ok) / wall, 3),
            "latency_p50_s": pct(latencies, 0.5), "latency_p95_s": pct(latencies, 0.95),
            "first_audio_p50_s": pct(firsts, 0.5), "first_audio_p95_s": pct(firsts, 0.95), "audio_s": round(audio, 1),
            "real_time_factor": round(wall / audio, 3) if audio else None}  # fmt: skip


def measure(url: str, pid: int | None, args: argparse.Namespace) -> dict[str, Any]:
    """Warm the server, load it with `--clients` threads for `--seconds`, sample its memory; its row."""
    one_request(url, args.voice, TEXTS[0], args.api_key)  # warm (allocations at this length)
    rss_before = rss_mb(pid)
    calls, pieces = metric(url, "f5lite_batch_size_count"), metric(url, "f5lite_batch_size_sum")
    samples: list[tuple[int, float | None]] = []  # (requests done, RSS) every `--rss-every` seconds
    records: list[dict[str, Any]] = []
    done = threading.Event()

    def watch() -> None:
        while not done.wait(args.rss_every):
            samples.append((len(records), rss_mb(pid)))

    def client(index: int) -> None:  # one of `--clients` threads, one request after the other until `stop`
        while time.monotonic() < stop:
            records.append(one_request(url, args.voice, TEXTS[index % len(TEXTS)], args.api_key))  # an atomic append
            index += 1

    threading.Thread(target=watch, daemon=True).start()
    started, stop = time.perf_counter(), time.monotonic() + args.seconds
    with ThreadPoolExecutor(max_workers=args.clients) as pool:
        list(pool.map(client, range(args.clients)))
    wall = time.perf_counter() - started
    done.set()
    return {**summary(records, wall), "wall_s": round(wall, 1),
            "sampler_calls": int(metric(url, "f5lite_batch_size_count") - calls),
            "pieces": int(metric(url, "f5lite_batch_size_sum") - pieces), "rss_mb_before": rss_before,
            "rss_mb_after": rss_mb(pid), "rss_mb_by_requests": samples if pid is not None else []}  # fmt: skip


def markdown(document: dict[str, Any]) -> str:
    """The rows as a Markdown page."""
    rows = [[r["config"], r["round"], r["requests"], r["errors"], r["requests_per_s"],
             f"{r['latency_p50_s']} / {r['latency_p95_s']}", f"{r['first_audio_p50_s']} / {r['first_audio_p95_s']}",
             r["real_time_factor"], f"{r['sampler_calls']} / {r['pieces']}", f"{r['rss_mb_before']} / {r['rss_mb_after']}"]
            for r in document["rows"]]  # fmt: skip
    head = ["configuration", "round", "requests", "errors", "req/s", "latency p50 / p95 (s)",
            "first audio p50 / p95 (s)", "RTF", "calls / pieces", "RSS before / after (MiB)"]  # fmt: skip
    lines = ["# f5lite-serve under load", "", f"{results.describe(document)}. {document['setup']}", ""]
    return "\n".join(lines + results.table(head, rows, " rrrr  r")) + "\n"


def serve_rounds(args: argparse.Namespace, scratch: Path) -> list[dict[str, Any]]:
    """Every `--configs` server of `--model` in its own process, in turn, `--rounds` times: their rows."""
    if (voices := args.voices) is None:
        (voices := scratch / "voices").mkdir()
        args.voice = demo_voices(voices)
    rows = []
    for round_ in range(1, args.rounds + 1):
        for name in args.configs.split(","):
            log = scratch / f"server-{name}-{round_}.log"
            with runner.serving(args.model, voices, [*CONFIGS[name], *args.server_args], log) as (process, url):
                rows.append({"config": name, "round": round_, **measure(url, process.pid, args)})
            print(rows[-1], flush=True)
    return rows


def clone(args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    """`--clone`: start the server, upload and speak every held-out voice, score each output; the document."""
    rows = read_testset(args.clone / "test" / "testset.txt")
    enrollment = read_enrollment(args.clone / "test" / "voices.txt")
    held_out = [v for v, split in enrollment.splits.items() if split == "held_out"]
    scorer = CloningScorer.enroll(load_speaker_encoder("resemblyzer"), enrollment, held_out)
    key = args.api_key or secrets.token_hex(16)
    (voices := scratch / "voices").mkdir()
    extra = ["--api-key", key, "--voice-upload", *args.server_args]
    done = []
    with runner.serving(args.model, voices, extra, scratch / "server.log") as (_, url):
        for voice in held_out:
            mine = [r for r in rows if r.voice == voice][: args.rows]
            files = {"file": (mine[0].ref_audio.name, mine[0].ref_audio.read_bytes())}
            data = {"name": voice, "text": mine[0].ref_text}
            headers = {"Authorization": f"Bearer {key}"}
            answer = httpx.post(f"{url}/v1/voices", headers=headers, data=data, files=files, timeout=120)
            if answer.status_code != 200:
                raise SystemExit(f"uploading {voice} failed: {answer.status_code} {answer.text}")
            reference = scorer.encoder.embed(load_audio(mine[0].ref_audio), SAMPLE_RATE)
            for row in mine:
                took = one_request(url, voice, row.gen_text, key, pcm := [])
                if took["status"] != 200:
                    raise SystemExit(f"{row.id} in {voice}: status {took['status']}")
                audio = torch.from_numpy(np.frombuffer(b"".join(pcm), dtype="<i2").astype(np.float32) / 32768)
                if args.keep:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    sf.write(args.keep / f"{row.id}.wav", audio.numpy(), SAMPLE_RATE)
                sim = cosine_similarity(scorer.encoder.embed(audio, SAMPLE_RATE), reference)
                scored = scorer.score(audio, SAMPLE_RATE, voice, sim)
                done.append({"id": row.id, "voice": voice, "first_audio_s": round(took["first"] or took["latency"], 3),
                             "request_s": round(took["latency"], 3), "audio_s": round(took["audio_s"], 2),
                             "sim": round(sim, 4), **{k: scored[k] for k in CLONE_SCORES}})  # fmt: skip
                print(done[-1], flush=True)
    voices_done = sorted({r["voice"] for r in done})
    summary = {"all": clone_means(done), **{v: clone_means([r for r in done if r["voice"] == v]) for v in voices_done}}
    return {**results.run_header(["fastapi", "uvicorn", "resemblyzer"]), "model": str(args.model),
            "server_args": args.server_args, "calibration": vars(scorer.calibration), "rows": done,
            "summary": summary}  # fmt: skip


def clone_means(items: list[dict[str, Any]]) -> dict[str, Any]:
    """Requests, top-1, calibrated similarity, median first audio and request time, and the RTF of `items`."""
    return {"requests": len(items),
            "top1": round(statistics.mean(float(r["speaker_correct"]) for r in items), 3),
            "sim_calibrated": round(statistics.mean(r["sim_calibrated"] for r in items), 3),
            "first_audio_s_p50": round(statistics.median(r["first_audio_s"] for r in items), 3),
            "request_s_p50": round(statistics.median(r["request_s"] for r in items), 3),
            "rtf": round(sum(r["request_s"] for r in items) / sum(r["audio_s"] for r in items), 3)}  # fmt: skip


def clone_page(document: dict[str, Any]) -> str:
    """The cloning results as a page."""
    head = ["voice", "requests", "top-1", "calibrated SIM", "first audio p50 (s)", "request p50 (s)", "RTF"]
    rows = [[voice, *m.values()] for voice, m in document["summary"].items()]
    lines = [f"# f5lite-serve: held-out voices uploaded and spoken ({results.describe(document)})", "",
             f"Model {document['model']}, server options {' '.join(document['server_args'])}; one request at a time,"
             " streamed 16-bit PCM.", "", *results.table(head, rows)]  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    """Measure every configuration (or the given server, or the cloning) and write `NAME.json` and `.md`."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--model", help="start servers with this model (batched against unbatched)")
    where.add_argument("--url", help="measure a running server")
    add("--voices", type=Path, help="voices folder (default with --model: three demo clips)")
    add("--voice", default="us_male", help="the voice the clients ask for")
    add("--pid", type=int, help="with --url: the server's process, for its memory")
    add("--api-key")
    add("--clients", type=int, default=4)
    add("--seconds", type=float, default=30.0)
    add("--rounds", type=int, default=2)
    add("--configs", default="batched,unbatched", help="with --model: which configurations")
    add("--rss-every", type=float, default=10.0, help="seconds between memory samples")
    add("--clone", type=Path, help="with --model: make clone-corpus's folder; upload, speak and identify its voices")
    add("--rows", type=int, default=5, help="with --clone: test rows spoken per held-out voice (default 5)")
    add("--keep", type=Path, help="with --clone: write the outputs here as WAV files")
    add("--out-dir", type=Path, default=Path(__file__).resolve().parent / "results")
    add("--name", help="results file name (default serve_cpu; with --clone clone_serve_cpu)")
    add("--server-args", nargs=argparse.REMAINDER, help="options for f5lite-serve (with --clone default: Griffin-Lim)")
    args = parser.parse_args()
    if args.clone and not args.model:
        parser.error("--clone needs --model")
    if args.server_args is None:
        args.server_args = ["sample.vocoder=griffin_lim"] if args.clone else []
    with tempfile.TemporaryDirectory() as scratch:
        if args.clone:
            document = clone(args, Path(scratch))
        else:
            rows = [{"config": "given server", "round": 1, **measure(args.url, args.pid, args)}] if args.url else []
            rows = rows or serve_rounds(args, Path(scratch))
            setup = (f"{args.clients} clients for {args.seconds:g} s per round, streamed PCM, sentences of 31 to 97 "
                     f"characters; server {args.url or args.model} {' '.join(args.server_args)}")  # fmt: skip
            document = {**results.run_header(["fastapi", "uvicorn"]), "setup": setup, "rows": rows}
    page = (clone_page if args.clone else markdown)(document)
    print(page)
    default = "clone_serve_cpu" if args.clone else "serve_cpu"
    results.write_results(args.out_dir / f"{args.name or default}.json", document, page)


if __name__ == "__main__":
    main()
