"""The library a submission's code sees while one exercise is graded: the students' build of cnet_lib (what their
wheel holds: no answer key, no teacher command, :func:`cnet_lib.book.student_wheel.strip_for_students`), with the
code the exercise asks for taken out (:mod:`.absent`, :mod:`.stubbing`).

:class:`GradingLibrary` writes the students' build once per grading run into a private folder (``base``), byte-
compiled, and for each exercise the files that change: a stubbed copy of every library module and of every
torch or numpy file that holds code the exercise asks for, each with its compiled ``.pyc``.  The sandbox mounts
``base`` where the teacher's cnet_lib is installed, and each stubbed file over the original
(:meth:`GradingLibrary.overlays`), so the student's code finds the students' build by every way there is to
import it, and no copy of the functions taken out.  Without a sandbox (``mount_point=None``, the unsafe mode)
:meth:`GradingLibrary.folder` is a full copy per exercise instead, and torch's own files cannot be replaced.
"""
from __future__ import annotations

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
from .stubbing import absent_message, stub_source

__all__ = ["GradingLibrary", "Overlay", "installed_package", "readable"]

PYC = py_compile.PycInvalidationMode.UNCHECKED_HASH  # bound read-only: never checked against a source's time stamp


def installed_package() -> Path:
    """The folder of the cnet_lib this grader runs (the one a student's ``import cnet_lib`` must not reach)."""
    return Path(__file__).resolve().parent.parent  # cnet_lib/teacher/.. is the package


@dataclass(frozen=True)
class Overlay:
    """One file put in place of another inside the sandbox: ``source`` (ours) at ``target`` (the original path)."""

    source: Path
    target: Path


class GradingLibrary:
    """The students' build for grading, in ``workdir`` (see the module doc); ``mount_point``: where the sandbox
    mounts it (the installed package's folder), None without a sandbox."""

    def __init__(self, workdir: Path, mount_point: Optional[Path] = None):
        self.workdir, self.mount_point = Path(workdir), mount_point
        self.base = self.workdir / "base" / "cnet_lib"
        self._plans: dict[str, list[Overlay]] = {}
        self._build_base()

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

    def _library_target(self, module: str) -> Path:
        parts = module.split(".")[1:]
        path = self.base.joinpath(*parts)
        return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")

    def overlays(self, exercise: str) -> list[Overlay]:
        """The files that change for ``exercise`` (ours at the original paths; see the module doc), written once."""
        if exercise not in self._plans:
            self._plans[exercise] = self._write(plan(exercise))
        return self._plans[exercise]

    def _write(self, p: Plan) -> list[Overlay]:
        folder = self.workdir / "stubs" / p.exercise
        out = []
        for module, pattern in sorted(p.stubbed_python().items()):
            ours = module.split(".")[0] == "cnet_lib"
            source = self._library_target(module) if ours else Path(module_file(module) or "")
            if not source.is_file():
                if ours:
                    raise RuntimeError(f"{module} (taken out for {p.exercise}) is not a file of the students' build")
                continue  # a third-party module this installation lacks: nothing to take out
            target = self._mounted(source) if ours else source
            out += self._stub_file(source, target, module, pattern, p.exercise, folder)
        return out

    def _mounted(self, path: Path) -> Path:
        """Where ``path`` of the base appears inside the sandbox."""
        if self.mount_point is None:
            return path
        return self.mount_point / path.relative_to(self.base)

    def _stub_file(self, source: Path, target: Path, module: str, pattern: Optional[str], exercise: str,
                   folder: Path) -> list[Overlay]:
        regex = re.compile(pattern) if pattern else None
        stubbed = stub_source(source.read_text(encoding="utf-8"), (lambda q: True) if regex is None else regex.search,
                              lambda q: absent_message(exercise, f"{module}.{q}"), whole=regex is None)
        dest = folder / module.replace(".", "/") / target.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(stubbed.source, encoding="utf-8")
        out = [Overlay(dest, target)]
        pyc_target = Path(importlib.util.cache_from_source(str(target)))
        if module.split(".")[0] == "cnet_lib" or pyc_target.is_file():  # a file that exists can be covered
            pyc = dest.with_suffix(".pyc")
            py_compile.compile(str(dest), cfile=str(pyc), dfile=str(target), doraise=True, invalidation_mode=PYC)
            out.append(Overlay(pyc, pyc_target))
        readable(folder)
        return out

    def folder(self, exercise: str) -> Path:
        """Without a sandbox: a folder holding a whole cnet_lib for ``exercise`` (the base with its stubbed library
        files copied in; files outside the library cannot be replaced there)."""
        dest = self.workdir / "copies" / exercise
        if not dest.exists():
            shutil.copytree(self.base, dest / "cnet_lib", copy_function=_link_or_copy)
            for overlay in self.overlays(exercise):
                if self.base in overlay.target.parents:
                    target = dest / "cnet_lib" / overlay.target.relative_to(self.base)
                    target.unlink(missing_ok=True)
                    shutil.copy2(overlay.source, target)
        return dest


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
