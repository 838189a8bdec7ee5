"""`f5lite-studio [--root DIR] [--host 127.0.0.1] [--port N] [--auth USER:PASSWORD] [device=D] [sample.KEY=VALUE ...]`.

Also `python -m f5lite.studio`. Where models run, the sampler's settings (where Speak's controls start) and the vocoder
(of Speak, training samples and evaluations) are spelled as in `f5lite-infer`: `device=cpu sample.steps=16
sample.vocoder=griffin_lim` (`f5lite.studio.config`).

The page is served on 127.0.0.1 unless `--host` says otherwise, behind a username and password when `--auth` (or
the `F5LITE_STUDIO_AUTH` environment variable, `user:password`) gives them, and never through a public share link
unless `--share` asks for one. Only files under the workspace are served: Gradio's upload and cache folder is put
inside it (`ROOT/.studio-cache`) and the workspace is the one allowed path. An upload larger than
`--max-upload-mb` is refused by Gradio. A bad option, a root that cannot be made or a port in use ends the command
with one line and exit status 2.

Streamed audio needs an `ffmpeg` program (Gradio encodes the stream with it); when none is on PATH, the one in the
`imageio-ffmpeg` wheel (the `studio` extra) is put on PATH for the studio.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

from f5lite.config.compose import refuse_removed_flags
from f5lite.config.sample_args import keys_help
from f5lite.credentials import STUDIO_AUTH_ENV
from f5lite.studio.config import REMOVED_FLAGS, StudioConfig, compose_studio_config

EXIT_USAGE = 2
CACHE = ".studio-cache"
"""Gradio's upload and cache folder, inside the workspace."""
MAX_UPLOAD_MB = 1024
"""The default `--max-upload-mb`: hours of raw recordings (an hour of 16-bit 48 kHz stereo WAV is 660 MiB)."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="f5lite-studio",
        description="The f5lite web app: speak, prepare data, train, evaluate and export.",
        epilog=keys_help(StudioConfig, "keys (KEY=VALUE, as in f5lite-infer)"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add(
        "--root", type=Path, default=Path("studio"), help="workspace folder, one folder per project (default: ./studio)"
    )
    add("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)")
    add("--port", type=int, default=7860, help="port (default: 7860)")
    add("--auth", default=None, help=f"USER:PASSWORD to log in with (default: ${STUDIO_AUTH_ENV}, else none)")
    add("--share", action="store_true", help="also open a public Gradio share link (off unless asked)")
    add(
        "--max-upload-mb", type=int, default=MAX_UPLOAD_MB,
        help=f"largest file an upload may hold, in MiB (default: {MAX_UPLOAD_MB})",
    )  # fmt: skip
    add("settings", nargs="*", metavar="KEY=VALUE",
        help="device=, Speak's sampler settings and the vocoder of Speak, training samples and evaluations (see below)")  # fmt: skip
    return parser


def _ffmpeg_on_path(root: Path) -> None:
    if shutil.which("ffmpeg"):
        return
    try:
        import imageio_ffmpeg
    except ImportError:
        return  # Gradio says what is missing when it streams
    folder = root / CACHE / "bin"
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / "ffmpeg"
    if not link.exists():
        link.symlink_to(imageio_ffmpeg.get_ffmpeg_exe())
    os.environ["PATH"] = f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"


def _port_taken(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the studio until interrupted.

    Returns:
        The exit status: 0 after Ctrl-C, 2 for bad input.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        refuse_removed_flags(argv, REMOVED_FLAGS)  # before argparse, whose refusal would not name the key
        args = _parser().parse_intermixed_args(argv)
        config = compose_studio_config(args.settings)
        sample = config.sample
    except ValueError as err:
        sys.stderr.write(f"f5lite-studio: {err}\n")
        return EXIT_USAGE
    auth_text = args.auth if args.auth is not None else os.environ.get(STUDIO_AUTH_ENV)
    auth = None
    if auth_text:
        user, sep, password = auth_text.partition(":")
        if not sep or not user or not password:
            sys.stderr.write("f5lite-studio: --auth must be USER:PASSWORD\n")
            return EXIT_USAGE
        auth = (user, password)
    if not 0 < args.port < 65536:
        sys.stderr.write(f"f5lite-studio: --port {args.port} is not a port number\n")
        return EXIT_USAGE
    if args.max_upload_mb < 1:
        sys.stderr.write(f"f5lite-studio: --max-upload-mb {args.max_upload_mb} must be at least 1\n")
        return EXIT_USAGE
    if _port_taken(args.host, args.port):
        sys.stderr.write(
            f"f5lite-studio: {args.host}:{args.port} is in use (or not an address here); give another --port\n"
        )
        return EXIT_USAGE
    try:
        root = args.root.expanduser().resolve()
        (root / CACHE).mkdir(parents=True, exist_ok=True)
    except OSError as err:
        sys.stderr.write(f"f5lite-studio: cannot use {args.root} as the workspace: {err.strerror or err}\n")
        return EXIT_USAGE
    # Before Gradio is imported: its cache folder, and no calls home.
    os.environ["GRADIO_TEMP_DIR"] = str(root / CACHE)
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    _ffmpeg_on_path(root)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    from f5lite.studio.app import build
    from f5lite.studio.project import StudioRoot
    from f5lite.studio.settings import StudioSettings

    page = build(
        StudioRoot(root),
        StudioSettings(
            sample.vocoder,
            sample.vocoder_source if sample.vocoder == "vocos" else None,
            config.device,
            sample.sampler_options(),
            sample.seed,
        ),
    )
    sys.stdout.write(f"f5lite-studio: workspace {root}\n")
    sys.stdout.flush()
    page.queue(default_concurrency_limit=4).launch(
        server_name=args.host, server_port=args.port, auth=auth, share=args.share, allowed_paths=[str(root)],
        max_file_size=args.max_upload_mb * 1024 * 1024, ssr_mode=False, show_error=True, quiet=False,
    )  # fmt: skip
    return 0
