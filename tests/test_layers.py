"""The layer contract of cnet_lib, read from its folder tree and checked on every import, deferred ones included.

A module's layer is its top folder's place in :data:`LAYERS` (lowest first; README, "The library"):
``core`` (numerics and models) < ``runtime`` (settings, devices, files, presets, rows, vocabulary) < the
study packages ``pendulum`` and ``images`` < ``draw`` (figures, live apps, plotting helpers) < ``book``
(the book's machinery) < ``teacher`` (the answer key and the grader, absent from a student's install) < ``cli``
(the command lines).  A module at the package root
(``cnet_lib/__init__.py``, ``cnet_lib/__main__.py``) is an entry point above every folder.  No module
imports a higher layer, nor a sibling folder of its own layer (the two studies never import each other);
every import of a cnet_lib module stands at the top of its module (no hidden imports in functions); no
module imports another's private names; display code (IPython, ipywidgets, notebook progress bars) and
plotly live only in ``draw`` and ``book``; the import graph has no cycle.  There is no per-module rank
and no exemption: a new folder is placed by adding it to :data:`LAYERS`.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "cnet_lib"
LAYERS = (("core",), ("runtime",), ("pendulum", "images"), ("draw",), ("book",), ("teacher",), ("cli",))
"""The top folders of cnet_lib, lowest layer first; folders in one tuple form one layer."""
DRAWING = ("draw", "book")
"""The folders that may import display libraries and plotly."""
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


def folder(module: str) -> str:
    """The top folder of ``module`` under cnet_lib ('' for a module at the package root)."""
    path = MODULES[module].relative_to(PACKAGE)
    return path.parts[0] if len(path.parts) > 1 else ""


def layer(module: str) -> int:
    """The index in :data:`LAYERS` of the module's top folder; a module at the package root sits above them all."""
    top = folder(module)
    if top == "":
        return len(LAYERS)
    for i, folders in enumerate(LAYERS):
        if top in folders:
            return i
    raise AssertionError(f"{module}: its folder cnet_lib/{top}/ is in no layer: add it to LAYERS in tests/test_layers.py "
                         "and to the README's picture of the layers")


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


def test_every_folder_is_a_layer():
    folders = sorted({folder(m) for m in MODULES} - {""})
    placed = sorted(f for layer_folders in LAYERS for f in layer_folders)
    assert folders == placed, f"folders {folders} but LAYERS places {placed}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_respect_the_layers(module):
    problems = []
    for target, written, at_top, names in _imports(module):
        if not _own(target):
            continue
        if target not in MODULES:
            problems.append(f"imports {target} ({written}), which does not exist")
            continue
        if layer(target) > layer(module):
            problems.append(f"imports {target} (layer {layer(target)}, cnet_lib/{folder(target) or ''}) from layer "
                            f"{layer(module)} (cnet_lib/{folder(module)})")
        elif layer(target) == layer(module) and folder(target) != folder(module):
            problems.append(f"imports {target}: the folders of one layer ({', '.join(LAYERS[layer(module)])}) never "
                            "import each other")
        if not at_top:
            problems.append(f"imports {target} inside a function or class: put it at the top of the module")
        private = [n for n in names if n.startswith("_") and n != "__version__"]
        if private:
            problems.append(f"imports private names {private} from {target}: make them public or move the code")
    assert not problems, f"{module}: " + "; ".join(problems)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_display_code_only_in_the_drawing_layers(module):
    draws = folder(module) in DRAWING
    problems = []
    for target, _, _, _ in _imports(module):
        if draws:
            break
        if any(target == d or target.startswith(d + ".") for d in DISPLAY):
            problems.append(f"imports {target}: display code belongs in cnet_lib.draw or cnet_lib.book")
        if target == "plotly" or target.startswith("plotly."):
            problems.append(f"imports {target}: figures belong in cnet_lib.draw")
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


def test_the_contract_sees_what_it_forbids():
    """The checks above are not vacuous: a deferred, upward import, a sibling study's import and a module in a
    folder of no layer are all found from the files alone."""
    global MODULES
    probes = {PACKAGE / "core" / "_layer_probe.py": "def f():\n    from ..images.train_loop import train\n"
                                                    "    from ..runtime.rows import _private\n",
              PACKAGE / "pendulum" / "_study_probe.py": "from ..images import theta\n",
              PACKAGE / "_nowhere" / "__init__.py": ""}
    assert not any(p.exists() for p in probes)
    saved = MODULES
    try:
        (PACKAGE / "_nowhere").mkdir()
        for path, text in probes.items():
            path.write_text(text)
        MODULES = _modules()
        found = _imports("cnet_lib.core._layer_probe")
        assert ("cnet_lib.images.train_loop", "..images.train_loop", False, ["train"]) in found
        with pytest.raises(AssertionError, match="layer 2.*inside a function.*private"):
            test_imports_respect_the_layers("cnet_lib.core._layer_probe")
        with pytest.raises(AssertionError, match="never import each other"):
            test_imports_respect_the_layers("cnet_lib.pendulum._study_probe")
        with pytest.raises(AssertionError, match="is in no layer"):
            layer("cnet_lib._nowhere")
        with pytest.raises(AssertionError, match="_nowhere"):
            test_every_folder_is_a_layer()
    finally:
        for path in probes:
            path.unlink(missing_ok=True)
        (PACKAGE / "_nowhere").rmdir()
        MODULES = saved
