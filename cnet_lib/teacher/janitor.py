"""The grading run's cleaner: ``python -I janitor.py`` started by ``python -m cnet_lib grade`` in a session of its
own (so a Ctrl-C or a kill of the terminal's process group spares it), with a pipe from the grader on its
standard input.

It reads paths from the pipe, one a line: the run's temporary folder first, then its cgroup folders.  When the
pipe closes (the grader ended, however it ended: finished, interrupted, killed with SIGKILL) it waits for the
sandboxes to die (they die with the grader: bwrap's ``--die-with-parent``) and removes what is still there, so a
grading run leaves no temporary files and no cgroups behind.  It imports nothing but the standard library.
"""
from __future__ import annotations

import os
import shutil
import signal
import sys
import time

__all__ = ["main", "clean"]


def clean(paths: list[str], wait: float = 10.0) -> None:
    """Remove the folder ``paths[0]`` and the cgroup folders ``paths[1:]`` (children first), retrying up to
    ``wait`` seconds while processes in them end."""
    deadline = time.monotonic() + wait
    folder, cgroups = (paths[0] if paths else ""), paths[1:]
    while True:
        if folder and os.path.lexists(folder):
            shutil.rmtree(folder, ignore_errors=True)
        left = [c for c in cgroups if os.path.isdir(c)]
        for c in left:
            for child in sorted(os.listdir(c)):
                path = os.path.join(c, child)
                if os.path.isdir(path):
                    _rmdir(path)
            _rmdir(c)
        if not (folder and os.path.lexists(folder)) and not any(os.path.isdir(c) for c in cgroups):
            return
        if time.monotonic() > deadline:
            return
        time.sleep(0.1)


def _rmdir(path: str) -> None:
    try:
        procs = os.path.join(path, "cgroup.procs")
        for pid in open(procs).read().split() if os.path.isfile(procs) else ():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, PermissionError, ValueError):
                pass
        os.rmdir(path)
    except OSError:
        pass


def main() -> int:
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    paths = [line.strip() for line in sys.stdin if line.strip()]
    clean(paths)
    return 0


if __name__ == "__main__":
    sys.exit(main())
