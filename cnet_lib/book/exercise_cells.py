"""The exercise cells of a chapter, read from their source: which functions a cell defines (and their
signatures), whether a stub is only a docstring and ``raise NotImplementedError(...)``, whether a
solution cell follows the book's frame, and which solution follows which exercise.

Also here: a cell's source as the Python that IPython runs (:func:`cell_python`).
"""
from __future__ import annotations

import ast
import re
from typing import Optional

from .notebook_cells import (EXERCISE_TAG, HIDE_TAG, SOLUTION_DECORATOR, SOLUTION_TAG, SOLUTION_TITLE, cell_source,
    cell_tags)

__all__ = ["cell_python", "parse_cell", "function_signatures", "stub_problems", "undecorated",
           "solution_cell_problems", "raises_not_implemented", "exercise_pairs", "python_and_tree", "parses"]


# A notebook cell's source as the Python that IPython runs, in time linear in its size (:func:`cell_python`).
#
# IPython's own :class:`~IPython.core.inputtransformer2.TransformerManager` re-reads the whole cell once per magic
# it rewrites, up to 500 times, and then gives up with an error: a cell of 1,000 ``!ls`` lines (4 kB) takes it
# 8 s, one of 4,000 ``x = !ls`` lines 60 s, and neither comes out as Python.  Here a cell that is Python already is
# returned as it is (IPython leaves Python alone); any other goes through IPython's line-based clean-ups (leading
# indentation, ``>>>`` and ``In [1]:`` prompts, a ``%%`` cell magic), each one pass over the lines, and then every
# line that is an IPython escape becomes the call IPython makes of it, in one pass:
#
# * ``!cmd`` -> ``get_ipython().system('cmd')``, ``!!cmd`` -> ``get_ipython().getoutput('cmd')``;
# * ``%magic args`` -> ``get_ipython().run_line_magic('magic', 'args')``;
# * ``x = !cmd`` and ``x = %magic args`` -> ``x = get_ipython().getoutput('cmd')`` / ``...run_line_magic(...)``;
# * ``x?``, ``?x``, ``x??`` -> ``get_ipython().run_line_magic('pinfo', 'x')`` (``pinfo2`` for ``??``).
#
# A line inside a string that spans several lines is never touched when the cell parses as it is; a cell that
# needs escapes rewritten and holds such a string is read line by line (its string may change, as it would not in
# IPython; the result is only ever used where magics do nothing).

_ESCAPE = re.compile(r"^(?P<indent>[ \t]*)(?:(?P<target>[\w.\[\], ]+?)\s*=\s*)?(?P<kind>!!|!|%(?!%))(?P<rest>.*?)\s*$")
_HELP = re.compile(r"^(?P<indent>[ \t]*)(?:(?P<pre>\?{1,2})(?P<name>[\w.*]+)|(?P<name2>[\w.*]+)(?P<post>\?{1,2}))\s*$")


def parses(source: str) -> bool:
    """Whether ``source`` is Python (anything the parser refuses, however it refuses, is not)."""
    try:
        ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False
    return True


def _call(kind: str, rest: str) -> str:
    if kind == "!":
        return f"get_ipython().system({rest!r})"
    if kind == "!!":
        return f"get_ipython().getoutput({rest!r})"
    magic, _, args = rest.partition(" ")
    return f"get_ipython().run_line_magic({magic!r}, {args.strip()!r})"


def _escape_line(line: str) -> str:
    """One line with its IPython escape rewritten (the line as it is when it has none)."""
    body = line.rstrip("\r\n")
    end = line[len(body):]
    m = _HELP.match(body)
    if m:
        marks = m.group("pre") or m.group("post")
        name = m.group("name") or m.group("name2")
        return f"{m.group('indent')}get_ipython().run_line_magic({'pinfo2' if marks == '??' else 'pinfo'!r}, {name!r}){end}"
    m = _ESCAPE.match(body)
    if not m or (m.group("target") and m.group("kind") == "!!"):
        return line
    call = _call("!!" if m.group("target") and m.group("kind") == "!" else m.group("kind"), m.group("rest"))
    target = f"{m.group('target').strip()} = " if m.group("target") else ""
    return f"{m.group('indent')}{target}{call}{end}"


def _ipython_cleanups(source: str) -> str:
    """IPython's line-based clean-ups and cell magics (each one pass over the lines); the source as it is
    without IPython."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # pragma: no cover - IPython is there wherever notebooks run
        return source
    manager = TransformerManager()
    lines = (source if source.endswith("\n") else source + "\n").splitlines(keepends=True)
    for transform in list(manager.cleanup_transforms) + list(manager.line_transforms):
        lines = transform(lines)
    return "".join(lines)


def _parsed(source: str):
    """``source`` parsed, or the parser's refusal (an exception), however it refuses."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as err:
        return err


def python_and_tree(source: str) -> tuple[str, object]:
    """``(the cell as Python, its tree)``: :func:`cell_python` and the tree it parses to, or the exception with
    which the parser refused it (each source parsed at most twice: as it is, and after its escapes)."""
    tree = _parsed(source)
    if isinstance(tree, ast.Module):
        return source, tree
    cleaned = _ipython_cleanups(source)
    if not cleaned.lstrip().startswith("get_ipython().run_cell_magic("):
        cleaned = "".join(_escape_line(line) for line in cleaned.splitlines(keepends=True))
    return cleaned, _parsed(cleaned)


def cell_python(source: str) -> str:
    """A cell's source as Python: its IPython magics (``%pip``, ``!cmd``) turned into the calls IPython makes of
    them (see the module doc), in time linear in the source's size."""
    return python_and_tree(source)[0]


# ---------------------------------------------------------------------- the module's own part (its docstring above)

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
