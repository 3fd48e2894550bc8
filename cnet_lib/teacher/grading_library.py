"""The library a submission's code sees while one exercise is graded: the students' build of cnet_lib (what their
wheel holds: no answer key, no teacher command, :func:`cnet_lib.book.student_wheel.strip_for_students`), with
every function the exercise does not need taken out (:mod:`.absent`, :mod:`.kept`, :mod:`.stubbing`).

:class:`GradingLibrary` writes the students' build once per grading run into a private folder (``base``),
byte-compiled, and for each exercise a whole build of its own (:meth:`GradingLibrary.folder`: the base's files
linked, every module with a function to take out written anew with stubs, and compiled).  A function stays when
:mod:`.kept` traced it for the exercise, when its module uses it while being imported, or when it is a dunder
method or a property (a student's code may print a tableau or read ``block.n_basis``); the exercise's own
forbidden code goes even where its module uses it on import.  The sandbox mounts the exercise's build where the
teacher's cnet_lib is installed, so the student's code finds it by every way there is to import it, and no copy
of the functions taken out.  Files of torch and numpy that hold code an exercise asks for are stubbed the same way
(:meth:`GradingLibrary.overlays`) and put over the originals inside the sandbox; without a sandbox (the unsafe
mode) they cannot be replaced.
"""
from __future__ import annotations

import ast
import compileall
import importlib.util
import os
import py_compile
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..book.student_wheel import strip_for_students
from .absent import Plan, module_file, plan
from .stubbing import absent_message, functions, import_time_names, is_property, stub_source, unneeded_message

__all__ = ["GradingLibrary", "Overlay", "installed_package", "readable", "taken_out", "kept_in"]

PYC = py_compile.PycInvalidationMode.UNCHECKED_HASH  # bound read-only: never checked against a source's time stamp


def installed_package() -> Path:
    """The folder of the cnet_lib this grader runs (the one a student's ``import cnet_lib`` must not reach)."""
    return Path(__file__).resolve().parent.parent  # cnet_lib/teacher/.. is the package


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
    def read(cls, name: str, path: Path) -> "_Module":
        source = path.read_text(encoding="utf-8")
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
    read = _Module.read(module, path)
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
        self._modules = {path: _Module.read(self._module(path), path) for path in sorted(self.base.rglob("*.py"))}

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
