"""The book says what it measured in a reader's words: no word of the machinery that builds and checks it.

The built pages are checked in a browser (``tests/book_browser.py``: machine paths and :data:`MACHINERY` words in
what a page says, on every page of the smoke build); this fast test reads the sources those pages come from, so a
sentence is caught before any build: the chapters' prose and the reference pages carry no machine path and no
machinery word, and the chapters and the introduction, which a student reads, do not send the reader to the
``smoke`` preset or to CI (those are the contributors' business: *The library*, ``book/CONTRIBUTING.md``).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from book_browser import MACHINE_PATH, MACHINERY
from cnet_lib.book.notebook_cells import cell_source, read_notebook
from cnet_lib.book.toc import toc_files, toc_notebooks

ROOT = Path(__file__).resolve().parents[1]
FOR_STUDENTS = re.compile(r"\bsmoke\b|\bCI\b|continuous integration")


def _prose(page: str) -> str:
    path = ROOT / f"{page}.ipynb"
    if path.is_file():
        return "\n".join(cell_source(c) for c in read_notebook(path)["cells"] if c["cell_type"] == "markdown")
    return (ROOT / f"{page}.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("page", toc_files(ROOT))
def test_no_page_names_the_machinery_or_a_machine_path(page):
    text = _prose(page)
    words = sorted({m.group(0) for m in MACHINERY.finditer(text)})
    paths = sorted({m.group(0) for m in MACHINE_PATH.finditer(text)})
    assert not words and not paths, f"{page}: machinery {words}, machine paths {paths}"


@pytest.mark.parametrize("page", ["book/intro", *[f"book/{nb.stem}" for nb in toc_notebooks(ROOT)]])
def test_the_chapters_and_the_introduction_speak_to_a_student(page):
    found = sorted({m.group(0) for m in FOR_STUDENTS.finditer(_prose(page))})
    assert not found, f"{page} speaks of {found}: say it on the page The library, or not at all"
