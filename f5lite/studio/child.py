"""`python -m f5lite.studio.child JOB_DIR -- COMMAND...`: run a job's command and write how it ended.

The studio starts every long job (a training run, a transcription, an evaluation) through this wrapper, in a
session of its own, so the job outlives a restart of the studio. The wrapper runs the command, waits for it, and
writes `JOB_DIR/status.json` (`rc`, `ended`) atomically: the exit status is then in the job's folder, readable by
any later studio process, where the studio itself could only know it while it is the command's parent.

The studio stops a job by signalling the whole session (`os.killpg`): the command gets the signal; the wrapper
ignores it (set once the command has started, so the command keeps the default disposition) and records the end.

The studio passes the job's lock (`f5lite.studio.jobs.Claim`: an open descriptor with an exclusive `flock`) to the
wrapper, which keeps it open, without knowing of it, until it exits: after the command has ended and its status is
written. The command does not inherit it (`Popen` closes other descriptors), so a process the command leaves
behind does not hold the job's folder.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from f5lite.atomic import write_json_atomic

STATUS_FILE = "status.json"
"""The wrapper's record of how the command ended."""


def main(argv: list[str] | None = None) -> int:
    """Run the command after `--`; record its exit status in JOB_DIR.

    Returns:
        The command's exit status (128 + N for a command killed by signal N, as a shell reports it).
    """
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 3 or args[1] != "--":
        sys.stderr.write("usage: python -m f5lite.studio.child JOB_DIR -- COMMAND...\n")
        return 2
    status = Path(args[0]) / STATUS_FILE
    try:
        process = subprocess.Popen(args[2:])
    except OSError as err:
        sys.stderr.write(f"cannot start {args[2]}: {err}\n")
        write_json_atomic(status, {"rc": 127, "ended": time.time()})
        return 127
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    rc = process.wait()
    rc = 128 - rc if rc < 0 else rc
    write_json_atomic(status, {"rc": rc, "ended": time.time()})
    return rc


if __name__ == "__main__":
    sys.exit(main())
