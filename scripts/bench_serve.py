"""`f5lite-serve` under load: N concurrent clients for a while; latency, time to first audio, throughput, memory.

    python scripts/bench_serve.py --model runs/demo/export --voices VOICES    # batched against unbatched
    python scripts/bench_serve.py --url http://127.0.0.1:8000 --voice narrator --clients 8 --seconds 60

With `--model` (and `--voices`, a folder `f5lite-serve --voices` takes; default: three demo clips with their texts)
the script starts one server per configuration, each in its own process: `batched` (the defaults) and
`unbatched` (`--max-batch 1`), alternating in `--rounds` rounds, so both meet the same machine; extra server
options go after `--server-args`. With `--url` it measures a server that is already running (no memory figures
unless `--pid` names its process).

The server's memory is also sampled every `--rss-every` seconds during the load, with the requests done by then
(`rss_mb_by_requests`): it should level off once the allocator has seen the usual lengths. Each client loops for
`--seconds`: a streamed `POST /v1/audio/speech` (PCM) with one of a few sentences of 40 to
120 characters, in turn. Reported per configuration (rounds pooled): requests, errors (any non-200, 429 included),
requests/s, p50/p95 latency (request to last byte), p50/p95 time to first audio, the real-time factor (wall
seconds per second of audio, over all responses) and the server's resident memory (VmRSS) after warm-up and at the
end, with the sampler calls and pieces from its `/metrics`. Results, with machine, versions and date, go to
`--out-dir` (default `scripts/results/`) as `serve_cpu.json` and `.md` (`--name`).
"""

from __future__ import annotations

import argparse
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from f5lite.bench import sidebyside as sbs
from f5lite.paths import demo_dir

RESULTS = Path(__file__).resolve().parent / "results"
TEXTS = (
    "Hello there, how are you today?",
    "The kettle started to whistle just as the phone rang in the hall.",
    "Please leave your muddy boots by the back door. We will meet again at the old oak tree tomorrow.",
    "A small model, trained on a laptop, can still say a few words.",
)
CONFIGS = {"batched": [], "unbatched": ["--max-batch", "1"]}


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
    if pid is None:
        return None
    match = re.search(r"^VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.MULTILINE)
    return round(int(match.group(1)) / 1024, 1) if match else None


def metric(url: str, name: str) -> float:
    found = re.search(rf"^{name} (\S+)$", httpx.get(f"{url}/metrics").text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def one_request(url: str, voice: str, text: str, key: str | None) -> dict[str, Any]:
    body = {"model": "tts-1", "voice": voice, "input": text, "response_format": "pcm"}
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    started = time.perf_counter()
    first = None
    size = 0
    try:
        with httpx.stream("POST", f"{url}/v1/audio/speech", json=body, headers=headers, timeout=600) as response:
            for chunk in response.iter_bytes():
                if first is None:
                    first = time.perf_counter() - started
                size += len(chunk)
            status = response.status_code
    except httpx.HTTPError:
        status = -1
    return {"status": status, "latency": time.perf_counter() - started, "first": first, "audio_s": size / 48_000}


def load(url: str, voice: str, clients: int, seconds: float, key: str | None, records: list[dict[str, Any]]) -> None:
    """`clients` threads, each sending requests one after the other for `seconds`; `records` gets one per request
    as it ends (so a watcher can count them meanwhile)."""
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(index: int) -> None:
        i = index
        while time.monotonic() < stop:
            record = one_request(url, voice, TEXTS[i % len(TEXTS)], key)
            with lock:
                records.append(record)
            i += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def summary(records: list[dict[str, Any]], wall: float) -> dict[str, Any]:
    ok = [r for r in records if r["status"] == 200]
    firsts = sorted(r["first"] for r in ok if r["first"] is not None)
    latencies = sorted(r["latency"] for r in ok)
    audio = sum(r["audio_s"] for r in ok)

    def pct(values: list[float], q: float) -> float | None:
        return round(values[min(len(values) - 1, int(q * len(values)))], 3) if values else None

    return {
        "requests": len(records),
        "errors": len(records) - len(ok),
        "requests_per_s": round(len(ok) / wall, 3),
        "latency_p50_s": pct(latencies, 0.5),
        "latency_p95_s": pct(latencies, 0.95),
        "first_audio_p50_s": pct(firsts, 0.5),
        "first_audio_p95_s": pct(firsts, 0.95),
        "audio_s": round(audio, 1),
        "real_time_factor": round(wall / audio, 3) if audio else None,
    }


def start_server(model: str, voices: Path, extra: list[str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Start `f5lite-serve` on a free port, its output into `log` (a pipe nobody reads would fill and block it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, "-m", "f5lite.serve", model, "--voices", str(voices), "--port", str(port), *extra]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while True:
        if process.poll() is not None:
            raise SystemExit(f"the server failed: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return process, url
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            process.kill()
            raise SystemExit("the server was not ready in 300 s")
        time.sleep(0.2)


def measure(url: str, pid: int | None, args: argparse.Namespace) -> dict[str, Any]:
    one_request(url, args.voice, TEXTS[0], args.api_key)  # warm (allocations at this length)
    rss_before = rss_mb(pid)
    calls, pieces = metric(url, "f5lite_batch_size_count"), metric(url, "f5lite_batch_size_sum")
    samples: list[tuple[int, float | None]] = []  # (requests done, RSS) every `--rss-every` seconds
    records: list[dict[str, Any]] = []
    done = threading.Event()

    def watch() -> None:
        while not done.wait(args.rss_every):
            samples.append((len(records), rss_mb(pid)))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    started = time.perf_counter()
    load(url, args.voice, args.clients, args.seconds, args.api_key, records)
    wall = time.perf_counter() - started
    done.set()
    row = summary(records, wall)
    row["wall_s"] = round(wall, 1)
    row["sampler_calls"] = int(metric(url, "f5lite_batch_size_count") - calls)
    row["pieces"] = int(metric(url, "f5lite_batch_size_sum") - pieces)
    row["rss_mb_before"], row["rss_mb_after"] = rss_before, rss_mb(pid)
    row["rss_mb_by_requests"] = samples if pid is not None else []
    return row


def markdown(document: dict[str, Any]) -> str:
    lines = [
        "# f5lite-serve under load",
        "",
        f"{sbs.describe(document)}. {document['setup']}",
        "",
        "| configuration | round | requests | errors | req/s | latency p50 / p95 (s) | first audio p50 / p95 (s) "
        "| RTF | calls / pieces | RSS before / after (MiB) |",
        "|---|---:|---:|---:|---:|---|---|---:|---|---|",
    ]
    for row in document["rows"]:
        lines.append(
            f"| {row['config']} | {row['round']} | {row['requests']} | {row['errors']} | {row['requests_per_s']} | "
            f"{row['latency_p50_s']} / {row['latency_p95_s']} | {row['first_audio_p50_s']} / "
            f"{row['first_audio_p95_s']} | {row['real_time_factor']} | {row['sampler_calls']} / {row['pieces']} | "
            f"{row['rss_mb_before']} / {row['rss_mb_after']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--model", help="start servers with this model (batched against unbatched)")
    where.add_argument("--url", help="measure a running server")
    parser.add_argument("--voices", type=Path, help="voices folder (default with --model: three demo clips)")
    parser.add_argument("--voice", default="us_male", help="the voice the clients ask for")
    parser.add_argument("--pid", type=int, help="with --url: the server's process, for its memory")
    parser.add_argument("--api-key")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--configs", default="batched,unbatched", help="with --model: which configurations")
    parser.add_argument("--rss-every", type=float, default=10.0, help="seconds between memory samples")
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    parser.add_argument("--name", default="serve_cpu")
    parser.add_argument("--server-args", nargs=argparse.REMAINDER, default=[], help="options for f5lite-serve")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        if args.url:
            rows.append({"config": "given server", "round": 1, **measure(args.url, args.pid, args)})
        else:
            voices = args.voices
            if voices is None:
                voices = Path(scratch) / "voices"
                voices.mkdir()
                args.voice = demo_voices(voices)
            for round_ in range(1, args.rounds + 1):
                for name in args.configs.split(","):
                    options = CONFIGS[name]
                    log = Path(scratch) / f"server-{name}-{round_}.log"
                    process, url = start_server(args.model, voices, [*options, *args.server_args], log)
                    try:
                        row = {"config": name, "round": round_, **measure(url, process.pid, args)}
                    finally:
                        process.terminate()
                        process.wait(timeout=60)
                    rows.append(row)
                    print(row, flush=True)
    setup = (
        f"{args.clients} clients for {args.seconds:g} s per round, streamed PCM, sentences of 31 to 97 characters; "
        f"server {args.url or args.model} {' '.join(args.server_args)}"
    )
    document = {**sbs.run_header(["fastapi", "uvicorn"]), "setup": setup, "rows": rows}
    page = markdown(document)
    print(page)
    sbs.write_results(args.out_dir / f"{args.name}.json", document, page)


if __name__ == "__main__":
    main()
