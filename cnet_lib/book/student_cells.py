"""The cells a student copy changes or adds, on top of removing the solutions (:mod:`.student_copies`):

* MyST roles, which Colab shows raw, become plain text: ``{doc}`how_to_use``` the chapter's title in italics
  (the copies hold no link to the book, whose pages show the solutions), ``{cite}`key``` "Author et al. (year)"
  from ``book/references.bib``, any other role its text;
* above each exercise, a line with its points, estimated minutes, difficulty and learning objective
  (:func:`cnet_lib.book.exercises.catalogue.exercise_line`), and where to write the answer;
* the checks become otter-grader's notebook API: a ``grader = Notebook("<chapter>")`` cell after the setup cell,
  ``passed = grader.check("rk_step")`` for ``passed = check_rk_step(rk_step)``, and a last section that runs
  ``grader.check_all()`` and ``grader.export()`` (the zip to hand in).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Mapping

from .exercise_cells import exercise_pairs, function_signatures, parse_cell
from .exercises.catalogue import exercise_line, info
from .notebook_cells import cell_source, new_code_cell, new_markdown_cell, read_notebook

__all__ = ["roles_to_text", "bib_labels", "page_titles", "exercise_header", "rewrite_checks", "rewrite_check_calls",
           "grader_cell", "hand_in_cells", "student_cells"]

_ROLE_RE = re.compile(r"\{([a-z:]+)\}`([^`]*)`")
_CHECK_RE = re.compile(r"\bcheck_(\w+)\(\s*\1\s*(,\s*hint\s*=\s*\d+\s*)?\)")
_IMPORT_CHECKS_RE = re.compile(r"(?m)^from cnet_lib\.book\.exercises import \(?\s*check_\w+(\s*,\s*check_\w+)*\s*\)?\s*\n?")


def bib_labels(bib: Path) -> dict[str, str]:
    """``{key: "Author (year)"}`` of a BibTeX file (first author's last name, "et al." for three or more)."""
    if not Path(bib).is_file():
        return {}
    out = {}
    for m in re.finditer(r"@\w+\{([^,\s]+),(.*?)\n\}", Path(bib).read_text(encoding="utf-8"), flags=re.S):
        key, body = m.group(1), m.group(2)
        author = re.search(r"author\s*=\s*\{(.*?)\}\s*,?\s*\n", body, flags=re.S)
        year = re.search(r"year\s*=\s*\{?(\d{4})", body)
        names = [a.strip() for a in re.split(r"\s+and\s+", author.group(1))] if author else []
        last = [(n.split(",")[0] if "," in n else n.split()[-1]).strip("{} ") for n in names if n]
        who = (last[0] if len(last) == 1 else f"{last[0]} and {last[1]}" if len(last) == 2
               else f"{last[0]} et al." if last else key)
        out[key] = f"{who} ({year.group(1)})" if year else who
    return out


def page_titles(root: Path, pages) -> dict[str, str]:
    """``{page stem: its '# Title'}`` of the book's pages (notebooks and markdown files)."""
    out = {}
    for entry in pages:
        nb, md = root / f"{entry}.ipynb", root / f"{entry}.md"
        if nb.is_file():
            text = "\n".join(cell_source(c) for c in read_notebook(nb)["cells"] if c.get("cell_type") == "markdown")
        elif md.is_file():
            text = md.read_text(encoding="utf-8")
        else:
            continue
        m = re.search(r"(?m)^#\s+(.+)$", text)
        if m:
            out[Path(entry).name] = m.group(1).strip()
    return out


def roles_to_text(text: str, titles: Mapping[str, str], cites: Mapping[str, str]) -> str:
    """``text`` with every MyST role as plain text (see the module doc)."""
    def role(m: re.Match) -> str:
        kind, body = m.group(1), m.group(2)
        if kind == "doc":
            shown = re.match(r"(.*?)\s*<([^>]+)>$", body)
            if shown:
                return shown.group(1)
            return f"*{titles.get(body.split('/')[-1], body)}*"
        if kind.startswith("cite"):
            return "; ".join(cites.get(k.strip(), k.strip()) for k in body.split(","))
        if kind == "math":
            return f"${body}$"
        shown = re.match(r"(.*?)\s*<([^>]+)>$", body)
        return shown.group(1) if shown else body

    return _ROLE_RE.sub(role, text)


def exercise_header(name: str) -> str:
    """The markdown above an exercise stub in a student copy."""
    return (f"{exercise_line(info(name))}\n\nWrite your answer in the cell below, and only there: the teacher's grader "
            "runs that cell on its own, after the imports of the cells above it, so put any helper function in it too.")


def _without_check_imports(text: str) -> str:
    """``text`` without the ``check_*`` names of its ``from cnet_lib.book.exercises import ...`` statements (a
    statement that imports nothing else goes; one that imports more keeps the rest, e.g. ``student_code``)."""
    try:
        tree = parse_cell(text)
    except SyntaxError:
        return _IMPORT_CHECKS_RE.sub("", text)
    lines = text.split("\n")
    for node in sorted((n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "cnet_lib.book.exercises"),
                       key=lambda n: -n.lineno):
        kept = [a for a in node.names if not a.name.startswith("check_")]
        if len(kept) == len(node.names):
            continue
        new = [f"from cnet_lib.book.exercises import {', '.join(ast.unparse(a) for a in kept)}"] if kept else []
        lines[node.lineno - 1:node.end_lineno] = new
    return "\n".join(lines)


def rewrite_check_calls(text: str) -> str:
    """``text`` (a cell, or prose) with ``grader.check("name"[, hint=k])`` for ``check_name(name[, hint=k])``."""
    return _CHECK_RE.sub(lambda m: f'grader.check("{m.group(1)}"{m.group(2) or ""})', text)


def rewrite_checks(text: str) -> str:
    """A check cell with ``grader.check("name")`` for ``check_name(name)`` and the chapter's import of the check
    gone (the other names of that import kept)."""
    return rewrite_check_calls(_without_check_imports(text)).lstrip("\n")


def grader_cell(chapter: str):
    """The cell that creates the copy's grader, after the setup cell."""
    return new_code_cell("# Your public checks and your submission (otter-grader's notebook API: grader.check, grader.export)\n"
                         "from cnet_lib.book.exercises import Notebook\n\n"
                         f'grader = Notebook("{chapter}")')


def hand_in_cells() -> list:
    """The last section of a student copy: every public check, then the submission zip."""
    text = ("## Hand in your work\n\nRun the cell below: it runs every public check of this chapter once more and writes "
            "your submission, a `.zip` holding this notebook as it is now (on Colab your browser downloads it). Hand in "
            "that file as your teacher asked. The public checks only help you: your grade comes from the teacher's "
            "tests, on other cases, run on the exercise cells of the notebook you hand in.")
    return [new_markdown_cell(text), new_code_cell("grader.check_all()\nsubmission = grader.export()")]


def student_cells(cells: list, chapter: str, setup_index: int) -> list:
    """``cells`` (solutions already removed) with the exercise headers, the grader cell after code cell
    ``setup_index`` (the setup cell), the checks rewritten and the hand-in section."""
    stubs = {i for i, _ in exercise_pairs({"cells": cells})}
    out = []
    for i, cell in enumerate(cells):
        if i in stubs:
            for name in function_signatures(cell_source(cell)):
                out.append(new_markdown_cell(exercise_header(name)))
        elif cell.get("cell_type") == "code" and _CHECK_RE.search(cell_source(cell)):
            cell["source"] = rewrite_checks(cell_source(cell))
        out.append(cell)
        if i == setup_index:
            out.append(grader_cell(chapter))
    return out + hand_in_cells()
