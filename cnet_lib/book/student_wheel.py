"""The wheel of the library that a class installs (``python -m cnet_lib student OUTDIR --wheel-url URL``), built
from a copy of the working tree so the repository gets no build folders.

A *student* wheel (:func:`build_wheel` with ``student=True``) carries no answers and no way to them
(:func:`strip_for_students`): no answer key (``cnet_lib/teacher/``: references, hidden cases, the grader), no
teacher command (``student``, ``grade``, ``answers``), no repository URL (``REPO_URL`` is emptied: the repository
holds the solutions) and, as its description, a short README of its own instead of the repository's.  What stays
is the library, the public checks with their stored answers, and graded hints.  ``tests/test_student.py``
unpacks the wheel and searches every file for the key's names, hidden cases and the URL.
"""
from __future__ import annotations

import hashlib
import importlib.util
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["SOURCE_PATHS", "TEACHER_PATHS", "StudentExportError", "build_wheel", "copy_sources", "project_version",
           "source_hash", "strip_for_students", "STUDENT_README"]

# the files a student's library is built from (relative to the repository root)
SOURCE_PATHS = ("pyproject.toml", "README.md", "cnet_lib")
# what a student's wheel leaves out (relative to the repository root)
TEACHER_PATHS = ("cnet_lib/teacher", "cnet_lib/cli/student.py", "cnet_lib/cli/grade.py", "cnet_lib/cli/answers.py")
STUDENT_README = """# cnet-lib (a class's copy)

The library your course's notebooks install: continuous-in-depth neural networks, exactly (Butcher tableaux,
integrators, bases, OdeBlock, ContinuousNet), with the public checks of the exercises (`grader.check(...)`).
`python -m cnet_lib` lists its command lines.
"""


class StudentExportError(Exception):
    """The copies cannot be written as asked; the message says what to do."""


def source_hash(root: Path) -> str:
    """SHA-256 (10 hex digits) of the files a wheel is built from."""
    h = hashlib.sha256()
    for rel in SOURCE_PATHS:
        path = root / rel
        files = sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts) if path.is_dir() else [path]
        for f in files:
            h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:10]


def project_version(root: Path) -> str:
    """The version in ``root``'s pyproject.toml, without a local label."""
    m = re.search(r'(?m)^version\s*=\s*"([^"]+)"', (root / "pyproject.toml").read_text(encoding="utf-8"))
    if not m:
        raise StudentExportError(f"no `version = \"...\"` line in {root / 'pyproject.toml'}")
    return m.group(1).split("+")[0]


def strip_for_students(src: Path) -> None:
    """Remove from the source copy ``src`` everything a student must not get (see the module doc)."""
    for rel in TEACHER_PATHS:
        path = src / rel
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    project = src / "cnet_lib" / "book" / "project.py"
    text, n = re.subn(r'(?m)^REPO_URL = "[^"]*"$', 'REPO_URL = ""  # a class\'s copy of the library names no repository',
                      project.read_text(encoding="utf-8"))
    if n != 1:
        raise StudentExportError(f"no `REPO_URL = \"...\"` line in {project}: the student wheel must not name the repository")
    project.write_text(text, encoding="utf-8")
    (src / "README.md").write_text(STUDENT_README, encoding="utf-8")


def copy_sources(root: Path, src: Path) -> None:
    """Copy :data:`SOURCE_PATHS` of ``root`` into the new folder ``src`` (no byte-compiled files): what a wheel is
    built from."""
    src.mkdir()
    for rel in SOURCE_PATHS:
        if (root / rel).is_dir():
            shutil.copytree(root / rel, src / rel, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(root / rel, src / rel)


def build_wheel(root: Path, version: str, outdir: Path, student: bool = False) -> Path:
    """Build the wheel of ``root``'s library with version ``version`` into ``outdir`` (from a copy of the sources;
    ``student``: without the teacher's files, :func:`strip_for_students`); returns its path."""
    with tempfile.TemporaryDirectory(prefix="cnet-student-wheel-") as tmp:
        src = Path(tmp) / "src"
        copy_sources(root, src)
        if student:
            strip_for_students(src)
        pyproject = (src / "pyproject.toml").read_text(encoding="utf-8")
        pyproject, n = re.subn(r'(?m)^version\s*=\s*"[^"]*"', f'version = "{version}"', pyproject, count=1)
        if n != 1:
            raise StudentExportError(f"no `version = \"...\"` line in {root / 'pyproject.toml'}")
        (src / "pyproject.toml").write_text(pyproject, encoding="utf-8")
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(Path(tmp) / "dist"), str(src)]
        if importlib.util.find_spec("setuptools") is not None:  # build with it: nothing to download
            cmd.insert(5, "--no-build-isolation")
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        wheels = sorted((Path(tmp) / "dist").glob("*.whl"))
        if out.returncode != 0 or len(wheels) != 1:
            raise StudentExportError(f"building the wheel failed:\n{out.stdout}\n{out.stderr}")
        outdir.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy2(wheels[0], outdir / wheels[0].name))
