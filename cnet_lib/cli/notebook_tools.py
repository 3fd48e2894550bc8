"""``python -m cnet_lib notebook_tools check|fix``: check and fix the chapters' conventions
(:mod:`cnet_lib.book.conventions`, ``book/CONTRIBUTING.md``).

    python -m cnet_lib notebook_tools check            # every notebook listed in _toc.yml
    python -m cnet_lib notebook_tools fix book/*.ipynb # rewrite badge, first cells, solution cells' frame; strip outputs
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from ..book.conventions import check_notebook, fix_notebook
from ..book.project import toc_notebooks
from .command_line import command_main

__all__ = ["SUMMARY", "INTERRUPTED", "add_arguments", "run", "main"]

SUMMARY = "Check (or fix) that every chapter follows book/CONTRIBUTING.md"


INTERRUPTED = "interrupted; a notebook being fixed is written whole or not at all: run the same command again"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options: check or fix, which notebooks, the repository root."""
    p.add_argument("command", choices=["check", "fix"])
    p.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook listed in _toc.yml")
    p.add_argument("--root", type=Path, default=None, help="repository root (default: found from the cwd)")


def run(args: argparse.Namespace) -> int:
    """Check (or fix, then check) the notebooks; 0 when every one follows the conventions, else 1."""
    notebooks = args.notebooks or toc_notebooks(args.root)
    if not notebooks:
        raise ValueError("no notebooks given and none listed in _toc.yml")
    bad = 0
    for nb in notebooks:
        if args.command == "fix":
            changed = fix_notebook(nb)
            print(f"{'fixed  ' if changed else 'ok     '} {nb}")
        problems = check_notebook(nb)
        if problems:
            bad += 1
            print(f"PROBLEMS {nb}:")
            for p in problems:
                print(f"  - {p}")
        elif args.command == "check":
            print(f"ok       {nb}")
    return 1 if bad else 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command alone (:func:`cnet_lib.cli.command_line.command_main`); returns its exit status (0 every
    notebook follows the conventions, 1 otherwise or an error said in one line, 2 a wrong option)."""
    return command_main(sys.modules[__name__], argv)
