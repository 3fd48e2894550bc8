"""A notebook's code cells read once, in bounded time: each cell turned into Python and parsed at most once
(:func:`read_cells`), so that everything the grader asks of a notebook afterwards (which cell defines an exercise,
the imports above it, what a cell uses) costs no more reading.

Reading is linear in the cells' sizes (:func:`cnet_lib.book.cell_magics.cell_python`) and capped: a cell over
:data:`CELL_CAP` characters is not turned into Python nor parsed here (it is found by its ``def`` lines and still
runs in the sandbox, whose time limit bounds it) and is flagged; once one submission has spent
:data:`READ_SECONDS` on reading (its files, its cells, their audit, the similarity check) or had
:data:`READ_CHARACTERS` of code parsed (:class:`Deadline`), its remaining cells are treated the same way and
nothing more of it is audited.  A cell the parser refuses, however it refuses (a syntax
error, nesting too deep, a null byte), is "not Python" with the parser's words.
"""
from __future__ import annotations

import ast
import re
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Iterator, Optional

from ..book.cell_magics import python_and_tree
from .submission_files import READ_SECONDS

__all__ = ["CodeCell", "read_cells", "exercise_cell", "preamble", "Deadline", "CELL_CAP", "READ_SECONDS",
           "READ_CHARACTERS"]

CELL_CAP = 50_000
"""Characters of one cell the grader reads (the book's longest exercise cell has under 1,500)."""
READ_CHARACTERS = 2_000_000
"""Characters of code cells one submission may have parsed (the book's eight chapters hold under 30,000)."""
_DEF = re.compile(r"^(?:async\s+)?def\s+(\w+)\s*\(", re.M)


class Deadline:
    """The reading one submission may spend: :data:`READ_SECONDS` (its files read by their own program, then its
    cells and their audit here), counted while it reads (:meth:`timing`), so that time spent on other students'
    submissions never counts against it; and :data:`READ_CHARACTERS` of code parsed (:meth:`charge`), which bounds
    the memory its parsed cells hold."""

    def __init__(self, seconds: float = READ_SECONDS, characters: int = READ_CHARACTERS):
        self.seconds, self.spent = seconds, 0.0
        self.characters, self.parsed = characters, 0

    def passed(self) -> bool:
        return self.spent > self.seconds or self.parsed > self.characters

    def why(self) -> str:
        """Why the budget is spent, in words."""
        if self.parsed > self.characters:
            return f"the submission's code cells hold over {self.characters:,} characters"
        return f"reading the submission took over {self.seconds:g} s"

    def charge(self, characters: int) -> bool:
        """Count ``characters`` about to be parsed; False (and nothing counted) when they do not fit."""
        if self.parsed + characters > self.characters:
            self.parsed = self.characters + 1
            return False
        self.parsed += characters
        return True

    @contextmanager
    def timing(self) -> Iterator[None]:
        """Count the time inside as this submission's reading."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.spent += time.perf_counter() - start


@dataclass(frozen=True)
class CodeCell:
    """One code cell: its ``index`` among the code cells, its ``source`` as handed in, ``python`` (the source as
    Python, None when not read), ``tree`` (None when not read or not Python), ``problem`` (why not, in words) and
    the names of the functions it ``defines`` at its top level."""

    index: int
    source: str
    python: Optional[str]
    tree: Optional[ast.Module]
    problem: str
    defines: frozenset

    @property
    def read(self) -> bool:
        """Whether the grader read the cell (it is Python and was parsed)."""
        return self.tree is not None


def _parse(source: str) -> tuple[Optional[str], Optional[ast.Module], str]:
    python, tree = python_and_tree(source)
    if isinstance(tree, ast.Module):
        return python, tree, ""
    if isinstance(tree, SyntaxError):
        return python, None, f"not Python (line {tree.lineno}: {tree.msg})"
    return python, None, f"not Python ({type(tree).__name__}: {str(tree)[:100] or 'the parser gave up'})"


def _read_one(index: int, source: str, deadline: Optional[Deadline]) -> CodeCell:
    by_lines = frozenset(_DEF.findall(source))
    if len(source) > CELL_CAP:
        return CodeCell(index, source, None, None, f"{len(source):,} characters, over the grader's reading cap of "
                        f"{CELL_CAP:,}: not read for flags (look at it)", by_lines)
    if deadline is not None and (deadline.passed() or not deadline.charge(len(source))):
        return CodeCell(index, source, None, None, f"not read: {deadline.why()} (look at it)", by_lines)
    with deadline.timing() if deadline is not None else nullcontext():
        python, tree, problem = _parse(source)
    if tree is None:
        return CodeCell(index, source, python, None, problem, by_lines)
    defined = frozenset(n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return CodeCell(index, source, python, tree, "", defined)


def read_cells(nb: dict, deadline: Optional[Deadline] = None) -> list[CodeCell]:
    """The code cells of ``nb`` (a notebook as :func:`.submission_files.read_notebook_data` gives it), each read
    once (see the module doc)."""
    sources = [c.get("source", "") for c in nb.get("cells", []) if isinstance(c, dict) and c.get("cell_type") == "code"]
    return [_read_one(i, s if isinstance(s, str) else "", deadline) for i, s in enumerate(sources)]


def exercise_cell(cells: list[CodeCell], name: str) -> Optional[CodeCell]:
    """The last code cell that defines ``def name(...)`` at its top level (the one "Run all" leaves in force); a
    cell that was not read counts when one of its lines starts with ``def name(``."""
    return next((c for c in reversed(cells) if name in c.defines), None)


def preamble(cells: list[CodeCell], upto: int) -> str:
    """The top-level import statements of the code cells before code cell ``upto`` (absolute imports only): what
    the grader runs before an exercise cell, so that a name imported above it (``torch``) is there."""
    lines = []
    for cell in cells[:upto]:
        if cell.tree is not None:
            lines += [ast.unparse(n) for n in cell.tree.body
                      if isinstance(n, (ast.Import, ast.ImportFrom)) and not getattr(n, "level", 0)]
    return "\n".join(lines)
