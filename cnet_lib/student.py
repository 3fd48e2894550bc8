"""Command line: write the student copies of the chapters (:mod:`cnet_lib.book.student`).

    python -m cnet_lib.student OUTDIR --wheel-url URL
"""
from __future__ import annotations

import sys

from .book.student import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
