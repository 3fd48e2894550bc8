"""Functions taken out of a Python source file: each is replaced by a function of the same name, signature and
decorators whose body only raises ``NotImplementedError`` with a message ("this is what exercise X asks you to
write").  The grader writes such copies of the library's and torch's files for the exercise being graded and
puts them in place of the originals inside the sandbox (:mod:`.grading_library`), so that the code an exercise
asks for is not there to be called, read or pasted back at run time.

Only the lines of the functions taken out change (the rest of the file stays as it was, comments included); a
function nested in one taken out goes with it.  In a module taken out as a whole (``whole=True``) the import-time
machinery stays: dunder methods, and functions the module itself calls or uses as decorators at import time.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Callable, Iterator, Optional

__all__ = ["Stubbed", "stub_source", "absent_message", "unneeded_message", "ABSENT_MARK", "functions", "is_property",
           "import_time_names"]

ABSENT_MARK = "is not available while"
"""Words every stub's message holds, right after what it stubs: the grader recognises a case that failed on a stub
by them."""


def absent_message(exercise: str, where: str) -> str:
    """The message of a stub of ``where`` (a qualified name), the exercise's own code, while exercise ``exercise``
    is graded."""
    return (f"this is what exercise {exercise} asks you to write: {where} {ABSENT_MARK} {exercise} is graded; "
            "write it yourself")


def unneeded_message(exercise: str, where: str) -> str:
    """The message of a stub of ``where``, library code exercise ``exercise`` does not need, while it is graded."""
    return (f"{where} {ABSENT_MARK} exercise {exercise} is graded: the grader keeps only the library code the "
            "exercise needs (write the exercise's code yourself)")


@dataclass(frozen=True)
class Stubbed:
    """A source file with functions taken out: the new ``source`` and the qualified names taken out."""

    source: str
    names: tuple[str, ...]


def functions(source) -> list[tuple[str, ast.AST]]:
    """``(qualified name, node)`` of every function of ``source`` (text or a parsed tree) that stubbing can take
    out (at module level, in classes, under a module-level ``if`` or ``try``)."""
    return list(_functions((source if isinstance(source, ast.Module) else ast.parse(source)).body))


def is_property(node: ast.AST) -> bool:
    """Whether a function is a property's getter, setter or deleter (``@property``, ``@x.setter``,
    ``@functools.cached_property``)."""
    for d in getattr(node, "decorator_list", ()):
        name = d.attr if isinstance(d, ast.Attribute) else getattr(d, "id", "")
        if name in ("property", "cached_property", "setter", "getter", "deleter"):
            return True
    return False


def _functions(body: list, prefix: str = "") -> Iterator[tuple[str, ast.AST]]:
    """``(qualified name, node)`` of every function at module level and in classes (not inside functions)."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + node.name, node
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node.body, f"{prefix}{node.name}.")
        elif isinstance(node, (ast.If, ast.Try)):  # functions defined under `if`/`try` at module level
            for part in ("body", "orelse", "finalbody"):
                yield from _functions(getattr(node, part, []) or [], prefix)
            for handler in getattr(node, "handlers", []):
                yield from _functions(handler.body, prefix)


def import_time_names(tree: ast.Module) -> set[str]:
    """Names the module uses while it is imported: in decorators, and anywhere outside function bodies."""
    used = set()

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for d in getattr(node, "decorator_list", []):
                visit(d, False)
            args = node.args
            for default in args.defaults + [d for d in args.kw_defaults if d is not None]:
                visit(default, False)
            return
        if isinstance(node, ast.Name) and not in_function:
            used.add(node.id)
        for child in ast.iter_child_nodes(node):
            visit(child, in_function)

    visit(tree, False)
    return used


def _stub_text(node: ast.AST, lines: list[str], message: str) -> list[str]:
    """The lines of a function with ``node``'s decorators and signature that raises ``message``."""
    raise_stmt = ast.Raise(exc=ast.Call(func=ast.Name("NotImplementedError", ast.Load()),
                                        args=[ast.Constant(message)], keywords=[]), cause=None)
    cls = type(node)
    new = cls(name=node.name, args=node.args, body=[raise_stmt], decorator_list=node.decorator_list,
              returns=node.returns, type_comment=None, **({"type_params": []} if "type_params" in cls._fields else {}))
    ast.copy_location(new, node)
    indent = re.match(r"\s*", lines[node.lineno - 1]).group(0)
    return [indent + ln for ln in ast.unparse(ast.fix_missing_locations(new)).splitlines()]


def stub_source(source: str, matches: Callable[[str], bool], message: Callable[[str], str],
                whole: bool = False, tree: Optional[ast.Module] = None) -> Stubbed:
    """``source`` with every function whose qualified name ``matches`` replaced by a stub raising
    ``message(qualified name)``; ``whole``: a module taken out as a whole (its import-time machinery stays);
    ``tree``: ``source`` parsed already."""
    tree = ast.parse(source) if tree is None else tree
    keep = import_time_names(tree) if whole else set()
    lines = source.splitlines()
    chosen = []
    for qualname, node in _functions(tree.body):
        short = qualname.rsplit(".", 1)[-1]
        if whole and ((short.startswith("__") and short.endswith("__")) or short in keep):
            continue
        if matches(qualname):
            chosen.append((qualname, node))
    for qualname, node in sorted(chosen, key=lambda item: -item[1].lineno):  # bottom up: line numbers stay valid
        start = min([d.lineno for d in node.decorator_list] + [node.lineno])
        lines[start - 1:node.end_lineno] = _stub_text(node, lines, message(qualname))
    text = "\n".join(lines) + ("\n" if source.endswith("\n") else "")
    return Stubbed(text, tuple(sorted(q for q, _ in chosen)))
