"""Check and fix the book's notebook conventions (see ``book/CONTRIBUTING.md``).

    python -m cnet_lib.notebook_tools check            # every notebook listed in _toc.yml
    python -m cnet_lib.notebook_tools fix book/*.ipynb # rewrite badge, first cells, solution cells' frame; strip outputs

A chapter notebook must have

1. a first markdown cell with its ``# Title`` and the "Open in Colab" badge
   (:func:`cnet_lib.book.project.colab_badge`);
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

Notebooks are read and written as plain JSON (nbformat 4), so this needs no extra package;
reading ``_toc.yml`` needs PyYAML (installed with jupyter-book).
"""
from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path
from typing import Iterator, Optional

from .project import SETUP_CELL_SOURCE, colab_badge, colab_cell_source

__all__ = [
    "find_root",
    "toc_files",
    "toc_notebooks",
    "read_notebook",
    "write_notebook",
    "cell_source",
    "set_source",
    "BADGE_RE",
    "cell_tags",
    "code_cells",
    "exercise_pairs",
    "function_signatures",
    "check_notebook",
    "fix_notebook",
    "strip_outputs",
    "smoke_env",
    "main",
]

EXERCISE_TAG = "exercise"
SOLUTION_TAG = "solution"
HIDE_TAG = "hide-input"
SOLUTION_TITLE = "# @title Solution: try the exercise first"  # Colab shows this line and hides the code
SOLUTION_DECORATOR = "solution"
BADGE_RE = re.compile(r"\[!\[Open In Colab\]\([^)]*\)\]\([^)]*\)")


# ----------------------------------------------------------------------------- locating
def find_root(start: Optional[Path] = None) -> Path:
    """The repository root: the nearest folder (upwards) holding ``_toc.yml``."""
    here = Path(start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / "_toc.yml").is_file():
            return d
    raise FileNotFoundError(f"no _toc.yml in {here} or above; run from the repository or pass --root")


def _walk_toc(node) -> Iterator[str]:
    if isinstance(node, dict):
        for key in ("root", "file"):
            if isinstance(node.get(key), str):
                yield node[key]
        for key in ("parts", "chapters", "sections"):
            for child in node.get(key) or []:
                yield from _walk_toc(child)
    elif isinstance(node, list):
        for child in node:
            yield from _walk_toc(child)


def toc_files(root: Optional[Path] = None) -> list[str]:
    """Every ``file``/``root`` entry of ``_toc.yml`` (without suffix), in order."""
    import yaml

    root = find_root(root)
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    return list(_walk_toc(toc))


def toc_notebooks(root: Optional[Path] = None) -> list[Path]:
    """The notebooks listed in ``_toc.yml``, in book order."""
    root = find_root(root)
    out = []
    for entry in toc_files(root):
        p = root / entry
        nb = p if p.suffix == ".ipynb" else p.with_suffix(".ipynb")
        if nb.is_file():
            out.append(nb)
    return out


# ----------------------------------------------------------------------------- notebook JSON
def read_notebook(path: Path) -> dict:
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    if nb.get("nbformat") != 4:
        raise ValueError(f"{path}: only nbformat 4 notebooks are supported")
    return nb


def write_notebook(nb: dict, path: Path) -> None:
    # the layout Jupyter itself writes (nbformat): indent 1, sorted keys, UTF-8
    Path(path).write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def cell_source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def set_source(cell: dict, text: str) -> None:
    """Store ``text`` as the cell's source, one string per line (the layout Jupyter writes)."""
    lines = text.splitlines(keepends=True)
    cell["source"] = lines


def cell_tags(cell: dict) -> list:
    return list(cell.get("metadata", {}).get("tags", []))


def code_cells(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if c.get("cell_type") == "code"]


def _new_code_cell(text: str) -> dict:
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": []}
    set_source(cell, text)
    return cell


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


# ----------------------------------------------------------------------------- exercises
def _parse(source: str) -> ast.Module:
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        source = TransformerManager().transform_cell(source)
    except ImportError:  # pragma: no cover - IPython is there wherever notebooks run
        pass
    return ast.parse(source)


def function_signatures(source: str) -> dict[str, str]:
    """``{name: "(args) -> returns"}`` for every top-level function defined in ``source``."""
    out = {}
    for node in _parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            ret = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
            out[node.name] = f"({ast.unparse(node.args)}){ret}"
    return out


def _stub_problems(source: str) -> list[str]:
    """Functions of ``source`` whose body is more than a docstring and ``raise NotImplementedError(...)``."""
    bad = []
    for node in _parse(source).body:
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


def _undecorated(source: str) -> list[str]:
    """Top-level functions of a solution cell that lack the ``@solution`` decorator."""
    out = []
    for node in _parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names = {d.id if isinstance(d, ast.Name) else getattr(d, "attr", None) for d in node.decorator_list}
            if SOLUTION_DECORATOR not in names:
                out.append(node.name)
    return out


def _solution_cell_problems(cell: dict, index: int) -> list[str]:
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
    for name in _undecorated(cell_source(cell)):
        problems.append(f"solution cell {index}: decorate {name} with @solution (from cnet_lib.book.exercises import solution), "
                        "so that running all cells keeps a reader's own function")
    return problems


def _raises_not_implemented(source: str) -> bool:
    for node in ast.walk(_parse(source)):
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


# ----------------------------------------------------------------------------- check / fix
def check_notebook(path: Path, require_exercise: bool = True) -> list[str]:
    """The convention problems of one notebook (an empty list when it follows them all)."""
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
        if not _raises_not_implemented(stub):
            problems.append(f"exercise cell {stub_i} does not raise NotImplementedError")
        for name in _stub_problems(stub):
            problems.append(f"exercise cell {stub_i}: the body of {name} must be only a docstring and "
                            "`raise NotImplementedError(\"...\")` (so that a solution cell can tell an unfinished stub)")
        if sol_i is None:
            problems.append(f"exercise cell {stub_i} is not followed by a code cell tagged 'solution'")
            continue
        problems += _solution_cell_problems(cells[sol_i], sol_i)
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


def fix_notebook(path: Path) -> bool:
    """Rewrite badge, Colab cell, setup cell, solution cells' tags, title line and metadata; strip
    outputs.  True if changed."""
    path = Path(path)
    before = path.read_text(encoding="utf-8")
    nb = read_notebook(path)
    cells = nb["cells"]
    badge = colab_badge(path.name)

    if not cells or cells[0].get("cell_type") != "markdown":
        title = path.stem.replace("_", " ").capitalize()
        cells.insert(0, {"cell_type": "markdown", "metadata": {}, "source": []})
        set_source(cells[0], f"# {title}\n\n{badge}")
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

    code_idx = [i for i, c in enumerate(cells) if c.get("cell_type") == "code"]
    colab = colab_cell_source()
    if code_idx and "google.colab" in cell_source(cells[code_idx[0]]):
        set_source(cells[code_idx[0]], colab)
    else:
        at = code_idx[0] if code_idx else len(cells)
        cells.insert(at, _new_code_cell(colab))
    code_idx = [i for i, c in enumerate(cells) if c.get("cell_type") == "code"]
    if len(code_idx) > 1 and "setup(" in cell_source(cells[code_idx[1]]) and ("cnet_lib.book" in cell_source(cells[code_idx[1]]) or "cnet_lib.notebook" in cell_source(cells[code_idx[1]])):
        set_source(cells[code_idx[1]], SETUP_CELL_SOURCE)
    else:
        cells.insert(code_idx[0] + 1, _new_code_cell(SETUP_CELL_SOURCE))

    for c in cells:
        if SOLUTION_TAG in cell_tags(c):
            _fix_solution_cell(c)
    strip_outputs(nb)
    write_notebook(nb, path)
    return path.read_text(encoding="utf-8") != before


def main(argv: Optional[list] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cnet_lib.notebook_tools", description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["check", "fix"])
    ap.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook listed in _toc.yml")
    ap.add_argument("--root", type=Path, default=None, help="repository root (default: found from the cwd)")
    args = ap.parse_args(argv)
    try:
        notebooks = args.notebooks or toc_notebooks(args.root)
    except FileNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if not notebooks:
        print("no notebooks given and none listed in _toc.yml")
        return 1
    bad = 0
    for nb in notebooks:
        if args.command == "fix":
            changed = fix_notebook(nb)
            print(f"{'fixed  ' if changed else 'ok     '} {nb}")
        problems = check_notebook(nb)
        if problems:
            bad += 1
            print(f"PROBLEMS {nb}:")
            for p in problems:
                print(f"  - {p}")
        elif args.command == "check":
            print(f"ok       {nb}")
    return 1 if bad else 0


def smoke_env(root: Optional[Path] = None, base: Optional[dict] = None) -> dict:
    """Environment for running the book in CI: ``CNET_PRESET=smoke``; ``CNET_DATA_DIR``
    defaults to the offline data copy ``<root>/../shared/data`` when that folder exists."""
    import os

    env = dict(os.environ if base is None else base)
    env["CNET_PRESET"] = "smoke"
    if not env.get("CNET_DATA_DIR"):
        shared = find_root(root).parent / "shared" / "data"
        if shared.is_dir():
            env["CNET_DATA_DIR"] = str(shared)
    return env
