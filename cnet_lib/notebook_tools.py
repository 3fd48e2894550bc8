"""Command line: check and fix the chapters' conventions (:mod:`cnet_lib.book.notebook_tools`).

    python -m cnet_lib.notebook_tools check
    python -m cnet_lib.notebook_tools fix book/*.ipynb
"""
from __future__ import annotations

import sys

from .book.notebook_tools import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
