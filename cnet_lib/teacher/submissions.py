"""A folder of submissions, read as data (nothing in them runs here): who handed in which chapter, and each
exercise's cell.

The folder holds one entry per student: a folder named after the student with any of their notebooks (``.ipynb``)
or submission zips (``grader.export()``'s, or otter's), or a single file, a notebook or a zip, named after the
student (an export's ``_<chapter>_<time>`` or ``<chapter>_<time>`` part is dropped from the name).  A notebook's
chapter comes from the metadata the student copy carries, else from its file name, else from the exercises it
defines.  Unreadable files are reported, never fatal.
"""
from __future__ import annotations

import ast
import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from ..book.exercises.registry import chapter_exercises
from .source_audit import python_source

__all__ = ["Submission", "find_submissions", "exercise_cell", "preamble", "code_cells", "read_notebook_data"]

MAX_NOTEBOOK_BYTES = 50 * 1024 * 1024
_STAMP = re.compile(r"_?\d{4}_\d\d_\d\dT\d\d_\d\d_\d\d(_\d+)?$")


@dataclass
class Submission:
    """One student's notebooks: ``notebooks[chapter]`` (the notebook as JSON data), ``files[chapter]`` (where it was
    read), and ``problems`` (files that could not be read, chapters handed in twice)."""

    student: str
    notebooks: dict = field(default_factory=dict)
    files: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)


def read_notebook_data(data: bytes, where: str) -> dict:
    """A notebook from its bytes (JSON with a list of cells), or ValueError saying what is wrong."""
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise ValueError(f"{where} is larger than {MAX_NOTEBOOK_BYTES // 2**20} MB")
    try:
        nb = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise ValueError(f"{where} is not a notebook ({type(err).__name__})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError(f"{where} is not a notebook (no list of cells)")
    return nb


def _notebooks_in(path: Path, problems: list) -> list[tuple[str, dict]]:
    """``(where, notebook)`` of a ``.ipynb`` file or of every ``.ipynb`` inside a ``.zip``."""
    out = []
    try:
        if path.suffix == ".ipynb":
            out.append((path.name, read_notebook_data(path.read_bytes(), path.name)))
        elif path.suffix == ".zip":
            with zipfile.ZipFile(path) as zf:
                for info in zf.infolist():
                    if info.filename.endswith(".ipynb") and not info.filename.startswith("__MACOSX"):
                        if info.file_size > MAX_NOTEBOOK_BYTES:
                            raise ValueError(f"{info.filename} is larger than {MAX_NOTEBOOK_BYTES // 2**20} MB")
                        out.append((f"{path.name}:{info.filename}", read_notebook_data(zf.read(info), info.filename)))
    except (OSError, ValueError, zipfile.BadZipFile) as err:
        problems.append(f"{path.name}: {err}")
    return out


def _defined(nb: dict) -> set[str]:
    names = set()
    for src in code_cells(nb):
        try:
            names |= {n.name for n in ast.parse(python_source(src)).body if isinstance(n, ast.FunctionDef)}
        except SyntaxError:
            continue
    return names


def _chapter(nb: dict, where: str, chapters: Sequence[str]) -> Optional[str]:
    meta = (nb.get("metadata") or {}).get("cnet_student_copy") or {}
    if meta.get("chapter") in chapters:
        return meta["chapter"]
    name = where.rsplit(":", 1)[-1].rsplit("/", 1)[-1]
    stem = _STAMP.sub("", name[: -len(".ipynb")] if name.endswith(".ipynb") else name)
    if stem in chapters:
        return stem
    defined = _defined(nb)
    found = [c for c in chapters if set(chapter_exercises(c)) & defined]
    return found[0] if len(found) == 1 else None


def _student_name(path: Path, chapters: Sequence[str]) -> str:
    stem = _STAMP.sub("", path.stem if path.is_file() else path.name)
    for c in sorted(chapters, key=len, reverse=True):
        if stem.endswith("_" + c) and len(stem) > len(c) + 1:
            return stem[: -len(c) - 1]
    return stem


def find_submissions(folder: Path, chapters: Sequence[str]) -> list[Submission]:
    """Every student's submission in ``folder`` (see the module doc), sorted by student."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder of submissions")
    by_student: dict[str, Submission] = {}
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(".") or not (entry.is_dir() or entry.suffix in (".ipynb", ".zip")):
            continue
        sub = by_student.setdefault(_student_name(entry, chapters), Submission(_student_name(entry, chapters)))
        files = sorted(p for p in entry.rglob("*") if p.suffix in (".ipynb", ".zip")) if entry.is_dir() else [entry]
        for path in files:
            for where, nb in _notebooks_in(path, sub.problems):
                chapter = _chapter(nb, where, chapters)
                if chapter is None:
                    sub.problems.append(f"{where}: no chapter of this class (its exercises are none of the key's)")
                    continue
                if chapter in sub.notebooks:
                    sub.problems.append(f"{chapter} handed in twice: {sub.files[chapter]} and {where}; graded {where}")
                sub.notebooks[chapter], sub.files[chapter] = nb, where
    return [by_student[k] for k in sorted(by_student)]


def code_cells(nb: dict) -> list[str]:
    """The sources of the notebook's code cells, in order."""
    out = []
    for cell in nb.get("cells", []):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            src = cell.get("source", "")
            out.append("".join(src) if isinstance(src, list) else str(src))
    return out


def exercise_cell(nb: dict, name: str) -> Optional[tuple[int, str]]:
    """``(index among the code cells, source)`` of the last code cell that defines ``def name(...)`` at its top
    level (the one "Run all" leaves in force), or None."""
    found = None
    for i, src in enumerate(code_cells(nb)):
        try:
            tree = ast.parse(python_source(src))
        except SyntaxError:
            if re.search(rf"^def {re.escape(name)}\s*\(", src, flags=re.M):
                found = (i, src)
            continue
        if any(isinstance(n, ast.FunctionDef) and n.name == name for n in tree.body):
            found = (i, src)
    return found


def preamble(nb: dict, upto: int) -> str:
    """The top-level import statements of the code cells before code cell ``upto``: what the grader runs before an
    exercise cell, so that a name imported above it (``torch``) is there."""
    lines = []
    for src in code_cells(nb)[:upto]:
        try:
            tree = ast.parse(python_source(src))
        except SyntaxError:
            continue
        lines += [ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)) and not getattr(n, "level", 0)]
    return "\n".join(lines)
