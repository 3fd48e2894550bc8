"""How much of an exercise cell is the library's own code for the exercise, pasted: winnowing (Schleimer,
Wilkerson and Aiken, "Winnowing: local algorithms for document fingerprinting", SIGMOD 2003, the method of MOSS)
over Python's own tokens, read from a normalised form of the code.

:func:`normalised` rewrites a source as Python would print it back (``ast.unparse``: no comments, one layout)
without the statements that do nothing (``pass``, an expression that calls nothing, an assignment that calls
nothing to a name nothing reads, such as ``_ = 0``, an ``if`` on a false constant): a line of that kind after every
line of pasted code changes nothing of its fingerprints.  :func:`tokens` reads a source with :mod:`tokenize` and keeps its shape, not its spelling: every identifier becomes
one token (renaming variables changes nothing), every number another and every string a third, while keywords and
operators stay as they are; comments and blank lines go.  :func:`fingerprints` hashes every run of :data:`K`
tokens and keeps the smallest hash of each window of :data:`W` runs (so any common run of ``K + W - 1`` tokens or
more is found).  :func:`compare` measures which share of the cell's fingerprints occur in the code the exercise
takes out of the library (:mod:`.absent`; the functions' sources as installed here), and names the closest
function (the answer key's reference is not compared: it is often the very answer an honest student writes).  The
share is shown in the feedback from :data:`NOTE_AT` on and flagged for the teacher from :data:`FLAG_AT` on (the
book's solutions measure at most 40%, the library's code pasted 92-100%, 85-100% with its names changed:
tests/test_sandbox_parts.py); it takes no points: the teacher decides.
"""
from __future__ import annotations

import ast
import hashlib
import io
import keyword
import re
import textwrap
import tokenize
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

from .absent import module_file, plan

__all__ = ["tokens", "fingerprints", "normalised", "Similarity", "compare", "library_sources", "K", "W", "FLAG_AT"]

K = 12  # tokens per hashed run
W = 6   # runs per window
FLAG_AT = 0.6  # share of the cell's fingerprints found in the library's code, from which the teacher is told
NOTE_AT = 0.5  # from which the student's feedback shows it (above the book's own solutions, at most 40%)
MIN_FINGERPRINTS = 8  # a cell shorter than this says nothing either way
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT}


def _calls(node: ast.AST) -> bool:
    return any(isinstance(n, (ast.Call, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)) for n in ast.walk(node))


class _NoOps(ast.NodeTransformer):
    """Drops the statements that do nothing (see the module doc); ``read``: the names the code reads."""

    def __init__(self, read: set):
        self.read = read

    def _dead(self, stmt: ast.stmt) -> bool:
        if isinstance(stmt, ast.Pass):
            return True
        if isinstance(stmt, ast.Expr):
            return not _calls(stmt.value)
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            value = stmt.value
            return (all(isinstance(t, ast.Name) and t.id not in self.read for t in targets)
                    and (value is None or not _calls(value)))
        return False

    def generic_visit(self, node):
        super().generic_visit(node)
        for field_name in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field_name, None)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
                kept = []
                for stmt in stmts:
                    if isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Constant):
                        kept += stmt.body if stmt.test.value else stmt.orelse
                    elif not self._dead(stmt):
                        kept.append(stmt)
                setattr(node, field_name, kept or ([ast.Pass()] if field_name == "body" else []))
        return node


def normalised(source: str) -> str:
    """``source`` printed back by Python without its statements that do nothing (see the module doc); the source
    as it is when it is not Python or too deep to print."""
    try:
        tree = ast.parse(source)
        read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        return ast.unparse(ast.fix_missing_locations(_NoOps(read).visit(tree)))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return source


def tokens(source: str) -> list[str]:
    """The cell's tokens with identifiers, numbers and strings made anonymous (see the module doc)."""
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in _SKIP:
                continue
            if tok.type == tokenize.NAME:
                out.append(tok.string if keyword.iskeyword(tok.string) else "N")
            elif tok.type == tokenize.NUMBER:
                out.append("0")
            elif tok.type == tokenize.STRING:
                out.append("S")
            elif tok.type == tokenize.NEWLINE:
                out.append(";")
            else:
                out.append(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # what could be read counts
    return out


def fingerprints(source: str, k: int = K, w: int = W) -> set[int]:
    """The winnowed fingerprints of ``source``, normalised (see the module doc)."""
    toks = tokens(normalised(source))
    hashes = [int.from_bytes(hashlib.blake2b(" ".join(toks[i:i + k]).encode(), digest_size=8).digest(), "big")
              for i in range(len(toks) - k + 1)]
    if len(hashes) <= w:
        return set(hashes)
    return {min(hashes[i:i + w]) for i in range(len(hashes) - w + 1)}


@dataclass(frozen=True)
class Similarity:
    """``share`` of the cell's fingerprints found in the library's code for the exercise, ``closest`` the function
    that holds most of them, and the cell's number of fingerprints (``size``)."""

    share: float
    closest: str
    size: int

    @property
    def flagged(self) -> bool:
        return self.size >= MIN_FINGERPRINTS and self.share >= FLAG_AT

    @property
    def noted(self) -> bool:
        return self.size >= MIN_FINGERPRINTS and self.share >= NOTE_AT

    def note(self) -> str:
        return (f"similarity: {self.share:.0%} of this cell's code fingerprints occur in the library's own code for "
                f"the exercise (closest: {self.closest}); from {FLAG_AT:.0%} on the teacher looks at it")


def _functions_of(path: str, names: Optional[frozenset]) -> dict[str, str]:
    """``{qualified name: source}`` of the functions (methods too) of the file ``path`` (only ``names`` if given)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    out, lines = {}, text.splitlines()

    def walk(body, prefix=""):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qual = prefix + node.name
                if names is None or qual in names:
                    out[qual] = textwrap.dedent("\n".join(lines[node.lineno - 1:node.end_lineno]))
            elif isinstance(node, ast.ClassDef):
                walk(node.body, f"{prefix}{node.name}.")

    walk(ast.parse(text).body)
    return out


@lru_cache(maxsize=None)
def library_sources(exercise: str) -> dict[str, str]:
    """The code that does exercise ``exercise``'s work, as installed here: ``{qualified name: source}`` of the
    library functions it takes out and of the outside routines stubbed for it."""
    p, out = plan(exercise), {}
    for module, pattern in p.named_python().items():
        path = module_file(module)
        if path is None:
            continue
        found = _functions_of(path, None)
        rx = re.compile(pattern) if pattern else None
        out.update({f"{module}.{q}": s for q, s in found.items() if rx is None or rx.search(q)})
    return out


@lru_cache(maxsize=None)
def _library_prints(exercise: str) -> dict[str, frozenset]:
    return {name: frozenset(fingerprints(src)) for name, src in library_sources(exercise).items()}


def compare(cell: str, exercise: str) -> Optional[Similarity]:
    """The similarity of an exercise cell to the library's code for ``exercise`` (None for a cell with no code)."""
    mine = fingerprints(cell)
    if not mine:
        return None
    library = _library_prints(exercise)
    everything = frozenset().union(*library.values()) if library else frozenset()
    closest = max(library, key=lambda n: len(mine & library[n]), default="")
    return Similarity(len(mine & everything) / len(mine), closest, len(mine))
