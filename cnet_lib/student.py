"""Write the student versions of the book's notebooks.

    python -m cnet_lib.student OUTDIR [--root REPO]

For every notebook listed in ``_toc.yml``: cells tagged ``solution`` are removed, outputs,
execution counts and widget state are cleared; exercise stubs (tag ``exercise``) and the check
cells stay.  The files are written as ``OUTDIR/<name>.ipynb``.
"""
from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path
from typing import Optional

from .notebook_tools import SOLUTION_TAG, cell_tags, read_notebook, strip_outputs, toc_notebooks, write_notebook

__all__ = ["student_version", "export", "main"]


def student_version(nb: dict) -> dict:
    """A copy of ``nb`` without solution cells and without outputs."""
    out = copy.deepcopy(nb)
    out["cells"] = [c for c in out["cells"] if SOLUTION_TAG not in cell_tags(c)]
    return strip_outputs(out)


def export(outdir: Path, root: Optional[Path] = None) -> list[Path]:
    """Write the student version of every notebook in ``_toc.yml`` into ``outdir``."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    for src in toc_notebooks(root):
        dst = outdir / src.name
        write_notebook(student_version(read_notebook(src)), dst)
        written.append(dst)
    return written


def main(argv: Optional[list] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cnet_lib.student", description="Write student versions of the notebooks.")
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--root", type=Path, default=None, help="repository root (default: found from the cwd)")
    args = ap.parse_args(argv)
    try:
        written = export(args.outdir, args.root)
    except FileNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for p in written:
        print(f"wrote {p}")
    if not written:
        print("no notebooks listed in _toc.yml")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
