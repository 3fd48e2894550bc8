"""Every module of cnet_lib is small enough to read and has a name of its own, read from the source tree:
at most :data:`MAX_LINES` lines, a basename no other module has (``__init__.py`` aside), and no function
(decorators included, nested ones and methods too) over :data:`MAX_FUNCTION_LINES` lines."""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "cnet_lib"
MAX_LINES = 400
MAX_FUNCTION_LINES = 60
SOURCES = sorted(PACKAGE.rglob("*.py"))


def long_functions(source: str, limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, int]]:
    """``(name, lines)`` of every function in ``source`` longer than ``limit`` lines, counted from its
    first decorator to its last line."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            if node.end_lineno - start + 1 > limit:
                out.append((node.name, node.end_lineno - start + 1))
    return out


def duplicate_names(paths) -> dict[str, list]:
    """Basenames shared by several modules (``__init__.py`` aside): ``{name: [paths]}``."""
    by_name = defaultdict(list)
    for path in paths:
        if path.name != "__init__.py":
            by_name[path.name].append(path)
    return {name: found for name, found in by_name.items() if len(found) > 1}


def shape_problems(paths) -> list[str]:
    """Every module over :data:`MAX_LINES` lines and every function over :data:`MAX_FUNCTION_LINES`, one line each."""
    problems = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        n = len(text.splitlines())
        if n > MAX_LINES:
            problems.append(f"{path.relative_to(PACKAGE)} has {n} lines (at most {MAX_LINES}): split it along its jobs")
        for name, lines in long_functions(text):
            problems.append(f"{path.relative_to(PACKAGE)}: {name} has {lines} lines (at most {MAX_FUNCTION_LINES})")
    return problems


def test_modules_are_short_and_their_functions_too():
    problems = shape_problems(SOURCES)
    assert not problems, f"{len(problems)} too long:\n" + "\n".join(problems)


def test_module_names_are_unique():
    dups = duplicate_names(SOURCES)
    assert not dups, "module names used twice: " + "; ".join(
        f"{name}: {', '.join(str(p.relative_to(PACKAGE)) for p in paths)}" for name, paths in dups.items())


def test_the_checks_see_what_they_forbid():
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    source = f"@decorator\ndef f():\n{body}\n\nclass C:\n    def short(self):\n        return 1\n"
    assert long_functions(source) == [("f", MAX_FUNCTION_LINES + 2)], "the decorator and the def line count"
    nested = "def outer():\n    def inner():\n" + "\n".join(f"        y{i} = {i}" for i in range(MAX_FUNCTION_LINES)) + "\n"
    assert [name for name, _ in long_functions(nested)] == ["outer", "inner"]
    paths = [Path("a/tables.py"), Path("b/tables.py"), Path("a/__init__.py"), Path("b/__init__.py"), Path("c/rows.py")]
    assert duplicate_names(paths) == {"tables.py": [Path("a/tables.py"), Path("b/tables.py")]}
