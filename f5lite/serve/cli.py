"""`f5lite-serve model=MODEL [key=value ...] [options]` and `python -m f5lite.serve`: load a model and voices, serve.

The model and the sampler are spelled as `f5lite-infer` spells them (`model=runs/x/export device=cpu dtype=fp32
sample.steps=7 sample.vocoder=griffin_lim`: `f5lite.serve.config`); the flags are the server's own settings. The
server binds to 127.0.0.1 unless `--host` says otherwise, and asks for a key when `--api-key` (or
the `F5LITE_API_KEY` environment variable) gives one; `--voice-upload` on an address other machines can reach is
refused without a key (anyone could fill the disk and the voice list). The model and every voice are loaded before
the port opens: a bad model, voice or option ends the command with one line and exit status 2. A request must name
in its `Host` `localhost`, an IP address, `--host`'s name or an `--allow-host` name; its head must come within
`--header-timeout` seconds and its body within `--body-timeout`; at most `--max-connections` connections are open at
once (`f5lite.serve.connections`).
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

from f5lite.config.compose import refuse_removed_flags
from f5lite.config.sample_args import keys_help, sample_keys_help
from f5lite.credentials import API_KEY_ENV
from f5lite.infer.config import ModelSource
from f5lite.serve.config import REMOVED_FLAGS, ServeConfig, compose_serve_config
from f5lite.serve.settings import ServeSettings

EXIT_USAGE = 2
"""Exit status: a bad command line, model, voice or option."""
SHUTDOWN_GRACE = 10
"""Seconds the responses under way get to finish after SIGTERM or Ctrl-C; then they are cut and the server exits."""


def _parser() -> argparse.ArgumentParser:
    d = ServeSettings(model_id="-")
    parser = argparse.ArgumentParser(
        prog="f5lite-serve",
        description="Serve a model behind OpenAI's speech API (POST /v1/audio/speech), with voices from a folder.",
        epilog=keys_help(ModelSource, "model keys (KEY=VALUE, as in f5lite-infer)") + "\n\n" + sample_keys_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add("settings", nargs="*", metavar="KEY=VALUE",
        help="the model (model=DIR device=cpu dtype=fp32 ...) and the sampler of every request (see below)")  # fmt: skip
    add("--voices", type=Path, help="folder of reference clips NAME.wav with transcripts NAME.txt")
    add("--host", default="127.0.0.1", help="address to bind (default: %(default)s, this machine only)")
    add("--port", type=int, default=8000, help="port (default: %(default)s)")
    add("--api-key", help=f"require 'Authorization: Bearer KEY' (default: ${API_KEY_ENV}, else no key)")
    add("--model-id", help="the model's name in /v1/models (default: the model's folder or file name)")
    add("--voice-upload", action="store_true", help="allow adding and deleting voices over HTTP")
    add("--max-upload-mb", type=float, default=d.max_upload_bytes / 2**20, help="largest voice upload")
    add("--max-voice-seconds", type=float, default=d.max_voice_seconds, help="longest reference clip")
    add("--queue-size", type=int, default=d.queue_size, help="speech requests at once; more get 429")
    add("--max-batch", type=int, default=d.max_batch, help="most pieces per sampler call")
    add("--max-batch-frames", type=int, default=d.max_batch_frames, help="most mel frames per sampler call")
    add("--batch-wait-ms", type=float, default=d.batch_wait * 1000, help="how long a batch waits for more")
    add("--request-timeout", type=float, default=d.request_timeout, help="seconds a speech request may take in all")
    add("--send-timeout", type=float, default=d.send_timeout,
        help="seconds a client may take to read the next piece (or send its body) before it loses its place")  # fmt: skip
    add("--max-per-client", type=int, default=d.max_per_client, help="speech requests at once per address; 0: no limit")
    add("--allow-origin", action="append", default=[], metavar="ORIGIN",
        help="a web page origin (https://app.example) whose browsers may call the API; repeat for more")  # fmt: skip
    add("--allow-host", action="append", default=[], metavar="NAME",
        help="another name clients reach the server by (tts.example); localhost, IP addresses and --host's name "
             "always work; repeat for more")  # fmt: skip
    add("--header-timeout", type=float, default=d.header_timeout,
        help="seconds a client may take to send a request's head (its request line and headers)")  # fmt: skip
    add("--body-timeout", type=float, default=d.body_timeout, help="seconds a client may take to send a whole body")
    add("--max-connections", type=int, default=d.max_connections,
        help="connections open at once (default: %(default)s, or fewer if the open-file limit says so)")  # fmt: skip
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `f5lite-serve` with a command line.

    Args:
        argv: the arguments (default: `sys.argv[1:]`).

    Returns:
        The exit status: 0 after a clean shutdown, 2 for a bad command line, model, voice or option.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    logging.basicConfig(level=logging.INFO, format="f5lite-serve: %(message)s")
    try:
        refuse_removed_flags(argv, REMOVED_FLAGS)  # before argparse, whose refusal would not name the key
    except ValueError as err:
        sys.stderr.write(f"f5lite-serve: error: {err}\n")
        return EXIT_USAGE
    args = _parser().parse_intermixed_args(argv)
    try:
        config = compose_serve_config(args.settings)
        settings = _settings(args, config)
        # Bound now, listening once the model is loaded: a taken address fails at once, and no client connects
        # to a server that cannot answer yet.
        listening = _bind(args.host, args.port)
    except (ValueError, OSError) as err:  # before the heavy imports and the model: at once
        sys.stderr.write(f"f5lite-serve: error: {err}\n")
        return EXIT_USAGE
    try:
        return _load_and_serve(args, config, settings, listening)
    finally:
        listening.close()


def _load_and_serve(
    args: argparse.Namespace, config: ServeConfig, settings: ServeSettings, listening: socket.socket
) -> int:
    """Load the model and voices, then serve on the bound socket (`main`'s second half)."""
    try:
        from f5lite.infer.synthesizer import Synthesizer
        from f5lite.serve.app import create_app
        from f5lite.serve.connections import connection_cap, serve
        from f5lite.serve.engine import Engine
        from f5lite.serve.voices import VoiceStore
    except ImportError as err:
        sys.stderr.write(f"f5lite-serve: error: pip install 'f5lite[serve]' ({err})\n")
        return EXIT_USAGE
    try:
        synthesizer = Synthesizer.from_pretrained(
            str(config.model),
            settings.vocoder,
            vocoder_source=settings.vocoder_source,
            **config.load_options(),
        )
        voices = VoiceStore(args.voices, synthesizer.reference, settings.max_voice_seconds)
        cap = connection_cap(settings.max_connections)  # with the model's files open
    except (ValueError, OSError, ImportError) as err:
        sys.stderr.write(f"f5lite-serve: error: {err}\n")
        return EXIT_USAGE
    engine = Engine(synthesizer, settings.max_batch, settings.max_batch_frames, settings.batch_wait, settings.seed)
    logging.getLogger(__name__).info(
        "%d voice(s); serving %s on http://%s:%d", len(voices.names()), settings.model_id, args.host, args.port
    )
    # The app stops the engine and the voices' recogniser when it shuts down.
    serve(create_app(engine, voices, settings), listening, settings, cap, SHUTDOWN_GRACE)
    return 0


def _settings(args: argparse.Namespace, config: ServeConfig) -> ServeSettings:
    """The server's settings from the command line's flags and its composed `key=value` arguments.

    Raises:
        ValueError: a bad value, or uploads open to other machines without a key.
    """
    api_key = args.api_key or os.environ.get(API_KEY_ENV) or None
    if args.voice_upload and api_key is None and not _loopback(args.host):
        raise ValueError(
            f"--voice-upload on {args.host}, an address other machines can reach, needs --api-key (or ${API_KEY_ENV})"
        )
    sample = config.sample
    return ServeSettings(
        model_id=args.model_id or Path(str(config.model)).name,
        options=sample.sampler_options(),
        seed=sample.seed,
        vocoder=sample.vocoder,
        vocoder_source=sample.vocoder_source if sample.vocoder == "vocos" else None,
        api_key=api_key,
        voice_upload=args.voice_upload,
        max_upload_bytes=int(args.max_upload_mb * 2**20),
        max_voice_seconds=args.max_voice_seconds,
        queue_size=args.queue_size,
        max_batch=args.max_batch,
        max_batch_frames=args.max_batch_frames,
        batch_wait=args.batch_wait_ms / 1000,
        request_timeout=args.request_timeout,
        send_timeout=args.send_timeout,
        max_per_client=args.max_per_client,
        allowed_origins=tuple(args.allow_origin),
        allowed_hosts=_host_names(args.host, args.allow_host),
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
        max_connections=args.max_connections,
    )


def _host_names(host: str, extra: Sequence[str]) -> tuple[str, ...]:
    """The names a request's `Host` may give besides `localhost` and IP addresses: `--host`'s, if a name, and more."""
    try:
        ipaddress.ip_address(host)
        return tuple(extra)
    except ValueError:
        return (host, *extra)


def _loopback(host: str) -> bool:
    """Whether `host` is this machine only (127.0.0.0/8, ::1, localhost)."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _bind(host: str, port: int) -> socket.socket:
    """The server's socket, bound before the model loads (minutes, on a big one): a taken address fails at once.

    Raises:
        OSError: one line naming the address.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family)
    # As asyncio binds: a restart need not wait for the last run's closed connections, and an IPv6 address is
    # IPv6 only.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    try:
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {err.strerror} (another server there?)") from None
    return sock
