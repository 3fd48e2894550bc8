"""``python -m cnet_lib grade SUBMISSIONS --key KEYDIR``: grade a folder of submissions into a CSV gradebook and one
feedback file per student, offline (:mod:`cnet_lib.teacher.grading`).

    python -m cnet_lib grade submissions/ --key students-key/ --out gradebook.csv
    python -m cnet_lib grade submissions/ --key students-key/ --time-limit 20 --feedback feedback/

Each exercise cell runs in a fresh process with a time limit; a cell that crashes, loops or tampers gets zero
for that exercise and a flag, and the rest is graded.  Linux and macOS (forks; on Windows use WSL).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Optional, Sequence

from ..teacher.answer_key import AnswerKey
from ..teacher.gradebook import summary_line, write_feedback, write_gradebook
from ..teacher.grading import grade_submission
from ..teacher.sandbox_client import Sandbox, SandboxError
from ..teacher.submissions import find_submissions

__all__ = ["SUMMARY", "main"]

SUMMARY = "Grade a folder of submissions: a CSV gradebook and feedback per student (hidden tests, run isolated)"


def _parser() -> argparse.ArgumentParser:
    """The options: the submissions, the key, where the gradebook and the feedback go, the time limit."""
    ap = argparse.ArgumentParser(prog="python -m cnet_lib grade", description=SUMMARY + ".")
    ap.add_argument("submissions", type=Path, help="a folder: one sub-folder or one file (.ipynb or .zip) per student")
    ap.add_argument("--key", type=Path, required=True, help="the KEYDIR written by `python -m cnet_lib student`")
    ap.add_argument("--out", type=Path, default=Path("gradebook.csv"), help="the CSV gradebook (default: gradebook.csv)")
    ap.add_argument("--feedback", type=Path, default=None,
                    help="folder of the feedback files (default: <OUT without .csv>-feedback/)")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="seconds per exercise and student (default: the key's, 60)")
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command; returns its exit status (0 graded, 1 an error said in one line, 2 a wrong option,
    130 interrupted)."""
    args = _parser().parse_args(argv)
    feedback = args.feedback or args.out.with_name(args.out.stem + "-feedback")
    try:
        key = AnswerKey.load(args.key)
        subs = find_submissions(args.submissions, key.chapters)
        if not subs:
            print(f"error: no submissions in {args.submissions} (one folder, .ipynb or .zip per student)", file=sys.stderr)
            return 1
        with tempfile.TemporaryDirectory(prefix="cnet-grade-") as tmp, \
                Sandbox(Path(tmp), args.time_limit or key.time_limit) as sandbox:
            grades = []
            for sub in subs:
                grades.append(grade_submission(sub, key, sandbox))
                write_feedback(grades[-1], feedback)
                print(summary_line(grades[-1]), flush=True)
        write_gradebook(grades, key.exercises, args.out)
    except (ValueError, OSError, SandboxError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted: nothing was written to the gradebook; run the same command again", file=sys.stderr)
        return 130
    print(f"\nwrote {args.out} ({len(grades)} students) and their feedback in {feedback}/")
    return 0
