"""What is absent from the sandbox while one exercise is graded: the code that would do the exercise's work.

* **The library.**  The sandbox mounts the students' build of cnet_lib (what their wheel holds: no answer key, no
  teacher command, :func:`cnet_lib.book.student_copies.strip_for_students`) with every function the exercise does
  not need replaced by a stub that refuses (:func:`stub_source`), so no function of the build can compute the
  exercise's answer there, whatever its name or its module (a batched multi-scheme rollout does an RK step as well
  as the integrator does).  What the exercise needs is derived by running, never listed (:func:`trace`): in a
  process of its own with the sandbox's environment (``kept_trace.py``), every function called while every module
  of the students' build is imported, while the exercise's cases are built (the public ones and the hidden ones of
  several students) and while the grader's runner runs the chapter's solution on them (its own calls into the
  library included), encodes what it returned, reports an error of the student's and tells an unfinished stub.
  That is stored beside this module (:data:`KEPT_FILE`, ``{exercise: ["module:qualified name", ...]}``), written
  by ``python -m cnet_lib answers --write`` in the repository and checked by ``tests/test_grading.py``
  (:func:`stale_kept`), so grading traces nothing.  Besides what was traced, a function stays when its module uses
  it while being imported, or when it is a dunder method or a property (a student's code may print a tableau or
  read ``block.n_basis``); the exercise's own list of forbidden code (:attr:`Plan.named`, what the notebook's call
  guard watches) goes even there, says which absent functions *are* the exercise ("this is what exercise X asks
  you to write") and is what :mod:`.audit` compares a cell with.  ``tests/test_grading.py`` tries
  everything kept on the exercise's hidden cases and finds none that computes the answer.
* **Outside the library** (:data:`OUTSIDE`): packages hidden from the sandbox's file system (torchdiffeq and
  scipy's ODE solvers for the step exercises, scipy.interpolate for the refinement), functions of torch's and
  numpy's Python files stubbed in the same way and put over the originals inside the sandbox
  (:meth:`GradingLibrary.overlays`; without a sandbox they cannot be replaced), torch operators whose kernels are
  replaced in the dispatcher by one that raises, and C functions removed from their modules' namespaces (numpy's
  compiled ``interp``).  The last two happen inside the sandbox, before the student's code runs (:mod:`.runner`).

:class:`GradingLibrary` writes the students' build once per grading run, byte-compiled, and for each exercise a
whole build of its own (the base's files linked, every module with a function to take out written anew with
stubs, and compiled), which the sandbox mounts where the teacher's cnet_lib is installed, so the student's code
finds it by every way there is to import it, and no copy of the functions taken out.  A stub keeps its function's
name, signature and decorators; only the lines of the functions taken out change.
"""
from __future__ import annotations

import ast
import compileall
import importlib.util
import json
import os
import py_compile
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator, Mapping, Optional

from ..book.exercises.catalogue import exercise
from ..book.student_copies import strip_for_students
from .isolation import sandbox_environment

__all__ = ["Stubbed", "stub_source", "absent_message", "unneeded_message", "ABSENT_MARK", "functions", "is_property",
           "import_time_names", "KEPT_FILE", "kept", "trace", "write_kept", "stale_kept", "students_modules",
           "STUDENTS_LEAVE_OUT", "Outside", "Plan", "plan", "OUTSIDE", "module_file", "package_folder",
           "GradingLibrary", "Overlay", "installed_package", "readable", "taken_out", "kept_in"]

PACKAGE = Path(__file__).resolve().parent.parent
KEPT_FILE = Path(__file__).with_name("kept_functions.json")
TRACER = Path(__file__).with_name("kept_trace.py")
STUDENTS_LEAVE_OUT = ("cnet_lib.teacher", "cnet_lib.cli.student", "cnet_lib.cli.grade", "cnet_lib.cli.answers",
                      "cnet_lib.__main__")
"""Modules the students' build lacks (:data:`cnet_lib.book.student_copies.TEACHER_PATHS`) or that run on import."""
STUDENTS_DRAWN = 5
PYC = py_compile.PycInvalidationMode.UNCHECKED_HASH  # bound read-only: never checked against a source's time stamp
ABSENT_MARK = "is not available while"
"""Words every stub's message holds, right after what it stubs: the grader recognises a case that failed on a stub
by them."""


def installed_package() -> Path:
    """The folder of the cnet_lib this grader runs (the one a student's ``import cnet_lib`` must not reach)."""
    return PACKAGE


# ----------------------------------------------------------------------------- stubs
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
                tree: Optional[ast.Module] = None) -> Stubbed:
    """``source`` with every function whose qualified name ``matches`` replaced by a stub raising
    ``message(qualified name)`` (a function nested in one taken out goes with it; the rest of the file stays as it
    was, comments included); ``tree``: ``source`` parsed already."""
    tree = ast.parse(source) if tree is None else tree
    lines = source.splitlines()
    chosen = [(q, node) for q, node in _functions(tree.body) if matches(q)]
    for qualname, node in sorted(chosen, key=lambda item: -item[1].lineno):  # bottom up: line numbers stay valid
        start = min([d.lineno for d in node.decorator_list] + [node.lineno])
        lines[start - 1:node.end_lineno] = _stub_text(node, lines, message(qualname))
    text = "\n".join(lines) + ("\n" if source.endswith("\n") else "")
    return Stubbed(text, tuple(sorted(q for q, _ in chosen)))


# ----------------------------------------------------------------------------- what the sandbox keeps, traced
def students_modules(package: Path = PACKAGE) -> list[str]:
    """Every module of the students' build of ``package``, dotted, sorted."""
    out = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if not any(name == m or name.startswith(m + ".") for m in STUDENTS_LEAVE_OUT):
            out.append(name)
    return out


@lru_cache(maxsize=None)
def _stored() -> dict:
    if not KEPT_FILE.is_file():
        raise FileNotFoundError(f"{KEPT_FILE} is missing: in the repository, run `python -m cnet_lib answers --write`")
    return json.loads(KEPT_FILE.read_text(encoding="utf-8"))


def kept(exercise: str) -> frozenset:
    """``{"module:qualified name", ...}``: the functions of the students' build exercise ``exercise``'s sandbox
    keeps (see the module doc)."""
    found = _stored().get("kept", {}).get(exercise)
    if found is None:
        raise RuntimeError(f"{KEPT_FILE} has nothing for {exercise}: in the repository, run `python -m cnet_lib "
                           "answers --write`")
    return frozenset(found)


def trace(solutions: Mapping[str, str]) -> dict:
    """``{"format": 1, "kept": {exercise: sorted names}}`` traced for the exercises of ``solutions`` (exercise ->
    the chapter's solution source), in a process with the sandbox's environment (see the module doc)."""
    task = {"package": str(PACKAGE), "modules": students_modules(), "leave_out": list(STUDENTS_LEAVE_OUT),
            "drawn": STUDENTS_DRAWN, "solutions": dict(solutions)}
    with tempfile.TemporaryDirectory(prefix="cnet-kept-") as home:
        env = sandbox_environment() | {"HOME": home, "TMPDIR": home}
        out = subprocess.run([sys.executable, "-I", str(TRACER)], input=json.dumps(task), capture_output=True,
                             text=True, env=env, cwd=home, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"tracing what the exercises keep failed:\n{out.stderr[-3000:]}")
    return {"format": 1, "kept": json.loads(out.stdout)}


def write_kept(solutions: Mapping[str, str], path: Optional[Path] = None) -> Path:
    """Trace (:func:`trace`) and write :data:`KEPT_FILE` (or ``path``)."""
    path = Path(path or KEPT_FILE)
    path.write_text(json.dumps(trace(solutions), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    _stored.cache_clear()
    return path


def stale_kept(solutions: Mapping[str, str], path: Optional[Path] = None) -> list[str]:
    """The exercises whose stored kept functions differ from a fresh trace (missing ones included)."""
    path = Path(path or KEPT_FILE)
    stored = json.loads(path.read_text(encoding="utf-8")).get("kept", {}) if path.is_file() else {}
    fresh = trace(solutions)["kept"]
    return sorted(name for name in fresh if stored.get(name) != fresh[name])


# ----------------------------------------------------------------------------- the plan of one exercise
@dataclass(frozen=True)
class Outside:
    """Routines outside cnet_lib that would do an exercise's work: ``packages`` hidden from the file system,
    ``python`` functions stubbed in their files (``(module, regular expression over qualified names)``), torch
    ``operators`` (a regular expression over dispatcher names such as ``aten::upsample_linear1d``) whose
    kernels raise, and ``attributes`` (``module:name``, C functions) deleted from their modules."""

    packages: tuple[str, ...] = ()
    python: tuple[tuple[str, str], ...] = ()
    operators: str = ""
    attributes: tuple[str, ...] = ()


ODE_SOLVERS = Outside(packages=("torchdiffeq", "scipy.integrate"))
"""torchdiffeq's solvers (a Butcher tableau's step, its error norm) and scipy's (``rk_step``, RK45's error norm)."""

QUANTIZATION = Outside(
    python=(("torch.ao.quantization.fx._decomposed", r"(de)?quantize|fake_quant|choose_qparams|_quant"),
            ("torch.ao.quantization.observer", r"calculate_qparams|_calculate_qparams"),
            ("torch.ao.quantization.utils", r"calculate_qmin_qmax|determine_qparams|_quant"),
            ("torch.ao.quantization.fake_quantize", r"forward|calculate_qparams")),
    operators=r"quantiz|fake_quant|_quant_|::q_|int_repr|dequantize",
)
"""Every form of fake quantization in torch: the operators (fake_quantize_*, _fake_quantize_learnable_*,
quantize_per_*, dequantize, quantized tensors' int_repr and q_*), their Python decompositions and the observers
that compute per-channel scales."""

INTERPOLATION = Outside(
    packages=("scipy.interpolate", "scipy.ndimage", "PIL"),
    python=(("torch._decomp.decompositions", r"upsample|_upsample|grid_sampler|affine_grid|_compute_upsample"),
            ("numpy.lib._function_base_impl", r"^interp$")),
    operators=r"upsample|grid_sampler|affine_grid",
    attributes=("numpy._core._multiarray_umath:interp", "numpy._core._multiarray_umath:interp_complex",
                "numpy._core.multiarray:interp", "numpy._core.multiarray:interp_complex",
                "numpy.lib._function_base_impl:compiled_interp", "numpy.lib._function_base_impl:compiled_interp_complex"),
)
"""Linear interpolation: torch's upsampling and grid sampling (``F.interpolate``, ``grid_sample``) with their
Python decompositions, numpy's ``interp``, scipy.interpolate."""

OUTSIDE = {"rk_step": ODE_SOLVERS, "embedded_step": ODE_SOLVERS, "error_ratio": ODE_SOLVERS,
           "refine_piecewise_linear": INTERPOLATION, "quantize_per_channel": QUANTIZATION}
"""The exercises whose work a routine outside cnet_lib would do."""


@dataclass(frozen=True)
class Plan:
    """Everything taken out for one exercise: ``named`` as ``{module: qualified names}`` (``None``: every function
    of the module), the exercise's own forbidden code; ``kept`` (``{"module:qualified name"}``), the only functions
    of the students' build that stay (the rest is stubbed); the packages hidden (``hidden``: module names) and what
    lies outside the library."""

    exercise: str
    named: dict = field(default_factory=dict)
    kept: frozenset = frozenset()
    hidden: tuple[str, ...] = ()
    outside: Outside = Outside()

    def is_named(self, module: str, qualname: str) -> bool:
        """Whether ``module.qualname`` is the exercise's own forbidden code."""
        names = self.named.get(module, frozenset())
        return names is None or qualname in names

    def named_python(self) -> dict:
        """``{module: (regular expression or None for the whole module)}``: the exercise's own forbidden code and
        the outside routines stubbed for it (what :mod:`.audit` compares a cell with)."""
        out = {m: None if names is None else "^(" + "|".join(re.escape(n) for n in sorted(names)) + ")$"
               for m, names in self.named.items()}
        for module, pattern in self.outside.python:
            out[module] = pattern
        return out


def _function_name(fn) -> tuple[str, str]:
    fn = getattr(fn, "__func__", fn)
    fn = getattr(fn, "fget", fn)
    return fn.__module__, fn.__qualname__


def plan(name: str) -> Plan:
    """What is taken out while exercise ``name`` is graded (see the module doc)."""
    named: dict[str, Optional[set]] = {}
    hidden = []
    for rule in exercise(name).forbidden():
        for fn in rule.functions:
            module, qualname = _function_name(fn)
            if named.get(module, set()) is not None:
                named.setdefault(module, set()).add(qualname)
        for mod in rule.modules:
            if mod.__name__.split(".")[0] == "cnet_lib":
                named[mod.__name__] = None
            else:
                hidden.append(mod.__name__)
    outside = OUTSIDE.get(name, Outside())
    hidden += [p for p in outside.packages if p not in hidden]
    kept_names = frozenset(k for k in kept(name) if not _named_in(named, k))
    return Plan(name, {m: (None if v is None else frozenset(v)) for m, v in named.items()}, kept_names, tuple(hidden),
                outside)


def _named_in(named: dict, item: str) -> bool:
    module, _, qualname = item.partition(":")
    names = named.get(module, set())
    return names is None or qualname in names


def module_file(module: str) -> Optional[str]:
    """The file of ``module`` (its ``__init__.py`` for a package; None when it is not installed), found without
    importing it where its parent package is loaded already."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None and spec.origin not in (None, "built-in", "frozen") else None


def package_folder(module: str) -> Optional[str]:
    """The folder of package ``module`` (None when it is not installed or not a package)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return locations[0] if locations else None


# ----------------------------------------------------------------------------- the students' build for grading
@dataclass(frozen=True)
class Overlay:
    """One file put in place of another inside the sandbox: ``source`` (ours) at ``target`` (the original path)."""

    source: Path
    target: Path


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


@dataclass(frozen=True)
class _Module:
    """One module of the students' build, read once: its dotted ``name``, ``source``, ``tree``, functions and the
    names it uses while it is imported."""

    name: str
    source: str
    tree: ast.Module
    functions: tuple
    on_import: frozenset

    @classmethod
    def parse(cls, name: str, source: str) -> "_Module":
        tree = ast.parse(source)
        return cls(name, source, tree, tuple(functions(tree)), frozenset(import_time_names(tree)))


def taken_out(p: Plan, module: _Module) -> set[str]:
    """The qualified names of ``module``'s functions that exercise ``p`` takes out (see the module doc)."""
    whole = p.named.get(module.name, ()) is None
    out = set()
    for qualname, node in module.functions:
        short = qualname.rsplit(".", 1)[-1]
        named = p.is_named(module.name, qualname)
        if named and not whole:
            out.add(qualname)
        elif (f"{module.name}:{qualname}" in p.kept or short in module.on_import or _dunder(short)
              or is_property(node)):
            continue
        else:
            out.add(qualname)
    return out


def kept_in(p: Plan, module: str, path: Path) -> list[str]:
    """The qualified names of the functions of ``module`` (its file ``path``) that stay callable while exercise
    ``p`` is graded: everything :func:`taken_out` leaves."""
    read = _Module.parse(module, Path(path).read_text(encoding="utf-8"))
    gone = taken_out(p, read)
    return [q for q, _ in read.functions if q not in gone]


class GradingLibrary:
    """The students' build for grading, in ``workdir`` (see the module doc); ``mount_point``: where the sandbox
    mounts it (the installed package's folder), None without a sandbox."""

    def __init__(self, workdir: Path, mount_point: Optional[Path] = None):
        self.workdir, self.mount_point = Path(workdir), mount_point
        self.base = self.workdir / "base" / "cnet_lib"
        self._overlays: dict[str, list[Overlay]] = {}
        self._build_base()
        self._modules = {path: _Module.parse(self._module(path), path.read_text(encoding="utf-8"))
                         for path in sorted(self.base.rglob("*.py"))}

    def _build_base(self) -> None:
        root = self.base.parent
        root.mkdir(parents=True)
        shutil.copytree(installed_package(), self.base, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        strip_for_students(root)  # the same cut as the students' wheel: no teacher folder, no repository URL
        (root / "README.md").unlink(missing_ok=True)
        where = str(self.mount_point) if self.mount_point else None
        if not compileall.compile_dir(str(self.base), quiet=2, ddir=where, invalidation_mode=PYC, workers=1):
            raise RuntimeError(f"the students' build of cnet_lib in {self.base} does not compile")
        readable(self.base)

    def _module(self, path: Path) -> str:
        parts = path.relative_to(self.base.parent).with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    def folder(self, exercise: str) -> Path:
        """The folder holding exercise ``exercise``'s whole build, ``<folder>/cnet_lib`` (see the module doc),
        written once."""
        dest = self.workdir / "builds" / exercise
        if dest.exists():
            return dest
        p = plan(exercise)
        build = dest / "cnet_lib"
        shutil.copytree(self.base, build, copy_function=_link_or_copy)
        for path, module in self._modules.items():
            names = taken_out(p, module)
            if not names:
                continue
            stubbed = stub_source(module.source, names.__contains__, lambda q, m=module.name: (
                absent_message if p.is_named(m, q) else unneeded_message)(exercise, f"{m}.{q}"), tree=module.tree)
            target = build / path.relative_to(self.base)
            target.unlink()
            target.write_text(stubbed.source, encoding="utf-8")
            pyc = Path(importlib.util.cache_from_source(str(target)))
            pyc.unlink(missing_ok=True)
            shown = str(self.mount_point / path.relative_to(self.base)) if self.mount_point else str(target)
            py_compile.compile(str(target), cfile=str(pyc), dfile=shown, doraise=True, invalidation_mode=PYC)
        readable(dest)
        return dest

    def overlays(self, exercise: str) -> list[Overlay]:
        """The files outside the library that change for ``exercise`` (ours at the original paths), written once."""
        if exercise not in self._overlays:
            self._overlays[exercise] = self._write_outside(plan(exercise))
        return self._overlays[exercise]

    def _write_outside(self, p: Plan) -> list[Overlay]:
        folder = self.workdir / "stubs" / p.exercise
        out = []
        for module, pattern in sorted(p.outside.python):
            source = Path(module_file(module) or "")
            if source.is_file():  # a third-party module this installation lacks: nothing to take out
                out += self._stub_file(source, module, pattern, p.exercise, folder)
        return out

    def _stub_file(self, source: Path, module: str, pattern: str, exercise: str, folder: Path) -> list[Overlay]:
        regex = re.compile(pattern)
        stubbed = stub_source(source.read_text(encoding="utf-8"), regex.search,
                              lambda q: absent_message(exercise, f"{module}.{q}"))
        dest = folder / module.replace(".", "/") / source.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(stubbed.source, encoding="utf-8")
        out = [Overlay(dest, source)]
        pyc_target = Path(importlib.util.cache_from_source(str(source)))
        if pyc_target.is_file():  # a file that exists can be covered
            pyc = dest.with_suffix(".pyc")
            py_compile.compile(str(dest), cfile=str(pyc), dfile=str(source), doraise=True, invalidation_mode=PYC)
            out.append(Overlay(pyc, pyc_target))
        readable(folder)
        return out


def readable(path: Path) -> None:
    """Folders 0755 and files 0644 below ``path`` (the sandbox's user reads them, whatever the teacher's umask;
    nothing there is secret: the students' build and the stubs)."""
    for folder, _, files in os.walk(path):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
