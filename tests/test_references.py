"""Every reference to the library outside it still points somewhere.

The library's modules moved once (the layered tree); afterwards ``scripts/book.sh`` (the README's
main command), the GPU check script and the benchmarks still imported the old modules while
every unit test passed.  This test reads the scripts, the benchmarks, the workflow, the chapters, the tests and the prose (README,
CHANGELOG, CONTRIBUTING, the book's pages, comments in ``_config.yml`` and ``_toc.yml``) and checks that each
``from cnet_lib.x import a, b`` names a module and attributes that exist, each ``python -m cnet_lib <command>``
or ``cnet <command>`` names a command of :data:`cnet_lib.cli.COMMANDS` (and no text uses the older
``python -m cnet_lib.<command>`` form), each ``:mod:`` / ``:func:``-style dotted ``cnet_lib.x.y`` resolves, and
each path ``cnet_lib/....py`` (or a folder) exists.  One test lists every stale reference of every file.
"""
from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

from cnet_lib.book.notebook_cells import cell_source, read_notebook
from cnet_lib.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]

SOURCES = sorted(
    [*ROOT.glob("scripts/*.sh"), *ROOT.glob("scripts/*.py"), *ROOT.glob("benchmarks/*.py"), ROOT / ".ci" / "run",
     *ROOT.glob(".github/workflows/*.yml"), ROOT / "README.md", ROOT / "CHANGELOG.md", *ROOT.glob("book/*.md"),
     ROOT / "_config.yml", ROOT / "_toc.yml", *ROOT.glob("book/*.ipynb"), *ROOT.glob("book/_ext/*.py"),
     *(p for p in ROOT.glob("tests/*.py") if p.name != "test_references.py")]  # its own examples are stale on purpose
)

FROM_IMPORT = re.compile(r"from (cnet_lib(?:\.\w+)*) import \(?([\w ,\n]+?)\)?(?:\s*#|$)", re.M)
RUN_MODULE = re.compile(r"python3? -m (cnet_lib(?:\.\w+)+)")
RUN_COMMAND = re.compile(r"python3? -m cnet_lib[ \t]+([A-Za-z_]\w*)")
CNET_COMMAND = re.compile(r"(?:`|^[ \t]*|\$ )cnet[ \t]+([a-z_]+)\b", re.M)
DOTTED = re.compile(r"(?<![\w/.])(cnet_lib(?:\.[A-Za-z_]\w*)+)")
PATH = re.compile(r"(?<![\w/])(cnet_lib/[\w/-]*\w(?:\.[a-z]+)?)(?![\w*<-])")
ON_PURPOSE = "stale on purpose"
"""A line holding this phrase (a comment) names what does not exist on purpose: a probe, an old form a test accepts."""


def _text(path: Path) -> str:
    if path.suffix == ".ipynb":
        return "\n".join(cell_source(c) for c in read_notebook(path)["cells"])
    return "\n".join(ln for ln in path.read_text(encoding="utf-8").splitlines() if ON_PURPOSE not in ln)


def _resolves(dotted: str) -> bool:
    """A module, or an attribute of the longest importable prefix (``cnet_lib.images.runs.trained_runs``)."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        return True
    return False


def _is_submodule(package, name: str) -> bool:
    return hasattr(package, "__path__") and importlib.util.find_spec(f"{package.__name__}.{name}") is not None


def references(text: str) -> list[str]:
    """The problems among the library references in ``text``."""
    problems = []
    for module, names in FROM_IMPORT.findall(text):
        try:
            mod = importlib.import_module(module)
        except ImportError as err:
            problems.append(f"from {module} import ...: {err}")
            continue
        for name in (n.split(" as ")[0].strip() for n in names.replace("\n", " ").split(",")):
            if name and name != "*" and not hasattr(mod, name) and not _is_submodule(mod, name):
                problems.append(f"from {module} import {name}: {module} has no {name}")
    for module in RUN_MODULE.findall(text):
        problems.append(f"python -m {module}: the command lines run as python -m cnet_lib <command>")
    for command in RUN_COMMAND.findall(text):
        if command not in COMMANDS:
            problems.append(f"python -m cnet_lib {command}: no such command")
    for command in CNET_COMMAND.findall(text):
        if command not in COMMANDS:
            problems.append(f"cnet {command}: no such command")
    for dotted in DOTTED.findall(text):
        if not _resolves(dotted.rstrip(".")):
            problems.append(f"{dotted}: does not resolve")
    for path in PATH.findall(text):
        if not (ROOT / path).exists() and "<" not in path:
            problems.append(f"{path}: no such file or folder")
    return sorted(set(problems))


def test_library_references_resolve():
    problems = [f"{path.relative_to(ROOT)}: {p}" for path in SOURCES for p in references(_text(path))]
    assert not problems, f"{len(problems)} reference(s) to library code that does not exist:\n" + "\n".join(problems)


def test_the_check_sees_stale_references():
    stale = ("from cnet_lib.presets import preset_name\npython -m cnet_lib.sweep CHECKPOINT\npython -m cnet_lib nothing\n"
             "`cnet nothing` and\n  cnet sweeep X\n"
             "see cnet_lib.train.SGDStep and cnet_lib/cuda_graphs.py\nfrom cnet_lib.runtime.settings import nothing_here\n")
    problems = references(stale)
    assert problems == sorted([
        "from cnet_lib.presets import ...: No module named 'cnet_lib.presets'", "cnet_lib.presets: does not resolve",
        "python -m cnet_lib.sweep: the command lines run as python -m cnet_lib <command>",
        "cnet_lib.sweep: does not resolve",
        "python -m cnet_lib nothing: no such command", "cnet nothing: no such command", "cnet sweeep: no such command",
        "cnet_lib.train.SGDStep: does not resolve", "cnet_lib/cuda_graphs.py: no such file or folder",
        "from cnet_lib.runtime.settings import nothing_here: cnet_lib.runtime.settings has no nothing_here"]), problems
    fine = ("from cnet_lib.runtime.settings import preset_name\npython -m cnet_lib sweep CHECKPOINT\n"
            "python -m cnet_lib <command>\n`cnet train --list`, the cnet command line\nsee cnet_lib.images.training.train_loop.SGDStep and cnet_lib/runtime/cuda_graphs.py, "
            "cnet_lib/shipped/\n")
    assert references(fine) == []
