"""The prose states what the published book measured, and every number it states is the computed one.

The chapters glue every number their prose states from the cell that computes it (each study's test file checks
it).  A page without such a cell (the introduction) states what the published book measured (the preset
:data:`cnet_lib.book.project.PUBLISHED_PRESET`, from what ships with it), so those numbers are known before the
build: ``tests/published_numbers.py`` computes them the way the chapters do.  Two checks hold the prose to them:

* every fragment of :data:`CLAIMS`, its placeholders filled with the computed numbers, is in the page's prose, so
  a stated number that no longer matches its computation fails;
* every number the prose states (decimals, percentages, numbers with thousands separators or an exponent, outside
  formulas, code and the paper's section, figure and table numbers) lies inside one of those fragments or is one of the page's :data:`CONSTANTS` (settings and
  definitions, not results), so no result can be typed without a check.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import published_numbers as P
from cnet_lib.book.chapter_cards import without_card
from cnet_lib.book.notebook_cells import cell_source, read_notebook

pytestmark = pytest.mark.slow  # rolls the shipped ODE-Nets out (a few seconds) and reads the shipped studies

ROOT = Path(__file__).resolve().parents[1]

CLAIMS: dict[str, list[str]] = {
    "book/intro": [
        "measured on {n_test} images held out",
    ],
}
"""Per page (``book/<name>``), fragments of its prose with ``{placeholders}`` for the computed numbers
(:mod:`published_numbers`); whitespace and line breaks do not matter."""

CONSTANTS: dict[str, set] = {}
"""Per page, the numbers its prose may state that are settings or definitions, not results."""

EVERYWHERE = {"95%"}
"""Numbers any page may state: the confidence level of every interval."""

NUMBER = re.compile(r"(?<![\w.])[+−-]?(?:\d{1,3}(?:,\d{3})+|\d+\.\d+(?:e[+-]?\d+)?|\d+e[+-]\d+|\d+(?:\.\d+)?%)(?![\w])")
HIDDEN = re.compile(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`|\]\([^)]*\)|<!--.*?-->|(?:Secs?\.|Sections?|Appendix|Figures?|Tables?) "
                    r"[A-Z]?\d+(?:\.\d+)*(?:\([a-z]\))?", re.S)


def _prose(page: str) -> str:
    path = ROOT / f"{page}.ipynb"
    text = ("\n".join(cell_source(c) for c in read_notebook(path)["cells"] if c["cell_type"] == "markdown")
            if path.is_file() else (ROOT / f"{page}.md").read_text(encoding="utf-8"))
    text = without_card(text)  # the card's times are measured and checked by tests/test_chapter_cards.py
    return re.sub(r"\s+", " ", text)


@pytest.fixture(scope="module")
def numbers(tmp_path_factory) -> dict:
    runs = str(tmp_path_factory.mktemp("runs"))
    return P.image_numbers(runs)


@pytest.mark.parametrize("page", sorted(CLAIMS))
def test_the_prose_states_the_computed_numbers(page, numbers):
    text = _prose(page)
    missing = [f for f in (re.sub(r"\s+", " ", c.format(**numbers)) for c in CLAIMS[page]) if f not in text]
    assert not missing, f"{page}: the prose does not say (with today's numbers):\n" + "\n".join(missing)


@pytest.mark.parametrize("page", sorted(CLAIMS))
def test_every_number_the_prose_states_is_checked(page, numbers):
    text = _prose(page)
    covered = []
    for c in CLAIMS[page]:
        f = re.sub(r"\s+", " ", c.format(**numbers))
        covered += [(m.start(), m.end()) for m in re.finditer(re.escape(f), text)]
    visible = HIDDEN.sub(lambda m: " " * len(m.group(0)), text)
    loose = [m.group(0) for m in NUMBER.finditer(visible)
             if not any(a <= m.start() < b for a, b in covered)
             and m.group(0).lstrip("+−-") not in CONSTANTS.get(page, set()) | EVERYWHERE]
    assert not loose, f"{page}: numbers in the prose that no check computes: {loose}"
