"""``python -m cnet_lib student OUTDIR``: write the student copies of the chapters
(:mod:`cnet_lib.book.student_copies`).

    python -m cnet_lib student OUTDIR --wheel-url URL      # students install the wheel written to OUTDIR
    python -m cnet_lib student OUTDIR --from-repository    # students install the repository at this commit
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from ..book.student_copies import StudentExportError, export, is_pushed, repository_install, wheel_install
from ..book.toc import find_root

__all__ = ["SUMMARY", "main"]

SUMMARY = "Write student copies of the chapters (no solutions, no path to them, the library pinned)"


def _parser() -> argparse.ArgumentParser:
    """The options: where the copies go, and how they install the library."""
    ap = argparse.ArgumentParser(prog="python -m cnet_lib student", description=SUMMARY + ".")
    ap.add_argument("outdir", type=Path)
    how = ap.add_mutually_exclusive_group(required=True)
    how.add_argument("--wheel-url", metavar="URL",
                     help="the URL of the folder where you will put the wheel written to OUTDIR (https://... or file://...); "
                     "the copies install it, and nothing in them names the book's repository")
    how.add_argument("--from-repository", action="store_true",
                     help="the copies install the book's repository at the current commit (clean and pushed); "
                     "students can then find the repository, which holds the solutions")
    ap.add_argument("--root", type=Path, default=None, help="repository root (default: found from the cwd)")
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command; returns its exit status (0 done, 1 an error said in one line, 2 a wrong option,
    130 interrupted)."""
    args = _parser().parse_args(argv)
    try:
        root = find_root(args.root)
        install = wheel_install(root, args.outdir, args.wheel_url) if args.wheel_url else repository_install(root)
        written = export(args.outdir, root, install)
    except (StudentExportError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted: run the same command again (the copies are written anew)", file=sys.stderr)
        return 130
    if not written:
        print("error: no notebooks listed in _toc.yml", file=sys.stderr)
        return 1
    for p in written:
        print(f"wrote {p}")
    print(f"\nThe copies install cnet-lib {install.build} from {install.source} (on Colab, in their first cell).")
    if install.wheel is not None:
        print(f"Before the lesson, put {install.wheel.name} (written to {args.outdir}) where {args.wheel_url} serves it.\n"
              f"Students on their own machines: pip install \"{install.requirement}\"")
    else:
        commit = install.build.split("@", 1)[1]
        if not is_pushed(root, commit):
            print(f"warning: no remote branch you have fetched contains commit {commit[:10]}: push it before the "
                  "lesson, or the students' install cell fails.", file=sys.stderr)
        print("Note: the install cell names the book's repository, where students can find the solutions; "
              "--wheel-url avoids that.")
    return 0
