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
from typing import Callable, Iterator

__all__ = ["Stubbed", "stub_source", "absent_message", "ABSENT_MARK"]

ABSENT_MARK = "asks you to write"
"""Words every stub's message holds: the grader recognises a case that failed on a stub by them."""


def absent_message(exercise: str, where: str) -> str:
    """The message of a stub of ``where`` (a qualified name) while exercise ``exercise`` is graded."""
    return (f"this is what exercise {exercise} {ABSENT_MARK}: {where} is not available while {exercise} is graded; "
            "write it yourself")


@dataclass(frozen=True)
class Stubbed:
    """A source file with functions taken out: the new ``source`` and the qualified names taken out."""

    source: str
    names: tuple[str, ...]


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


def _import_time_names(tree: ast.Module) -> set[str]:
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
                whole: bool = False) -> Stubbed:
    """``source`` with every function whose qualified name ``matches`` replaced by a stub raising
    ``message(qualified name)``; ``whole``: a module taken out as a whole (its import-time machinery stays)."""
    tree = ast.parse(source)
    keep = _import_time_names(tree) if whole else set()
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
