"""The exercise cells of a chapter, read from their source: which functions a cell defines (and their
signatures), whether a stub is only a docstring and ``raise NotImplementedError(...)``, whether a
solution cell follows the book's frame, and which solution follows which exercise."""
from __future__ import annotations

import ast
from typing import Optional

from .cell_magics import cell_python
from .notebook_cells import (EXERCISE_TAG, HIDE_TAG, SOLUTION_DECORATOR, SOLUTION_TAG, SOLUTION_TITLE, cell_source,
                             cell_tags)

__all__ = ["cell_python", "parse_cell", "function_signatures", "stub_problems", "undecorated", "solution_cell_problems",
           "raises_not_implemented", "exercise_pairs"]


def parse_cell(source: str) -> ast.Module:
    """The AST of a cell's source, its IPython magics (``%pip``, ``!cmd``) turned into Python first."""
    return ast.parse(cell_python(source))


def function_signatures(source: str) -> dict[str, str]:
    """``{name: "(args) -> returns"}`` for every top-level function defined in ``source``."""
    out = {}
    for node in parse_cell(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            ret = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
            out[node.name] = f"({ast.unparse(node.args)}){ret}"
    return out


def stub_problems(source: str) -> list[str]:
    """Functions of ``source`` whose body is more than a docstring and ``raise NotImplementedError(...)``."""
    bad = []
    for node in parse_cell(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = list(node.body)
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
                body = body[1:]  # the docstring
            ok = len(body) == 1 and isinstance(body[0], ast.Raise) and body[0].exc is not None
            if ok:
                exc = body[0].exc
                exc = exc.func if isinstance(exc, ast.Call) else exc
                names = {n.id for n in ast.walk(body[0]) if isinstance(n, ast.Name)}
                ok = isinstance(exc, ast.Name) and exc.id == "NotImplementedError" and names == {"NotImplementedError"}
            if not ok:
                bad.append(node.name)
    return bad


def undecorated(source: str) -> list[str]:
    """Top-level functions of a solution cell that lack the ``@solution`` decorator."""
    out = []
    for node in parse_cell(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names = {d.id if isinstance(d, ast.Name) else getattr(d, "attr", None) for d in node.decorator_list}
            if SOLUTION_DECORATOR not in names:
                out.append(node.name)
    return out


def solution_cell_problems(cell: dict, index: int) -> list[str]:
    """How a solution cell departs from the convention (tags, title line, collapsed metadata, decorator)."""
    problems = []
    md = cell.get("metadata", {})
    if HIDE_TAG not in cell_tags(cell):
        problems.append(f"solution cell {index} lacks the tag 'hide-input' (the book shows solutions collapsed)")
    if not cell_source(cell).startswith("# @title Solution"):
        problems.append(f"solution cell {index} must start with the line {SOLUTION_TITLE!r} (Colab shows it instead of the code)")
    if md.get("cellView") != "form" or not (md.get("jupyter") or {}).get("source_hidden"):
        problems.append(f"solution cell {index} must be collapsed in Colab and Jupyter (metadata cellView: form, "
                        "jupyter.source_hidden: true)")
    for name in undecorated(cell_source(cell)):
        problems.append(f"solution cell {index}: decorate {name} with @solution (from cnet_lib.book.exercises import solution), "
                        "so that running all cells keeps a reader's own function")
    return problems


def raises_not_implemented(source: str) -> bool:
    """Whether ``source`` raises ``NotImplementedError`` anywhere."""
    for node in ast.walk(parse_cell(source)):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id == "NotImplementedError":
                return True
    return False


def exercise_pairs(nb: dict) -> list[tuple[int, Optional[int]]]:
    """``(stub index, solution index or None)`` for each ``exercise`` cell (indices into cells).

    The solution is the next code cell after the stub if it is tagged ``solution``.
    """
    cells = nb["cells"]
    pairs = []
    for i, cell in enumerate(cells):
        if cell.get("cell_type") == "code" and EXERCISE_TAG in cell_tags(cell):
            sol = next((j for j in range(i + 1, len(cells)) if cells[j].get("cell_type") == "code"), None)
            pairs.append((i, sol if sol is not None and SOLUTION_TAG in cell_tags(cells[sol]) else None))
    return pairs
