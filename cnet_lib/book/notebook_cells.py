"""Notebooks as files and cells: read and written with :mod:`nbformat` (version 4, the layout Jupyter
writes), a cell's source and tags, outputs stripped.  The cell tags of the book's exercises are named
here (:data:`EXERCISE_TAG`, :data:`SOLUTION_TAG`, :data:`HIDE_TAG`), as is the Colab badge
(:data:`BADGE_RE`).
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat

__all__ = ["EXERCISE_TAG", "SOLUTION_TAG", "HIDE_TAG", "SOLUTION_TITLE", "SOLUTION_DECORATOR", "BADGE_RE",
           "read_notebook", "write_notebook", "cell_source", "set_source", "cell_tags", "code_cells", "new_code_cell",
           "new_markdown_cell", "strip_outputs"]

EXERCISE_TAG = "exercise"
SOLUTION_TAG = "solution"
HIDE_TAG = "hide-input"
SOLUTION_TITLE = "# @title Solution: try the exercise first"  # Colab shows this line and hides the code
SOLUTION_DECORATOR = "solution"
BADGE_RE = re.compile(r"\[!\[Open In Colab\]\([^)]*\)\]\([^)]*\)")


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """The notebook at ``path``, as nbformat version 4 (a dict whose keys are also attributes)."""
    return nbformat.read(str(path), as_version=4)


def write_notebook(nb: dict, path: Path) -> None:
    """Write ``nb`` to ``path`` the way Jupyter does (nbformat: indent 1, sorted keys, UTF-8); a cell without
    the id nbformat 4.5 asks for gets a fresh one."""
    nb = nbformat.from_dict(nb)
    if (nb.get("nbformat"), nb.get("nbformat_minor", 0)) >= (4, 5):
        for cell in nb.get("cells", []):
            cell.setdefault("id", nbformat.v4.nbbase.random_cell_id())
    nbformat.write(nb, str(path))


def cell_source(cell: dict) -> str:
    """The cell's source as one string (a list of lines is joined)."""
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def set_source(cell: dict, text: str) -> None:
    """Store ``text`` as the cell's source (nbformat writes it one string per line)."""
    cell["source"] = text


def cell_tags(cell: dict) -> list:
    """The cell's tags (a copy)."""
    return list(cell.get("metadata", {}).get("tags", []))


def code_cells(nb: dict) -> list[dict]:
    """The notebook's code cells, in order."""
    return [c for c in nb["cells"] if c.get("cell_type") == "code"]


def new_code_cell(text: str) -> nbformat.NotebookNode:
    """A fresh code cell holding ``text`` (no outputs)."""
    return nbformat.v4.new_code_cell(text)


def new_markdown_cell(text: str) -> nbformat.NotebookNode:
    """A fresh markdown cell holding ``text``."""
    return nbformat.v4.new_markdown_cell(text)


def strip_outputs(nb: dict) -> dict:
    """Clear outputs, execution counts and saved widget state (in place); returns ``nb``."""
    for cell in nb["cells"]:
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
            md = cell.get("metadata", {})
            md.pop("execution", None)
    nb.get("metadata", {}).pop("widgets", None)
    return nb
