"""Test helpers: a chapter's prose and code, the names its prose glues, and the numbers it types.

A chapter's prose quotes its numbers as ``{glue:md}`name``` from the cell that computes them (issue 50, item 3); the
only numbers it may type are settings and definitions.  :func:`typed_numbers` finds the others (outside formulas,
code, links, comments and the paper's section, figure and table numbers; the chapter card, whose times are measured,
left out), :func:`glued_names` the names it quotes, and :func:`cells_ending_in_glue` the code cells that would show
their ``glue_all`` dict on the page.
"""
from __future__ import annotations

import re
from pathlib import Path

from cnet_lib.book.chapter_cards import without_card
from cnet_lib.book.notebook_cells import cell_source, read_notebook

ROOT = Path(__file__).resolve().parents[1]
GLUED = re.compile(r"\{glue:md\}`([^`]+)`")
NUMBER = re.compile(r"(?<![\w.])[+−-]?(?:\d{1,3}(?:,\d{3})+|\d+\.\d+(?:e[+-]?\d+)?|\d+e[+-]\d+|\d+(?:\.\d+)?%)(?![\w])")
HIDDEN = re.compile(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`|\]\([^)]*\)|<!--.*?-->|(?:Secs?\.|Sections?|Appendix|Figures?|Tables?) "
                    r"[A-Z]?\d+(?:\.\d+)*(?:\([a-z]\))?", re.S)


def _cells(chapter: str, kind: str) -> list[str]:
    return [cell_source(c) for c in read_notebook(ROOT / "book" / f"{chapter}.ipynb")["cells"] if c["cell_type"] == kind]


def markdown(chapter: str) -> str:
    """The prose of ``book/<chapter>.ipynb``, its markdown cells joined."""
    return "\n".join(_cells(chapter, "markdown"))


def code(chapter: str) -> str:
    """The code of ``book/<chapter>.ipynb``, its code cells joined."""
    return "\n".join(_cells(chapter, "code"))


def glued_names(chapter: str) -> set[str]:
    """The names the chapter's prose quotes with ``{glue:md}``."""
    return set(GLUED.findall(markdown(chapter)))


def typed_numbers(chapter: str, settings=frozenset()) -> list[str]:
    """The numbers the chapter's prose types (not glued), less ``settings`` (numbers that are settings or
    definitions, not results)."""
    text = HIDDEN.sub(" ", without_card(markdown(chapter)))
    return [m.group(0) for m in NUMBER.finditer(text) if m.group(0).lstrip("+−-") not in settings]


def cells_ending_in_glue(chapter: str) -> list[str]:
    """The code cells whose last line is a ``glue_all(...)`` call (the page would show the dict it returns)."""
    cells = [c.strip() for c in _cells(chapter, "code")]
    return [c for c in cells if c.splitlines() and c.splitlines()[-1].startswith("glue_all(")]
