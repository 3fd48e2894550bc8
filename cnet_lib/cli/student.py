"""``cnet student OUTDIR`` (or ``python -m cnet_lib student``): write the student copies of the chapters
(:mod:`cnet_lib.book.student_copies`) and the teacher's answer key (:class:`cnet_lib.teacher.keys.AnswerKey`).

    python -m cnet_lib student OUTDIR --wheel-url URL      # students install the wheel written to OUTDIR-wheel
    python -m cnet_lib student OUTDIR --from-repository    # students install the repository at this commit
    python -m cnet_lib student OUTDIR --wheel-url URL --chapters how_to_use pendulum_integrators --key KEYDIR
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from ..book.project import find_root
from ..book.student_copies import (StudentExportError, chapters_with_exercises, export, is_pushed, repository_install,
    wheel_install)
from ..teacher.keys import AnswerKey, DEFAULT_TIME_LIMIT, KEY_FILE, solution_sources, write_key
from .command_line import command_main

__all__ = ["SUMMARY", "FAULTS", "INTERRUPTED", "add_arguments", "run", "main"]

SUMMARY = "Write student copies of the chapters (no solutions, no path to them, the library pinned) and the answer key"


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The options: where the copies and the key go, how the copies install the library, which chapters."""
    ap.add_argument("outdir", type=Path)
    how = ap.add_mutually_exclusive_group(required=True)
    how.add_argument("--wheel-url", metavar="URL",
                     help="the URL of the folder where you will put the wheel written to OUTDIR-wheel (https://... or file://...); "
                     "the copies install it, and nothing in them names the book's repository")
    how.add_argument("--from-repository", action="store_true",
                     help="the copies install the book's repository at the current commit (clean and pushed); "
                     "students can then find the repository, which holds the solutions")
    ap.add_argument("--chapters", nargs="+", metavar="CHAPTER", default=None,
                    help="the chapters of the class (notebook names without .ipynb; default: every chapter with exercises)")
    ap.add_argument("--key", type=Path, default=None, help="where the answer key goes (default: OUTDIR-key, beside OUTDIR)")
    ap.add_argument("--wheel-dir", type=Path, default=None,
                    help="where the students' wheel goes with --wheel-url (default: OUTDIR-wheel, beside OUTDIR: the "
                    "folder you hand out holds the notebooks only)")
    ap.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT,
                    help=f"seconds per exercise when grading (default {DEFAULT_TIME_LIMIT:g})")
    ap.add_argument("--root", type=Path, default=None, help="repository root (default: found from the cwd)")


def _keydir(args) -> Path:
    keydir = args.key or args.outdir.with_name(args.outdir.name + "-key")
    if keydir.resolve() == args.outdir.resolve() or args.outdir.resolve() in keydir.resolve().parents:
        raise StudentExportError(f"the answer key {keydir} would be inside {args.outdir}, which the students get: "
                                 "choose --key outside it")
    return keydir


def _wheel_dir(args) -> Path:
    wheel_dir = args.wheel_dir or args.outdir.with_name(args.outdir.name + "-wheel")
    if wheel_dir.resolve() == args.outdir.resolve():
        raise StudentExportError(f"--wheel-dir {wheel_dir} is the folder of the copies: the students get the notebooks "
                                 "there, and the wheel goes to its URL; choose another folder")
    return wheel_dir


def _write_key(args, root: Path, build: str, chapters: Sequence[str]) -> Path:
    """The answer key (a kept secret when the folder holds one already, so grading stays the same)."""
    keydir = _keydir(args)
    new = AnswerKey.new(chapters, build, args.time_limit)
    if (keydir / KEY_FILE).is_file():
        old = AnswerKey.load(keydir)
        new = AnswerKey(old.secret, new.chapters, new.exercises, new.points, build, args.time_limit)
        print(f"(kept the secret of the answer key already in {keydir})")
    return write_key(keydir, new, solution_sources(root))


FAULTS = (StudentExportError, KeyError)
"""Said in one line besides the shared ones (:data:`cnet_lib.cli.command_line.FAULTS`)."""

INTERRUPTED = "interrupted: run the same command again (the copies are written anew)"


def run(args: argparse.Namespace) -> int:
    """Write the copies, the wheel (or the repository's install) and the answer key; 0 when done."""
    root = find_root(args.root)
    chapters = args.chapters or chapters_with_exercises(root)
    _keydir(args)
    install = wheel_install(root, _wheel_dir(args), args.wheel_url) if args.wheel_url else repository_install(root)
    written = export(args.outdir, root, install, chapters)
    if not written:
        raise ValueError("no notebooks listed in _toc.yml")
    keydir = _write_key(args, root, install.build, [p.stem for p in written])
    for p in written:
        print(f"wrote {p}")
    print(f"\nThe copies install cnet-lib {install.build} from {install.source} (on Colab, in their first cell).")
    print(f"The answer key (keep it to yourself: its secret draws every submission's hidden cases): {keydir}/\n"
          f"Grade the submissions with: python -m cnet_lib grade SUBMISSIONS --key {keydir} --out gradebook.csv")
    if install.wheel is not None:
        print(f"Before the lesson, put {install.wheel.name} (written to {install.wheel.parent}) where {args.wheel_url} "
              f"serves it, and hand out the notebooks of {args.outdir}.\n"
              f"Students on their own machines: pip install \"{install.requirement}\"")
    else:
        commit = install.build.split("@", 1)[1]
        if not is_pushed(root, commit):
            print(f"warning: no remote branch you have fetched contains commit {commit[:10]}: push it before the "
                  "lesson, or the students' install cell fails.", file=sys.stderr)
        print("Note: the install cell names the book's repository, where students can find the solutions; "
              "--wheel-url avoids that.")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command alone (:func:`cnet_lib.cli.command_line.command_main`); returns its exit status (0 done,
    1 an error said in one line, 2 a wrong option, 130 interrupted)."""
    return command_main(sys.modules[__name__], argv)
