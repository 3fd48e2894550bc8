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
from cnet_lib.book.project import toc_files, toc_notebooks

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


STATISTICS = {"Welch's test": re.compile(r"Welch"), "Holm's correction": re.compile(r"Holm"),
              "McNemar's test": re.compile(r"McNemar"), "confidence interval": re.compile(r"confidence interval"),
              "power": re.compile(r"\bpower\b(?! of \$)")}
"""The statistics a chapter may use, each to be introduced in a box where it is first used (issue 53, item 3)."""
BOX = re.compile(r"```\{admonition\}.*?\n```", re.S)
CARD = re.compile(r"<!-- chapter card.*?<!-- end of the chapter card -->", re.S)


@pytest.mark.parametrize("nb", toc_notebooks(ROOT), ids=lambda p: p.stem)
def test_statistics_are_defined_in_a_box_where_first_used_and_named_by_the_card(nb):
    cells = [cell_source(c) for c in read_notebook(nb)["cells"] if c["cell_type"] == "markdown"]
    card = CARD.search(cells[0])
    card_text = card.group(0) if card else ""
    # the card and the opening's "In this chapter you will" list announce; they do not use
    cells[0] = "\n".join(ln for ln in CARD.sub("", cells[0]).splitlines() if not ln.lstrip().startswith("- "))
    for name, term in STATISTICS.items():
        uses = [i for i, text in enumerate(cells) if term.search(BOX.sub("", text))]
        boxes = [i for i, text in enumerate(cells) if any(term.search(b) for b in BOX.findall(text))]
        if not uses and not boxes:
            continue
        assert boxes, f"{nb.stem} uses {name} and no box introduces it"
        assert boxes[0] <= min(uses, default=boxes[0]), \
            f"{nb.stem} uses {name} (markdown cell {min(uses)}) before its box (cell {boxes[0]})"
        assert term.search(card_text) or name.split("'")[0] in card_text, f"{nb.stem}: its card does not name {name}"
