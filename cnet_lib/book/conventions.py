"""The book's notebook conventions (see ``book/CONTRIBUTING.md``), checked and fixed:
``python -m cnet_lib notebook_tools check`` / ``fix`` (:mod:`cnet_lib.cli.notebook_tools`).

A chapter notebook must have

1. a first markdown cell with its ``# Title``, the "Open in Colab" badge
   (:func:`cnet_lib.book.project.colab_badge`) and, right after it, the chapter's card: what it assumes,
   what the reader will learn, how long it takes to read and to run
   (:func:`cnet_lib.book.chapter_cards.card_markdown`, from one table);
2. as first code cell exactly :func:`cnet_lib.book.project.colab_cell_source`;
3. as second code cell exactly :data:`cnet_lib.book.project.SETUP_CELL_SOURCE`;
4. no outputs, execution counts or widget state (outputs are stripped in git);
5. at least one exercise: a code cell tagged ``exercise`` (a stub whose function body is only
   a docstring and ``raise NotImplementedError(...)``), followed by its solution cell: tagged
   ``solution`` and ``hide-input`` (collapsed in the book), starting with ``# @title Solution``
   and with the metadata ``cellView: form`` (collapsed in Colab) and ``jupyter.source_hidden``
   (collapsed in JupyterLab), defining the same functions with the same signatures, each
   decorated with ``@solution`` (:func:`cnet_lib.book.exercises.solution`: "Run all" never
   replaces a reader's own function with the solution).
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Optional

from .chapter_cards import Card, card_markdown, with_card
from .exercise_cells import (exercise_pairs, function_signatures, raises_not_implemented, solution_cell_problems,
                             stub_problems)
from .notebook_cells import (BADGE_RE, HIDE_TAG, SOLUTION_TAG, SOLUTION_TITLE, cell_source, cell_tags, code_cells,
                             new_code_cell, new_markdown_cell, read_notebook, set_source, strip_outputs, write_notebook)
from .project import SETUP_CELL_SOURCE, colab_badge, colab_cell_source

__all__ = ["check_notebook", "fix_notebook"]


def check_notebook(path: Path, require_exercise: bool = True, cards: Optional[Mapping[str, Card]] = None) -> list[str]:
    """The convention problems of one notebook (an empty list when it follows them all); ``cards``: the
    chapter cards (default :data:`cnet_lib.book.chapter_cards.CARDS`)."""
    path = Path(path)
    nb = read_notebook(path)
    problems = []
    cells = nb["cells"]
    md = next((c for c in cells if c.get("cell_type") == "markdown"), None)
    badge = colab_badge(path.name)
    if md is None or cells.index(md) != 0:
        problems.append("the first cell must be markdown: the chapter's '# Title' and the Colab badge")
    else:
        text = cell_source(md)
        if not text.lstrip().startswith("# "):
            problems.append("the first markdown cell must start with the chapter's '# Title'")
        if badge not in text:
            problems.append(f"the first markdown cell lacks the Colab badge {badge}")
        else:
            problems += _card_problems(path, nb, text, badge, cards)
    code = code_cells(nb)
    if not code or cell_source(code[0]).strip() != colab_cell_source().strip():
        problems.append("the first code cell is not the canonical Colab cell (cnet_lib.book.project.colab_cell_source())")
    if len(code) < 2 or cell_source(code[1]).strip() != SETUP_CELL_SOURCE.strip():
        problems.append(f"the second code cell must be exactly:\n{SETUP_CELL_SOURCE}")
    dirty = [i for i, c in enumerate(cells) if c.get("cell_type") == "code" and (c.get("outputs") or c.get("execution_count") is not None)]
    if dirty:
        problems.append(f"outputs are not stripped (cells {dirty[:5]}{'...' if len(dirty) > 5 else ''})")
    if "widgets" in nb.get("metadata", {}):
        problems.append("saved widget state in the notebook metadata (strip outputs)")
    pairs = exercise_pairs(nb)
    if require_exercise and not pairs:
        problems.append("no exercise: add a stub cell tagged 'exercise' followed by a solution cell tagged 'solution', 'hide-input'")
    for stub_i, sol_i in pairs:
        stub = cell_source(cells[stub_i])
        if not raises_not_implemented(stub):
            problems.append(f"exercise cell {stub_i} does not raise NotImplementedError")
        for name in stub_problems(stub):
            problems.append(f"exercise cell {stub_i}: the body of {name} must be only a docstring and "
                            "`raise NotImplementedError(\"...\")` (so that a solution cell can tell an unfinished stub)")
        if sol_i is None:
            problems.append(f"exercise cell {stub_i} is not followed by a code cell tagged 'solution'")
            continue
        problems += solution_cell_problems(cells[sol_i], sol_i)
        s_stub, s_sol = function_signatures(stub), function_signatures(cell_source(cells[sol_i]))
        if not s_stub:
            problems.append(f"exercise cell {stub_i} defines no function")
        for name, sig in s_stub.items():
            if name not in s_sol:
                problems.append(f"solution cell {sol_i} does not define {name}{sig}")
            elif s_sol[name] != sig:
                problems.append(f"signature mismatch for {name}: stub {name}{sig} vs solution {name}{s_sol[name]}")
    orphans = [
        i for i, c in enumerate(cells)
        if SOLUTION_TAG in cell_tags(c) and i not in {s for _, s in pairs}
    ]
    for i in orphans:
        problems.append(f"solution cell {i} does not follow an 'exercise' cell")
    return problems


def _card_problems(path: Path, nb: dict, text: str, badge: str, cards: Optional[Mapping[str, Card]]) -> list[str]:
    """A missing or stale chapter card (it must follow the badge in the first cell)."""
    try:
        card = card_markdown(path.stem, nb, cards)
    except KeyError as err:
        return [err.args[0]]
    if f"{badge}\n\n{card}\n" not in text + "\n":
        return ["the chapter card after the Colab badge is missing or out of date (what the chapter assumes, teaches "
                "and takes to read and run): run `python -m cnet_lib notebook_tools fix` on it"]
    return []


def _fix_solution_cell(cell: dict) -> None:
    """Tag ``hide-input``, the ``# @title Solution`` line and the collapsed metadata (the decorator is the author's)."""
    md = cell.setdefault("metadata", {})
    if HIDE_TAG not in cell_tags(cell):
        md.setdefault("tags", []).append(HIDE_TAG)
    md["cellView"] = "form"
    md.setdefault("jupyter", {})["source_hidden"] = True
    text = cell_source(cell)
    if not text.startswith("# @title Solution"):
        set_source(cell, f"{SOLUTION_TITLE}\n{text}")


def fix_notebook(path: Path, cards: Optional[Mapping[str, Card]] = None) -> bool:
    """Rewrite badge, chapter card (when the chapter has one in ``cards``, default
    :data:`cnet_lib.book.chapter_cards.CARDS`), Colab cell, setup cell, solution cells' tags, title line and
    metadata; strip outputs.  True if changed."""
    path = Path(path)
    before = path.read_text(encoding="utf-8")
    nb = read_notebook(path)
    cells = nb["cells"]
    badge = colab_badge(path.name)

    if not cells or cells[0].get("cell_type") != "markdown":
        title = path.stem.replace("_", " ").capitalize()
        cells.insert(0, new_markdown_cell(f"# {title}\n\n{badge}"))
    else:
        text = cell_source(cells[0])
        if BADGE_RE.search(text):
            text = BADGE_RE.sub(lambda _m: badge, text, count=1)
        else:
            lines = text.split("\n")
            head = next((k for k, ln in enumerate(lines) if ln.startswith("# ")), None)
            at = 1 if head is None else head + 1
            lines[at:at] = ["", badge]
            text = "\n".join(lines)
        set_source(cells[0], text)
    try:
        set_source(cells[0], with_card(cell_source(cells[0]), badge, card_markdown(path.stem, nb, cards)))
    except KeyError:
        pass  # no card for this chapter: check_notebook says what to add

    code_idx = [i for i, c in enumerate(cells) if c.get("cell_type") == "code"]
    colab = colab_cell_source()
    if code_idx and "google.colab" in cell_source(cells[code_idx[0]]):
        set_source(cells[code_idx[0]], colab)
    else:
        at = code_idx[0] if code_idx else len(cells)
        cells.insert(at, new_code_cell(colab))
    code_idx = [i for i, c in enumerate(cells) if c.get("cell_type") == "code"]
    if len(code_idx) > 1 and "setup(" in cell_source(cells[code_idx[1]]) and ("cnet_lib.book" in cell_source(cells[code_idx[1]]) or "cnet_lib.notebook" in cell_source(cells[code_idx[1]])):
        set_source(cells[code_idx[1]], SETUP_CELL_SOURCE)
    else:
        cells.insert(code_idx[0] + 1, new_code_cell(SETUP_CELL_SOURCE))

    for c in cells:
        if SOLUTION_TAG in cell_tags(c):
            _fix_solution_cell(c)
    strip_outputs(nb)
    write_notebook(nb, path)
    return path.read_text(encoding="utf-8") != before
