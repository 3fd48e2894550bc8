"""``python -m cnet_lib answers``: the exercises' table (chapter, points, minutes, difficulty) and whether the
data derived from the exercises is up to date: the public answers the book's checks read
(:func:`cnet_lib.teacher.keys.write_public_answers`) and the library code each exercise's sandbox keeps
(:func:`cnet_lib.teacher.absent.trace`, traced from the chapters' solutions); ``--write`` recomputes both, after a change to
an exercise's cases, reference or solution, or to the library.

    python -m cnet_lib answers            # the table, and what is stale if anything (exit status 1)
    python -m cnet_lib answers --write    # rewrite public_answers.json and kept_functions.json
"""
from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from ..book.exercises.catalogue import CATALOGUE, DIFFICULTY
from ..book.project import find_root
from ..runtime.rich_text import format_table
from ..teacher.absent import stale_kept, write_kept
from ..teacher.keys import solution_sources, stale_answers, write_public_answers
from .command_line import command_main

__all__ = ["SUMMARY", "INTERRUPTED", "add_arguments", "run", "main"]

SUMMARY = ("The exercises (points, minutes, difficulty), their public answers and what their sandboxes keep "
           "(--write recomputes them)")


INTERRUPTED = "interrupted"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options: --write."""
    p.add_argument("--write", action="store_true",
                   help="recompute public_answers.json (the references) and kept_functions.json (the solutions)")


def run(args: argparse.Namespace) -> int:
    """Print the exercises; check (or --write) their public answers: 0 up to date or written, 1 stale."""
    rows = [{"exercise": r.name, "chapter": r.chapter, "points": r.points, "minutes": r.minutes,
             "difficulty": f"{r.difficulty} ({DIFFICULTY[r.difficulty]})"} for r in CATALOGUE]
    print(format_table(rows, [(c, c, "{}") for c in ("exercise", "chapter", "points", "minutes", "difficulty")], left=2))
    solutions = solution_sources(find_root())
    if args.write:
        print(f"\nwrote {write_public_answers()}")
        print(f"wrote {write_kept(solutions)}")
        return 0
    stale = stale_answers()
    if stale:
        print(f"\nerror: the public answers of {', '.join(stale)} are out of date: run python -m cnet_lib answers --write",
              file=sys.stderr)
        return 1
    stale = stale_kept(solutions)
    if stale:
        print(f"\nerror: what the sandboxes of {', '.join(stale)} keep of the library is out of date: run python -m "
              "cnet_lib answers --write", file=sys.stderr)
        return 1
    print("\nthe public answers and what each exercise's sandbox keeps are up to date")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command alone (:func:`cnet_lib.cli.command_line.command_main`); returns its exit status (0 up to
    date or written, 1 stale, 2 a wrong option, 130 interrupted)."""
    return command_main(sys.modules[__name__], argv)
