"""The layer contract of cnet_lib, checked on every import of every module, deferred ones included.

Layers, lowest first (README, "The library"): ``core`` (numerics and models) < ``runtime`` (devices,
threads, graphs, checkpoints, presets, tables, vocabulary) < the study packages ``pendulum`` and
``images`` < their ``figures`` modules and ``book`` (the book's machinery) < the command lines at the
top (``cnet_lib/<command>.py``).  A module imports only its own layer or lower ones; the two study
packages never import each other; nothing imports a command line; every import of a cnet_lib module
stands at the top of its module (no hidden imports in functions); no module imports another's
private names; display code (IPython, ipywidgets, notebook progress bars) lives only in ``book``,
and plotly only in ``book`` and the ``figures`` modules; the import graph has no cycle.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "cnet_lib"
STUDIES = ("pendulum", "images")
DISPLAY = ("IPython", "ipywidgets", "tqdm.notebook", "tqdm.auto")


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def rank(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1:
        return 1  # the package root re-exports core and runtime names
    top = parts[1]
    if top == "core":
        return 0
    if top == "runtime":
        return 1
    if top in STUDIES:
        return 3 if parts[-1] == "figures" else 2
    if top == "book":
        return 3
    return 4  # a command line: cnet_lib/<command>.py


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _imports(module: str) -> list[tuple[str, str, bool, list]]:
    """``(target module, how it was written, at the top of the module?, names imported)`` for every
    import of ``module`` (cnet_lib targets and third-party ones alike)."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    top_level = set()

    def collect(body):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            top_level.add(id(node))
            for field in ("body", "orelse", "handlers", "finalbody"):
                collect(getattr(node, field, []) or [])

    collect(tree.body)
    package = module if _is_package(module) else module.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(tree):
        at_top = id(node) in top_level
        if isinstance(node, ast.Import):
            out += [(a.name, a.name, at_top, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            names = [a.name for a in node.names]
            submodules = [f"{source}.{n}" for n in names if f"{source}.{n}" in MODULES]
            written = "." * node.level + (node.module or "")
            if submodules:
                out += [(m, written, at_top, []) for m in submodules]
            rest = [n for n in names if f"{source}.{n}" not in MODULES]
            if rest or not submodules:
                out.append((source, written, at_top, rest))
    return out


def _own(target: str) -> bool:
    return target == "cnet_lib" or target.startswith("cnet_lib.")


def _study(module: str):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in STUDIES else None


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_respect_the_layers(module):
    problems = []
    for target, written, at_top, names in _imports(module):
        if not _own(target):
            continue
        if target not in MODULES:
            problems.append(f"imports {target} ({written}), which does not exist")
            continue
        if rank(target) > rank(module):
            problems.append(f"imports {target} (layer {rank(target)}) from layer {rank(module)}")
        if rank(target) == 4 and target != module:
            problems.append(f"imports the command line {target}")
        if _study(target) and _study(module) and _study(target) != _study(module):
            problems.append(f"imports {target}: the study packages never import each other")
        if not at_top:
            problems.append(f"imports {target} inside a function or class: put it at the top of the module")
        private = [n for n in names if n.startswith("_") and n != "__version__"]
        if private:
            problems.append(f"imports private names {private} from {target}: make them public or move the code")
    assert not problems, f"{module}: " + "; ".join(problems)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_display_code_only_in_the_book_layer(module):
    in_book = module.startswith("cnet_lib.book")
    draws = in_book or module.endswith(".figures")
    problems = []
    for target, _, _, _ in _imports(module):
        if not in_book and any(target == d or target.startswith(d + ".") for d in DISPLAY):
            problems.append(f"imports {target}: display code belongs in cnet_lib.book")
        if not draws and (target == "plotly" or target.startswith("plotly.")):
            problems.append(f"imports {target}: figures belong in a study's figures module or in cnet_lib.book")
    assert not problems, f"{module}: " + "; ".join(problems)


def test_the_import_graph_has_no_cycle():
    graph = {m: sorted({t for t, _, _, _ in _imports(m) if _own(t) and t in MODULES and t != m}) for m in MODULES}
    state, stack, cycles = {}, [], []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for t in graph[m]:
            if t.startswith(m + "."):
                continue  # a package importing its own submodules (its __init__) is no cycle
            if state.get(t) == "open":
                cycles.append(stack[stack.index(t):] + [t])
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_contract_sees_what_it_forbids(tmp_path):
    """The checks above are not vacuous: a deferred, upward import is found in a module's AST."""
    global MODULES
    fake = PACKAGE / "core" / "_layer_probe.py"
    assert not fake.exists()
    saved = MODULES
    try:
        fake.write_text("def f():\n    from ..images.training import train\n    from ..runtime.tables import _private\n")
        MODULES = _modules()
        found = _imports("cnet_lib.core._layer_probe")
        assert ("cnet_lib.images.training", "..images.training", False, ["train"]) in found
        with pytest.raises(AssertionError, match="layer 2.*inside a function"):
            test_imports_respect_the_layers("cnet_lib.core._layer_probe")
    finally:
        fake.unlink()
        MODULES = saved
