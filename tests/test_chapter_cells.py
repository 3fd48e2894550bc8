"""Every chapter holds prose and calls (issue 12) and each figure shows once (issue 11).

For every notebook of ``_toc.yml``, read as code without running it: code cells are short (exercise and solution cells aside); no cell formats a table by hand (an
f-string printed in a loop, or an f-string field with a width); no check cell leaves its result as the
cell's value (the static book would show a stray ``True``); no colour is typed (colours come from
``cnet_lib.runtime.rich_text``); and a live app's static fallback is not a figure that an earlier
cell already displays.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from IPython.core.inputtransformer2 import TransformerManager

from cnet_lib.book.notebook_cells import cell_source, cell_tags, read_notebook
from cnet_lib.book.project import toc_notebooks

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = tuple(nb.stem for nb in toc_notebooks(ROOT))
MAX_LINES = 13


def _code_cells(name: str) -> list[tuple[str, str]]:
    """``(cell id, source)`` of every code cell that is not an exercise or a solution, as Python (magics
    turned into calls, as IPython runs them)."""
    nb = read_notebook(ROOT / "book" / f"{name}.ipynb")
    out = []
    for cell in nb["cells"]:
        if cell.get("cell_type") == "code" and not {"exercise", "solution"} & set(cell_tags(cell)):
            out.append((cell.get("id"), TransformerManager().transform_cell(cell_source(cell))))
    return out


def _width(spec: ast.AST) -> bool:
    """Whether an f-string format spec pads to a width (``:>12``, ``:<6``, ``:9.1e``), as tables do."""
    text = "".join(v.value for v in ast.walk(spec) if isinstance(v, ast.Constant) and isinstance(v.value, str))
    return re.match(r"^(.?[<>^=])?[+\- ]?#?0?\d", text) is not None


@pytest.mark.parametrize("name", CHAPTERS)
def test_code_cells_are_short_calls(name):
    long = [(cid, len(src.splitlines())) for cid, src in _code_cells(name) if len(src.splitlines()) > MAX_LINES]
    assert not long, f"{name}: code cells longer than {MAX_LINES} lines (move the code into cnet_lib): {long}"


@pytest.mark.parametrize("name", CHAPTERS)
def test_no_table_is_formatted_by_hand(name):
    problems = []
    for cid, src in _code_cells(name):
        tree = ast.parse(src)
        for loop in (n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While))):
            prints = [c for c in ast.walk(loop) if isinstance(c, ast.Call) and getattr(c.func, "id", None) == "print"]
            if any(isinstance(a, ast.JoinedStr) for c in prints for a in ast.walk(c)):
                problems.append(f"{cid}: an f-string printed in a loop, line by line")
        for field in (n for n in ast.walk(tree) if isinstance(n, ast.FormattedValue)):
            if field.format_spec is not None and _width(field.format_spec):
                problems.append(f"{cid}: padded f-string field {ast.unparse(field)}")
    assert not problems, f"{name}: tables belong in cnet_lib (pendulum.tables, book.demos):\n" + "\n".join(problems)


@pytest.mark.parametrize("name", CHAPTERS)
def test_check_cells_show_no_bare_value(name):
    bare = []
    for cid, src in _code_cells(name):
        body = ast.parse(src).body
        last = body[-1] if body else None
        if src.rstrip().endswith(";"):  # IPython shows no value for a line ending in ;
            continue
        if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call):
            func = last.value.func
            if (getattr(func, "id", None) or getattr(func, "attr", "")).startswith("check_"):
                bare.append(cid)
    assert not bare, f"{name}: a check's True/False would show as an output; assign it (passed = check_...): {bare}"


@pytest.mark.parametrize("name", CHAPTERS)
def test_no_typed_colours(name):
    typed = [cid for cid, src in _code_cells(name) if re.search(r"#[0-9a-fA-F]{3,8}\b|color\s*=", src)]
    assert not typed, f"{name}: colours come from cnet_lib.runtime.rich_text, not the chapter: {typed}"


@pytest.mark.parametrize("name", CHAPTERS)
def test_a_live_apps_fallback_is_not_shown_twice(name):
    shown, problems = set(), []
    for cid, src in _code_cells(name):
        body = ast.parse(src).body
        for call in (n for n in ast.walk(ast.Module(body=body, type_ignores=[])) if isinstance(n, ast.Call)):
            for kw in call.keywords:
                if kw.arg == "static_fallback_fig" and isinstance(kw.value, ast.Name) and kw.value.id in shown:
                    problems.append(f"{cid}: {kw.value.id} is displayed by an earlier cell and again as the app's fallback")
        if body and isinstance(body[-1], ast.Expr) and isinstance(body[-1].value, ast.Name):
            shown.add(body[-1].value.id)
    assert not problems, f"{name}: " + "; ".join(problems)
