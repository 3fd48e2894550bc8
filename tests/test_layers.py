"""The layer contract of cnet_lib, read from its folder tree and checked on every import, deferred ones included.

A module's layer is its top folder's place in :data:`LAYERS` (lowest first; the book's *The library* page):
``core`` (numerics and models) < ``runtime`` (settings, devices, files, presets, rows, vocabulary) < the
study packages ``pendulum`` and ``images`` < ``report`` (the studies' tables and sentences) < ``draw`` (figures,
live apps, plotting helpers) < ``book`` (the book's machinery) < ``teacher`` (the answer key and the grader,
absent from a student's install) < ``cli`` (the command lines).  A module at the package root
(``cnet_lib/__init__.py``, ``cnet_lib/__main__.py``) is an entry point above every folder.  Inside a folder with
wings (:data:`WINGS`: the image study's data < training < runs < studies) a wing imports only itself and the
wings before it; the folder's own ``__init__.py`` stands above its wings.

Each rule is one test that lists every module that breaks it: no module imports a higher layer, a later wing,
nor a sibling folder of its own layer (the two studies never import each other); every import of a cnet_lib
module stands at the top of its module (no hidden imports in functions) and names a module that exists; no
module imports another's private names; display code (IPython, ipywidgets, notebook progress bars) and plotly
live only in ``draw`` and ``book``; the study packages return numbers (no ``format_*``, ``word_*``, ``*_text`` or
``*_table`` function in them, and no import of the tables' and sentences' makers: their words are ``report``'s);
no module star-imports; a module that defines or re-exports public names
says which in ``__all__``; the import graph has no cycle.  There is no per-module rank and no exemption: a new
folder is placed by adding it to :data:`LAYERS`.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "cnet_lib"
LAYERS = (("core",), ("runtime",), ("pendulum", "images"), ("studies",), ("report",), ("draw",), ("book",), ("teacher",), ("cli",))
"""The top folders of cnet_lib, lowest layer first; folders in one tuple form one layer."""
WINGS = {"images": ("data", "training", "runs", "studies")}
"""Folders in wings, the first wing lowest: a wing imports only itself and the wings before it."""
DRAWING = ("draw", "book")
"""The folders that may import display libraries and plotly."""
DISPLAY = ("IPython", "ipywidgets", "tqdm.notebook", "tqdm.auto")
STUDIES = ("pendulum", "images", "studies")
"""The study packages: they return numbers, and the reporting layer (``report``) words them."""
WORDING = re.compile(r"^_?(format_\w+|word_\w+|\w+_text|\w+_table)$")
"""The names of functions that word or format results (``report``'s rule: a ``*_table`` returns a table, a ``word_*``
sentences); a study's function that returns rows is named ``*_rows``."""
WORDING_MAKERS = {"cnet_lib.runtime.rich_text": None, "cnet_lib.runtime.rows": {"format_table"}}
"""What builds tables and sentences: a module (every name of it) or the names of a module."""


def _modules(package: Path = PACKAGE) -> dict[str, Path]:
    out = {}
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent).with_suffix("")
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
                         "and to the picture of the layers on the book's page The library")


def wing(module: str) -> int:
    """The place of the module's wing in its folder's :data:`WINGS` (-1 for a folder without wings; the folder's own
    ``__init__.py``, its face, stands above them all)."""
    wings = WINGS.get(folder(module))
    if wings is None:
        return -1
    parts = MODULES[module].relative_to(PACKAGE).parts
    if len(parts) == 2:
        if parts[1] == "__init__.py":
            return len(wings)
        raise AssertionError(f"{module}: cnet_lib/{parts[0]}/ is in wings; put the module into one of {wings}")
    if parts[1] not in wings:
        raise AssertionError(f"{module}: cnet_lib/{parts[0]}/{parts[1]}/ is no wing of {wings} (tests/test_layers.py)")
    return wings.index(parts[1])


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _tree(module: str) -> ast.Module:
    return ast.parse(MODULES[module].read_text(encoding="utf-8"))


def _imports(module: str) -> list[tuple[str, str, bool, list]]:
    """``(target module, how it was written, at the top of the module?, names imported)`` for every
    import of ``module`` (cnet_lib targets and third-party ones alike)."""
    tree = _tree(module)
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


def _own_imports(module: str):
    return [(t, w, top, names) for t, w, top, names in _imports(module) if _own(t)]


def _report(problems: list[str], rule: str) -> None:
    assert not problems, f"{len(problems)} module(s) break the rule that {rule}:\n" + "\n".join(problems)


# --------------------------------------------------------------------------- each rule, every module at once
def upward_imports(modules=None) -> list[str]:
    """Imports of a higher layer, of a sibling folder of the same layer, or of a later wing."""
    problems = []
    for module in sorted(modules or MODULES):
        for target, written, _, _ in _own_imports(module):
            if target not in MODULES:
                continue
            if layer(target) > layer(module):
                problems.append(f"{module} imports {target} (layer {layer(target)}, cnet_lib/{folder(target)}) from "
                                f"layer {layer(module)} (cnet_lib/{folder(module)})")
            elif layer(target) == layer(module) and folder(target) != folder(module):
                problems.append(f"{module} imports {target}: the folders of one layer "
                                f"({', '.join(LAYERS[layer(module)])}) never import each other")
            elif folder(target) == folder(module) and wing(target) > wing(module):
                wings = WINGS[folder(module)]
                problems.append(f"{module} imports {target}: the wing {wings[wing(target)]}/ comes after "
                                f"{wings[wing(module)]}/ ({' < '.join(wings)})")
    return problems


def hidden_or_missing_imports(modules=None) -> list[str]:
    """Imports of cnet_lib modules inside a function or class, and imports of modules that do not exist."""
    problems = []
    for module in sorted(modules or MODULES):
        for target, written, at_top, _ in _own_imports(module):
            if target not in MODULES:
                problems.append(f"{module} imports {target} ({written}), which does not exist")
            elif not at_top:
                problems.append(f"{module} imports {target} inside a function or class: put it at the top of the module")
    return problems


def private_imports(modules=None) -> list[str]:
    problems = []
    for module in sorted(modules or MODULES):
        for target, _, _, names in _own_imports(module):
            private = [n for n in names if n.startswith("_") and n != "__version__"]
            if private:
                problems.append(f"{module} imports private names {private} from {target}: make them public or move the code")
    return problems


def display_imports(modules=None) -> list[str]:
    problems = []
    for module in sorted(modules or MODULES):
        if folder(module) in DRAWING:
            continue
        for target, _, _, _ in _imports(module):
            if any(target == d or target.startswith(d + ".") for d in DISPLAY):
                problems.append(f"{module} imports {target}: display code belongs in cnet_lib.draw or cnet_lib.book")
            if target == "plotly" or target.startswith("plotly."):
                problems.append(f"{module} imports {target}: figures belong in cnet_lib.draw")
    return problems


def wording_in_studies(modules=None) -> list[str]:
    """Functions of a study package named as wording (:data:`WORDING`), and its imports of what builds tables
    and sentences (:data:`WORDING_MAKERS`)."""
    problems = []
    for module in sorted(modules or MODULES):
        if folder(module) not in STUDIES:
            continue
        for node in ast.walk(_tree(module)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and WORDING.match(node.name):
                problems.append(f"{module}.{node.name} (line {node.lineno}) words or formats results: move it to "
                                "cnet_lib/report/ (a *_table returns a table, a word_* returns sentences) and let the "
                                "study return numbers (rows: name it *_rows)")
        for target, _, _, names in _own_imports(module):
            if target in WORDING_MAKERS and (WORDING_MAKERS[target] is None or set(names) & WORDING_MAKERS[target]):
                what = ", ".join(sorted(set(names) & WORDING_MAKERS[target])) if WORDING_MAKERS[target] else target
                problems.append(f"{module} imports {what} from {target}: tables and sentences are cnet_lib/report/'s")
    return problems


def star_imports(modules=None) -> list[str]:
    problems = []
    for module in sorted(modules or MODULES):
        for node in ast.walk(_tree(module)):
            if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
                problems.append(f"{module}: from {'.' * node.level}{node.module or ''} import *: import the names")
    return problems


def _public_names(tree: ast.Module) -> list[str]:
    """What a module defines or re-exports at its top level under a public name."""
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
        elif isinstance(node, ast.ImportFrom) and node.level:
            names += [a.asname or a.name for a in node.names]
    return [n for n in names if not n.startswith("_") and n not in ("annotations", "*")]


def missing_all(modules=None) -> list[str]:
    """Modules with public definitions or re-exports and no ``__all__``."""
    problems = []
    for module in sorted(modules or MODULES):
        tree = _tree(module)
        declared = any(isinstance(n, (ast.Assign, ast.AnnAssign)) and "__all__" in
                       [getattr(t, "id", None) for t in (n.targets if isinstance(n, ast.Assign) else [n.target])]
                       for n in tree.body)
        public = _public_names(tree)
        if public and not declared:
            problems.append(f"{module} defines {', '.join(public[:4])}{', ...' if len(public) > 4 else ''} and has no "
                            "__all__: say which names are its public ones")
    return problems


def cycles(modules=None) -> list[str]:
    graph = {m: sorted({t for t, _, _, _ in _own_imports(m) if t in MODULES and t != m}) for m in (modules or MODULES)}
    state, stack, found = {}, [], []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for t in graph.get(m, []):
            if t.startswith(m + "."):
                continue  # a package importing its own submodules (its __init__) is no cycle
            if state.get(t) == "open":
                found.append(" -> ".join(stack[stack.index(t):] + [t]))
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return found


def test_every_folder_is_a_layer():
    folders = sorted({folder(m) for m in MODULES} - {""})
    placed = sorted(f for layer_folders in LAYERS for f in layer_folders)
    assert folders == placed, f"folders {folders} but LAYERS places {placed}"
    for m in MODULES:
        wing(m)  # a module of a folder in wings stands in one of them


def test_no_import_runs_back_up():
    _report(upward_imports(), "no import runs back up (LAYERS, then WINGS)")


def test_imports_stand_at_the_top_and_exist():
    _report(hidden_or_missing_imports(), "cnet_lib imports stand at the top of a module and name a module that exists")


def test_no_private_names_are_imported():
    _report(private_imports(), "no module imports another's private names")


def test_display_code_only_in_the_drawing_layers():
    _report(display_imports(), f"display code and plotly live only in {', '.join(DRAWING)}")


def test_the_studies_return_numbers_and_report_words_them():
    _report(wording_in_studies(), "the study packages return numbers: their tables and sentences live in cnet_lib/report/")


def test_no_star_imports():
    _report(star_imports(), "names are imported by name, never with *")


def test_public_names_are_declared():
    _report(missing_all(), "a module with public names declares them in __all__")


def test_the_import_graph_has_no_cycle():
    _report(cycles(), "the import graph has no cycle")


def test_the_contract_sees_what_it_forbids():
    """The checks above are not vacuous: a deferred, upward import, a sibling study's import, a later wing's
    import, a star import, wording in a study, public names without __all__ and a module in a folder of no layer
    are all found from the files alone, every one of them in a single run of each check."""
    global MODULES
    probes = {PACKAGE / "core" / "_layer_probe.py": "def f():\n    from ..images.training.train_loop import train\n"
                                                    "    from ..runtime.rows import _private\n",
              PACKAGE / "pendulum" / "_study_probe.py": "from ..images.studies import theta\nfrom .physics import *\n"
                                                        "from ..runtime.rows import find_row, format_table\n"
                                                        "from ..runtime.rich_text import paragraphs\n\n\n"
                                                        "def dip_table(rows):\n    return rows\n\n\n"
                                                        "def word_dip(rows):\n    return rows\n",
              PACKAGE / "images" / "data" / "_wing_probe.py": "from ..runs import run_store\n\n\ndef public():\n"
                                                              "    return run_store\n",
              PACKAGE / "_nowhere" / "__init__.py": ""}
    assert not any(p.exists() for p in probes)
    saved = MODULES
    try:
        (PACKAGE / "_nowhere").mkdir()
        for path, text in probes.items():
            path.write_text(text)
        MODULES = _modules()
        found = _imports("cnet_lib.core._layer_probe")  # probes: stale on purpose
        assert ("cnet_lib.images.training.train_loop", "..images.training.train_loop", False, ["train"]) in found
        probed = ["cnet_lib.core._layer_probe", "cnet_lib.pendulum._study_probe", "cnet_lib.images.data._wing_probe"]  # probes: stale on purpose
        up = upward_imports(probed)
        for expected in ("train_loop (layer 2, cnet_lib/images) from layer 0", "never import each other",
                         "runs/ comes after data/"):
            assert any(expected in line for line in up), (expected, up)
        assert "inside a function" in hidden_or_missing_imports(probed)[0]
        assert "_private" in private_imports(probed)[0]
        assert "import *" in star_imports(probed)[0]
        wording = wording_in_studies(probed)
        assert len(wording) == 4 and all("_study_probe" in line for line in wording), wording
        assert any(".dip_table (line" in w for w in wording) and any(".word_dip (line" in w for w in wording)
        assert any("imports format_table from cnet_lib.runtime.rows" in w for w in wording), wording
        assert any("imports cnet_lib.runtime.rich_text from" in w for w in wording), wording
        assert ("cnet_lib.images.data._wing_probe defines run_store, public and has no __all__: say which names are its "  # probes: stale on purpose
                "public ones") in missing_all(probed)
        with pytest.raises(AssertionError, match="is in no layer"):
            layer("cnet_lib._nowhere")  # probes: stale on purpose
        with pytest.raises(AssertionError, match="_nowhere"):
            test_every_folder_is_a_layer()
    finally:
        for path in probes:
            path.unlink(missing_ok=True)
        (PACKAGE / "_nowhere").rmdir()
        MODULES = saved
