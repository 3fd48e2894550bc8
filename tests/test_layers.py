"""The layer rule of cnet_lib, read from its source tree.

A module's layer is its top folder's place in :data:`LAYERS`, lowest first (the book's page *The library*):
``core`` (numerics and models) < ``runtime`` (settings, devices, files, rows and sentences) < ``images`` and
``pendulum`` (the data and the trained models a study reads) < ``draw`` (the drawing helpers) < ``studies`` (one
folder per study) < ``book`` < ``teacher`` < ``cli``; a module at the package root is an entry point
above them all.  The rule: nothing imports a higher layer, nor a sibling folder of its own layer; a study folder
(``cnet_lib/studies/<study>/``) never imports another study, only its own modules and the shared ``runner`` and
``stats``; inside a study its numbers never import its display (``show.py``); display code (IPython, ipywidgets,
notebook progress bars, plotly) lives only in ``draw``, a study's ``show.py`` and ``book``; a cnet_lib import stands
at the top of its module and names a module that exists; no star imports; no import cycle.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "cnet_lib"
LAYERS = (("core",), ("runtime",), ("pendulum", "images"), ("draw",), ("studies",), ("book",), ("teacher",),
          ("cli",))
DISPLAY = ("IPython", "ipywidgets", "tqdm.notebook", "tqdm.auto", "plotly")
SHARED_STUDY_MODULES = ("cnet_lib.studies", "cnet_lib.studies.runner", "cnet_lib.studies.stats")  # the shared ones, once they exist: stale on purpose


def _modules(package: Path = PACKAGE) -> dict[str, Path]:
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def folder(module: str) -> str:
    parts = MODULES[module].relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else ""


def layer(module: str) -> int:
    top = folder(module)
    if top == "":
        return len(LAYERS)
    for i, folders in enumerate(LAYERS):
        if top in folders:
            return i
    raise AssertionError(f"{module}: its folder cnet_lib/{top}/ is in no layer: add it to LAYERS in tests/test_layers.py")


def study_of(module: str) -> str:
    """The study folder of a module of ``cnet_lib/studies/<study>/`` ('' for the shared modules and other folders)."""
    parts = MODULES[module].relative_to(PACKAGE).parts
    return parts[1] if parts[0] == "studies" and len(parts) > 2 else ""


def imports(module: str) -> list[tuple[str, bool]]:
    """``(target, at the top of the module?)`` for every import of ``module`` (submodules named in a ``from``)."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    top = {id(n) for n in tree.body} | {id(c) for n in tree.body if isinstance(n, (ast.If, ast.Try))
                                        for c in ast.walk(n) if not isinstance(c, (ast.FunctionDef, ast.ClassDef))}
    package = module if MODULES[module].name == "__init__.py" else module.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, id(node) in top) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            subs = [f"{source}.{a.name}" for a in node.names if f"{source}.{a.name}" in MODULES]
            out += [(t, id(node) in top) for t in (subs or [source])]
    return out


def _own(module: str) -> list[tuple[str, bool]]:
    return [(t, at_top) for t, at_top in imports(module) if t == "cnet_lib" or t.startswith("cnet_lib.")]


def problems(modules=None) -> list[str]:
    """Every break of the rule by ``modules`` (default all), one line each."""
    found = []
    for m in sorted(modules or MODULES):
        for target, at_top in _own(m):
            if target not in MODULES:
                found.append(f"{m} imports {target}, which does not exist")
                continue
            if not at_top:
                found.append(f"{m} imports {target} inside a function or class: put it at the top of the module")
            if layer(target) > layer(m):
                found.append(f"{m} imports {target}: cnet_lib/{folder(target)}/ is above cnet_lib/{folder(m)}/")
            elif layer(target) == layer(m) and folder(target) != folder(m):
                found.append(f"{m} imports {target}: the folders of one layer never import each other")
            if study_of(m) and target.startswith("cnet_lib.studies") and target not in SHARED_STUDY_MODULES \
                    and study_of(target) != study_of(m):
                found.append(f"{m} imports {target}: a study never imports another study")
            if study_of(m) and not m.endswith((".show", f".{study_of(m)}")) and target.endswith(".show") \
                    and study_of(target) == study_of(m):
                found.append(f"{m} imports {target}: a study's numbers never import its display")
        shows = folder(m) in ("draw", "book") or (study_of(m) and m.endswith((".show", f".{study_of(m)}")))
        for target, _ in imports(m):
            if not shows and any(target == d or target.startswith(d + ".") for d in DISPLAY):
                found.append(f"{m} imports {target}: display code lives in draw, a study's show.py or book")
        tree = ast.parse(MODULES[m].read_text(encoding="utf-8"))
        if any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in ast.walk(tree)):
            found.append(f"{m} star-imports: import the names")
    return found + cycles(modules)


def cycles(modules=None) -> list[str]:
    graph = {m: sorted({t for t, _ in _own(m) if t in MODULES and t != m and not t.startswith(m + ".")})
             for m in (modules or MODULES)}
    state, stack, found = {}, [], []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for t in graph.get(m, []):
            if state.get(t) == "open":
                found.append("cycle: " + " -> ".join(stack[stack.index(t):] + [t]))
            elif t not in state and t in graph:
                visit(t)
        stack.pop()
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return found


def test_every_folder_has_a_layer():
    for m in MODULES:
        layer(m)


def test_the_layer_rule_holds():
    found = problems()
    assert not found, f"{len(found)} break(s) of the layer rule (tests/test_layers.py):\n" + "\n".join(found)


def test_the_rule_sees_what_it_forbids(tmp_path):
    """Each kind of break is found from the files alone: an upward import, a hidden one, another study's, a study's
    numbers importing its display, display code in a study's numbers, a star import, a cycle, a folder of no layer."""
    global MODULES
    probes = {
        "core/_probe.py": "def f():\n    from ..images import data\n",
        "studies/_probe_a/__init__.py": "",
        "studies/_probe_a/study.py": "from .._probe_b import study\nfrom . import show\nimport plotly\n",
        "studies/_probe_a/show.py": "from .study import *\n",
        "studies/_probe_b/__init__.py": "",
        "studies/_probe_b/study.py": "from .._probe_a import study\n",
        "_nowhere/__init__.py": "",
    }
    for rel in probes:
        assert not (PACKAGE / rel).exists()
    saved = MODULES
    made = []
    try:
        for rel, text in probes.items():
            path = PACKAGE / rel
            if not path.parent.exists():
                path.parent.mkdir()
                made.append(path.parent)
            path.write_text(text)
        MODULES = _modules()
        found = "\n".join(problems([m for m in MODULES if "_probe" in m]))
        for expected in ("cnet_lib/images/ is above cnet_lib/core/", "inside a function", "never imports another study",
                         "numbers never import its display", "imports plotly", "star-imports", "cycle:"):
            assert expected in found, (expected, found)
        with pytest.raises(AssertionError, match="is in no layer"):
            layer("cnet_lib._nowhere")  # a probe: stale on purpose
    finally:
        for rel in probes:
            (PACKAGE / rel).unlink(missing_ok=True)
        for d in reversed(made):
            d.rmdir()
        MODULES = saved
