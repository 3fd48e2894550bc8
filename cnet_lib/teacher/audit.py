"""What an exercise cell's source shows, read in the grading process: feedback and flags for the teacher, never
points and never the barrier (a computed name walks past any reading of source; what stops it is the sandbox, where
that code is absent: :mod:`.absent`).

**The audit** (:func:`audit_exercise_cell`) reads one exercise cell (with the imports of the cells above it, which
the grader runs first) against the exercise's :class:`cnet_lib.book.exercises.Rules`:

* **library** findings: a ``cnet_lib`` name the exercise does not allow (through any alias or attribute chain),
  a banned module (``torchdiffeq``), a banned name or attribute that does the exercise (``odeint``,
  ``refine``, ``fake_quantize_per_channel_affine``), a call of a parameter that does it (``block(x)``);
* **tampering** findings: dynamic code and introspection (``exec``, ``eval``, ``__import__``, ``getattr`` with a
  computed name, ``setattr``, dunder attributes, ``sys.setprofile``, frames, ``sys.modules``), threads and
  processes, files and the network, imports of the checks or the answer key, and monkeypatching (assigning an
  attribute of anything imported); each on the attribute a chain reaches, not only the name it starts from
  (``numpy.ctypeslib.ctypes.CDLL``, ``pkgutil.os.system``, ``pkgutil.importlib.import_module``: :data:`REACHED`).

:func:`audit_other_cell` reads every other cell for tampering with the public checks (the checks' internals
imported, ``grader`` or an imported module patched, the call tracer switched off).  The grader turns library
findings into a note for the student ("you called X") and tampering findings into a flag to look at.

**Similarity** (:func:`compare`): how much of a cell is the library's own code for the exercise, pasted, by
winnowing (Schleimer, Wilkerson and Aiken, "Winnowing: local algorithms for document fingerprinting", SIGMOD 2003,
the method of MOSS) over Python's own tokens.  :func:`normalised` prints a source back as Python would
(``ast.unparse``: no comments, one layout) without the statements that do nothing (``pass``, an expression that
calls nothing, an assignment that calls nothing to a name nothing reads, an ``if`` on a false constant), so a no-op
line after every pasted line changes nothing; :func:`tokens` keeps the code's shape, not its spelling (every
identifier one token, every number another, every string a third; keywords and operators as they are);
:func:`fingerprints` hashes every run of :data:`K` tokens and keeps the smallest hash of each window of :data:`W`
runs (any common run of ``K + W - 1`` tokens or more is found).  The share of the cell's fingerprints found in the
code the exercise takes out of the library (the functions' sources as installed here; the answer key's reference
is not compared: it is often the very answer an honest student writes) is shown in the feedback from
:data:`NOTE_AT` on and flagged from :data:`FLAG_AT` on (the book's solutions measure at most 44%, the library's
code pasted 81-100%, with its names changed or not: tests/test_grading.py); it takes no points.
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

from ..book.exercise_cells import cell_python
from ..book.exercises.public_checks import Rules
from .absent import functions, module_file, plan

__all__ = ["Finding", "audit_exercise_cell", "audit_imports_above", "audit_other_cell", "tokens", "fingerprints",
           "normalised", "Similarity", "compare", "library_sources", "K", "W", "FLAG_AT", "NOTE_AT"]

TAMPER_MODULES = frozenset({"importlib", "inspect", "threading", "_thread", "multiprocessing", "concurrent", "subprocess",
                            "ctypes", "gc", "signal", "builtins", "pickle", "marshal", "dill", "code", "codeop", "socket",
                            "urllib", "requests", "http", "otter", "google", "IPython", "shutil", "tempfile", "pathlib",
                            "io", "asyncio", "sched", "atexit", "faulthandler", "resource", "pty", "mmap"})
TAMPER_CALLS = frozenset({"exec", "eval", "compile", "__import__", "globals", "locals", "vars", "setattr", "delattr",
                          "open", "breakpoint", "input", "exit", "quit", "__builtins__", "memoryview", "help"})
TAMPER_ATTRIBUTES = frozenset({"setprofile", "settrace", "setprofile_all_threads", "settrace_all_threads", "_getframe",
                               "f_back", "f_globals", "f_locals", "f_code", "f_builtins", "gi_frame", "tb_frame", "cr_frame",
                               "meta_path", "path_hooks", "multiprocessing", "start_new_thread"})
REACHED = frozenset({"ctypes", "ctypeslib", "subprocess", "_posixsubprocess", "importlib", "builtins", "_thread",
                     "threading", "multiprocessing", "socket", "marshal", "pickle", "mmap", "pty", "inspect", "posix",
                     "faulthandler", "gc", "os", "sys"})
"""Modules that reached as an attribute of another (``numpy.ctypeslib.ctypes``, ``pkgutil.os``) read as tampering,
as imported plainly (``os`` and ``sys`` but for what :data:`SYSTEM_ALLOWED` lets an exercise use)."""
ALLOWED_DUNDERS = frozenset({"__name__", "__doc__"})
SYSTEM_ALLOWED = {"sys": frozenset({"float_info", "maxsize", "version", "version_info", "float_repr_style"}),
                  "os": frozenset({"path", "cpu_count", "sep"})}
"""What an exercise cell may use of ``sys`` and ``os`` (anything else there reaches the process: tampering)."""
CHECK_NAMES = ("check_", "Notebook", "solution", "student_code")  # what a chapter imports from the exercises


@dataclass(frozen=True)
class Finding:
    """One use the grader does not accept: ``kind`` ``"library"`` or ``"tampering"``, the cell's ``line``, and
    ``what`` in words."""

    kind: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.what}"


def _imports(tree: ast.AST) -> dict[str, str]:
    """``{bound name: dotted path}`` of every import in ``tree`` (``import a.b`` binds ``a`` to ``a``)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def _bound(tree: ast.AST) -> set[str]:
    """Names the code binds itself (assignments, parameters, loops, functions, with/except targets)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def _attributes(node: ast.AST) -> tuple[ast.AST, list[str]]:
    """The root of an attribute chain ``root.a.b`` (a name, a call, a subscript...) and its attributes, in order."""
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    return node, attrs[::-1]


def _chain(node: ast.AST) -> Optional[tuple[str, list[str]]]:
    """``(root name, [attributes])`` of an attribute chain whose root is a name (None for anything else)."""
    root, attrs = _attributes(node)
    return (root.id, attrs) if isinstance(root, ast.Name) else None


def _import_findings(tree: ast.AST, rules: Rules) -> list[Finding]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            out.append(Finding("tampering", node.lineno, "a relative import"))
            continue
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        for mod in modules:
            root = mod.split(".")[0]
            if root in TAMPER_MODULES:
                out.append(Finding("tampering", node.lineno, f"imports {mod}"))
            elif root in rules.banned_modules or mod in rules.banned_modules:
                out.append(Finding("library", node.lineno, f"imports {mod}, which does the exercise"))
            elif mod.startswith(("cnet_lib.book.exercises", "cnet_lib.teacher")) or mod in ("cnet_lib.book",):
                if not (isinstance(node, ast.ImportFrom) and mod == "cnet_lib.book" and
                        all(a.name in ("setup",) for a in node.names)):
                    out.append(Finding("tampering", node.lineno, f"imports {mod} (the checks or the answer key)"))
    return out


def _reached(parts: list[str]) -> Optional[str]:
    """What a chain reaches through an attribute (``parts[1:]``): the last module of :data:`REACHED` in it (``os``
    and ``sys`` with what follows them, unless an exercise may use that), None when none."""
    found = None
    for i, part in enumerate(parts[1:], start=1):
        after = parts[i + 1] if i + 1 < len(parts) else ""
        if part in SYSTEM_ALLOWED:
            if after and after not in SYSTEM_ALLOWED[part]:
                found = f"{part}.{after}"
        elif part in REACHED:
            found = part
    return found


def _path_findings(node: ast.AST, names: dict[str, str], bound: set[str], rules: Rules) -> list[Finding]:
    """Findings of the longest attribute chain ``root.a.b``: its dotted path when the root is an imported name, and
    what it reaches through its attributes whatever the root (``np.ctypeslib.ctypes``, ``pkgutil.os.system``,
    ``f().importlib``)."""
    root, attrs = _attributes(node)
    if isinstance(root, ast.Name) and root.id in names and root.id not in bound:
        parts = ".".join([names[root.id], *attrs]).split(".")
    elif isinstance(root, ast.Name):
        parts = [root.id, *attrs]
    else:
        parts = ["(...)", *attrs]
    path = ".".join(parts)
    imported = isinstance(root, ast.Name) and root.id in names and root.id not in bound
    if imported and parts[0] == "cnet_lib" and path not in rules.allowed_imports:
        return [Finding("library", node.lineno, f"uses {path}, library code the exercise does not allow")]
    if imported and parts[0] in SYSTEM_ALLOWED and len(parts) > 1 and parts[1] not in SYSTEM_ALLOWED[parts[0]] | TAMPER_ATTRIBUTES:
        return [Finding("tampering", node.lineno, f"uses {path}")]
    if imported and parts[0] in TAMPER_MODULES:
        return [Finding("tampering", node.lineno, f"uses {path}")]
    reached = _reached(parts)
    if reached is not None:
        return [Finding("tampering", node.lineno, f"uses {path}: reaches {reached} through another module")]
    return []


def _name_findings(node: ast.AST, bound: set[str], rules: Rules, own: str) -> list[Finding]:
    """Findings of one name (free in the cell) or attribute: banned, tampering, dunder."""
    if isinstance(node, ast.Attribute):
        a = node.attr
        if a in rules.banned_names:
            return [Finding("library", node.lineno, f"uses .{a}, which does (part of) the exercise")]
        if a in TAMPER_ATTRIBUTES or (a.startswith("__") and a.endswith("__") and a not in ALLOWED_DUNDERS):
            return [Finding("tampering", node.lineno, f"uses .{a}")]
        return []
    if node.id in bound:
        return []
    if node.id in TAMPER_CALLS or (node.id.startswith("__") and node.id.endswith("__") and node.id not in ALLOWED_DUNDERS):
        return [Finding("tampering", node.lineno, f"uses {node.id}")]
    if node.id in rules.banned_names and node.id != own:
        return [Finding("library", node.lineno, f"uses {node.id}, which does (part of) the exercise")]
    return []


def _tree(source) -> ast.Module:
    return source if isinstance(source, ast.Module) else ast.parse(cell_python(source))


def audit_exercise_cell(source, name: str, rules: Rules, preamble="") -> list[Finding]:
    """The findings of exercise ``name``'s cell (``source``: its text, or its parsed tree), most serious first
    (``preamble``: the imports the grader runs before it, as text or a tree).  Raises SyntaxError when the cell
    is not Python.  One walk of the cell: time linear in its size."""
    tree = _tree(source)
    above = _imports(_tree(preamble)) if preamble else {}
    names = {**above, **_imports(tree)}
    bound = _bound(tree)
    out = _import_findings(tree, rules)
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    patchable = {**names, **_parameters(tree, name)}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
            out += _name_findings(node, bound, rules, name)
            out += [] if id(node) in inner or isinstance(node, ast.Name) and node.id not in names else \
                _path_findings(node, names, bound, rules)
        if isinstance(node, ast.Call):
            out += _call_findings(node, rules)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            out += _patch_findings(node, patchable)
    return sorted(set(out), key=lambda f: (f.kind != "tampering", f.line, f.what))


def audit_imports_above(trees: list, rules: Rules) -> list[Finding]:
    """The findings of the imports of the code cells above an exercise (``trees``: their parsed cells, in order),
    which the grader runs before the exercise cell: the imports an exercise cell may not make (the tampering
    modules, the banned ones, the checks' internals or the answer key) are read there too.  A finding's ``what``
    names its cell (code cell 1 is the first)."""
    out = []
    for i, tree in enumerate(trees):
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)) and not _book_import(node):
                out += [Finding(f.kind, f.line, f"{f.what} (code cell {i + 1}, above the exercise)")
                        for f in _import_findings(ast.Module([node], []), rules)]
    return sorted(set(out), key=lambda f: (f.kind != "tampering", f.what))


def _book_import(node: ast.AST) -> bool:
    """An import a student copy itself makes above its exercises (the grader, the setup, a later check's
    helpers)."""
    return isinstance(node, ast.ImportFrom) and (
        (node.module == "cnet_lib.book.exercises" and all(a.name.startswith(CHECK_NAMES) for a in node.names))
        or (node.module == "cnet_lib.book" and all(a.name != "exercises" for a in node.names)))


def _parameters(tree: ast.AST, name: str) -> dict[str, str]:
    """The parameters of the exercise's function: an attribute assigned on one of them changes what the grader
    handed in (a rate's count of evaluations, say)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            args = node.args
            return {a.arg: a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    return {}


def _call_findings(node: ast.Call, rules: Rules) -> list[Finding]:
    func = node.func
    if isinstance(func, ast.Name) and func.id in rules.uncallable:
        return [Finding("library", node.lineno, f"calls {func.id}(...), which does the exercise")]
    if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) >= 2:
        attr = node.args[1]
        if not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)):
            return [Finding("tampering", node.lineno, "getattr with a computed name")]
        if attr.value in rules.banned_names or attr.value in TAMPER_ATTRIBUTES or attr.value.startswith("__"):
            return [Finding("tampering", node.lineno, f"getattr(..., {attr.value!r})")]
    return []


def _patch_findings(node: ast.AST, names: dict[str, str]) -> list[Finding]:
    """Assigning (or deleting) an attribute of anything imported: monkeypatching."""
    targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
    out = []
    for t in targets:
        for sub in ast.walk(t):
            chain = _chain(sub) if isinstance(sub, ast.Attribute) else None
            if chain and chain[0] in names and isinstance(sub.ctx, (ast.Store, ast.Del)):
                out.append(Finding("tampering", node.lineno, f"assigns {chain[0]}.{'.'.join(chain[1])} (patching what "
                                   "the grader handed in, or a module)"))
    return out


def audit_other_cell(source: str, grader_names: tuple[str, ...] = ("grader",)) -> list[Finding]:
    """Tampering with the public checks in a cell that is not an exercise cell (empty for a cell that is not
    Python: the grader does not run it)."""
    try:
        tree = _tree(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    names = _imports(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cnet_lib.book.exercises"):
            if node.module != "cnet_lib.book.exercises" or not all(a.name.startswith(CHECK_NAMES) for a in node.names):
                out.append(Finding("tampering", node.lineno, f"imports the checks' internals ({node.module})"))
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                (getattr(node, "module", None) or a.name).startswith(("cnet_lib.teacher", "cnet_lib.book.exercises."))
                for a in node.names):
            out.append(Finding("tampering", node.lineno, "imports the checks' internals or the answer key"))
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            out += _patch_findings(node, {**names, **{g: g for g in grader_names}})
        elif isinstance(node, ast.Attribute) and node.attr in ("setprofile", "settrace", "setprofile_all_threads"):
            out.append(Finding("tampering", node.lineno, f"switches the call tracer ({node.attr})"))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("setattr", "delattr"):
            out.append(Finding("tampering", node.lineno, f"calls {node.func.id}"))
    return sorted(set(out), key=lambda f: (f.line, f.what))


# ----------------------------------------------------------------------------- similarity to the library's own code
K = 12  # tokens per hashed run
W = 6   # runs per window
FLAG_AT = 0.6  # share of the cell's fingerprints found in the library's code, from which the teacher is told
NOTE_AT = 0.5  # from which the student's feedback shows it (above the book's own solutions, at most 44%)
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


def _functions_of(path: str) -> dict[str, str]:
    """``{qualified name: source}`` of the functions (methods too) of the file ``path``."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.splitlines()
    return {q: textwrap.dedent("\n".join(lines[node.lineno - 1:node.end_lineno])) for q, node in functions(text)}


@lru_cache(maxsize=None)
def library_sources(exercise: str) -> dict[str, str]:
    """The code that does exercise ``exercise``'s work, as installed here: ``{qualified name: source}`` of the
    library functions it takes out and of the outside routines stubbed for it."""
    p, out = plan(exercise), {}
    for module, pattern in p.named_python().items():
        path = module_file(module)
        if path is None:
            continue
        found = _functions_of(path)
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
