"""Every sentence of the chapters that compares numbers agrees with the numbers it sits beside.

Sentences whose numbers depend on the preset or on training (the verdicts) are worded by the library from the
numbers a chapter has just computed, so they cannot disagree with them; the chapters are checked to display them, and
to display their tables, never print them.

The sentences of the chapters whose studies have their own folder are checked in their study's tests
(``tests/test_pendulum.py``, ``tests/test_continuousnet.py``, ``tests/test_refinement.py``).
"""
from __future__ import annotations

import re
from pathlib import Path

from cnet_lib.book.notebook_cells import cell_source, read_notebook

ROOT = Path(__file__).resolve().parents[1]


def _code(name: str) -> str:
    return "\n".join(cell_source(c) for c in read_notebook(ROOT / "book" / f"{name}.ipynb")["cells"]
                     if c["cell_type"] == "code")


def test_no_chapter_prints_a_table():
    """Tables and verdicts are displayed (HTML that wraps to the page), never printed."""
    printed = re.compile(r"print\(\s*\"?\\?n?\"?\s*\+?\s*(?:\"\\n\"\.join\()?\s*(report|pendulum|continuousnet|refinement|book|demos)\.(format_\w+|\w+_text|"
                         r"\w+_table|word_\w+)\(")
    for nb in sorted((ROOT / "book").glob("*.ipynb")):
        hits = printed.findall(_code(nb.stem))
        assert not hits, f"{nb.name} prints a table or verdict: display it instead ({hits})"
