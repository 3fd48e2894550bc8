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
from ..book.toc import toc_notebooks

__all__ = ["SUMMARY", "main"]

SUMMARY = "Check (or fix) that every chapter follows book/CONTRIBUTING.md"


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command; returns its exit status (0 every notebook follows the conventions, 1 otherwise or
    an error said in one line, 2 a wrong option)."""
    ap = argparse.ArgumentParser(prog="python -m cnet_lib notebook_tools", description=SUMMARY + ".")
    ap.add_argument("command", choices=["check", "fix"])
    ap.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook listed in _toc.yml")
    ap.add_argument("--root", type=Path, default=None, help="repository root (default: found from the cwd)")
    args = ap.parse_args(argv)
    try:
        notebooks = args.notebooks or toc_notebooks(args.root)
    except FileNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if not notebooks:
        print("error: no notebooks given and none listed in _toc.yml", file=sys.stderr)
        return 1
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
