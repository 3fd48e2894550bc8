"""``python -m cnet_lib grade SUBMISSIONS --key KEYDIR``: grade a folder of submissions into a CSV gradebook and one
feedback file per student, offline (:func:`cnet_lib.teacher.grading.grade_folder`).

    python -m cnet_lib grade submissions/ --key students-key/ --out gradebook.csv
    python -m cnet_lib grade submissions/ --key students-key/ --time-limit 20 --feedback feedback/
    python -m cnet_lib grade submissions/ --key students-key/ --resume      # after an interrupted run

Every exercise of every submission runs in an operating-system sandbox of its own (bubblewrap: no network, no
file of the teacher's, its own processes, capped memory, processes, disk and time), where the code the exercise
asks for is absent.  Linux only (on macOS or Windows: a Linux VM, WSL 2, a container, Colab); where no sandbox
starts it refuses and says how, unless ``--unsafe-no-sandbox`` (recorded in the gradebook).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from ..teacher.grading import RunOptions, grade_folder
from ..teacher.isolation import GIB, MIB, Limits, SandboxError
from ..teacher.keys import DEFAULT_TIME_LIMIT, AnswerKey

__all__ = ["SUMMARY", "main"]

SUMMARY = "Grade a folder of submissions: a CSV gradebook and feedback per student (hidden tests, each in a sandbox)"


def _parser() -> argparse.ArgumentParser:
    """The options: the submissions, the key, where the gradebook and the feedback go, the limits."""
    ap = argparse.ArgumentParser(prog="python -m cnet_lib grade", description=SUMMARY + ".")
    ap.add_argument("submissions", type=Path, help="a folder: one sub-folder or one file (.ipynb or .zip) per student")
    ap.add_argument("--key", type=Path, required=True, help="the KEYDIR written by `python -m cnet_lib student`")
    ap.add_argument("--out", type=Path, default=Path("gradebook.csv"), help="the CSV gradebook (default: gradebook.csv)")
    ap.add_argument("--feedback", type=Path, default=None,
                    help="folder of the feedback files (default: <OUT without .csv>-feedback/)")
    ap.add_argument("--time-limit", type=float, default=None,
                    help=f"seconds per exercise and student (default: the key's, {DEFAULT_TIME_LIMIT:g})")
    ap.add_argument("--memory", type=float, default=2.0, help="GiB of memory per sandbox, all its processes (default 2)")
    ap.add_argument("--processes", type=int, default=64, help="processes and threads per sandbox (default 64)")
    ap.add_argument("--disk", type=float, default=256, help="MiB of the sandbox's /tmp (default 256)")
    ap.add_argument("--jobs", type=int, default=None,
                    help="sandboxes at a time (default: one per CPU core, as many as the memory holds)")
    ap.add_argument("--resume", action="store_true",
                    help="keep the students already in --out (an interrupted run) and grade the others")
    ap.add_argument("--unsafe-no-sandbox", action="store_true",
                    help="grade where no sandbox can start: the students' code then runs as you, with your files "
                    "(the gradebook records it); only for submissions you trust")
    return ap


def _options(args) -> RunOptions:
    key = AnswerKey.load(args.key)
    limits = Limits(time_limit=args.time_limit or key.time_limit, memory_bytes=int(args.memory * GIB),
                    processes=args.processes, tmp_bytes=int(args.disk * MIB))
    if args.jobs is not None and args.jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {args.jobs}")
    feedback = args.feedback or args.out.with_name(args.out.stem + "-feedback")
    return RunOptions(args.submissions, args.key, args.out, feedback, limits, args.jobs, args.unsafe_no_sandbox,
                      args.resume)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command; returns its exit status (0 graded, 1 an error said in one line, 2 a wrong option,
    130 interrupted)."""
    args = _parser().parse_args(argv)
    opts = None
    try:
        opts = _options(args)
        if opts.unsafe:
            print("WARNING: --unsafe-no-sandbox: the students' code runs as you, with access to your files and "
                  "network; the gradebook records it.", file=sys.stderr)
        grades = grade_folder(opts, say=lambda line: print(line, flush=True))
    except (ValueError, OSError, SandboxError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        where = f"; {opts.out} holds the students graded so far" if opts is not None and opts.out.is_file() else ""
        print(f"\ninterrupted{where}: run the same command with --resume to grade the others", file=sys.stderr)
        return 130
    print(f"\nwrote {opts.out} ({len(grades)} students graded) and their feedback in {opts.feedback}/")
    return 0
