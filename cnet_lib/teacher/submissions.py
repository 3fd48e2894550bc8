"""A folder of submissions, read as data (nothing in them runs here): who handed in which chapter, and each
notebook's code cells.

The folder holds one entry per student: a folder named after the student with any of their notebooks (``.ipynb``)
or submission zips (``grader.export()``'s, or otter's), or a single file, a notebook or a zip, named after the
student (an export's ``_<chapter>_<time>`` or ``<chapter>_<time>`` part is dropped from the name).  The name is
kept exactly as the file system gives it (:mod:`.student_names`).  A notebook's chapter comes from the metadata
the student copy carries, else from its file name, else from the exercises it defines.

Nothing a submission is or holds stops the reading of the others: a symbolic link (to a classmate's notebook, say)
or a special file (a FIFO, a device) is refused, never followed or opened for reading; a folder is walked without
following links, up to :data:`MAX_FILES` entries and :data:`MAX_DEPTH` levels; one student's files are read by a
program of their own, within that student's reading time and memory (:func:`.submission_files.read_files`); every
file that cannot be read, however it fails, is a sentence in the student's ``problems``, at most
:data:`.submission_files.MAX_PROBLEMS` of them and the rest counted.  Hidden entries (a name starting with ``.``:
``.ipynb_checkpoints``, ``.DS_Store``) are not submissions.

A chapter handed in twice (a browser's ``how_to_use (1).ipynb`` beside ``how_to_use.ipynb``, two exports) is
graded from the newer notebook, by the time it was saved (its zip entry's time stamp, else its file's modification
time; the later by name where the times are equal), and the problem names both.
"""
from __future__ import annotations

import os
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from ..book.exercises.registry import chapter_exercises
from .submission_cells import CodeCell, Deadline, read_cells
from .submission_files import bounded_problems, file_kind, read_files

__all__ = ["Submission", "find_submissions", "add_notebook", "student_name", "MAX_FILES", "MAX_DEPTH"]

MAX_FILES = 500
MAX_DEPTH = 6
_STAMP = re.compile(r"_?\d{4}_\d\d_\d\dT\d\d_\d\d_\d\d(_\d+)?$")
_SUFFIXES = (".ipynb", ".zip")


@dataclass
class Submission:
    """One student's notebooks: ``notebooks[chapter]`` (the notebook as plain data), ``files[chapter]`` (where it
    was read), ``problems`` (files that could not be read, chapters handed in twice), and the code cells of each
    chapter read once (:meth:`cells`, within ``deadline``)."""

    student: str
    notebooks: dict = field(default_factory=dict)
    files: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)
    deadline: Deadline = field(default_factory=Deadline, repr=False)
    saved: dict = field(default_factory=dict, repr=False)
    _cells: dict = field(default_factory=dict, repr=False)

    def cells(self, chapter: str) -> list[CodeCell]:
        """The code cells of the student's notebook of ``chapter``, read once."""
        if chapter not in self._cells:
            self._cells[chapter] = read_cells(self.notebooks[chapter], self.deadline)
        return self._cells[chapter]


def _chapter(nb: dict, where: str, chapters: Sequence[str], deadline: Deadline) -> Optional[str]:
    meta = nb["metadata"].get("cnet_student_copy")
    if isinstance(meta, dict) and isinstance(meta.get("chapter"), str) and meta["chapter"] in chapters:
        return meta["chapter"]
    name = where.rsplit(":", 1)[-1].rsplit("/", 1)[-1]
    stem = _STAMP.sub("", name[: -len(".ipynb")] if name.endswith(".ipynb") else name)
    if stem in chapters:
        return stem
    defined = set().union(*(c.defines for c in read_cells(nb, deadline)))
    found = [c for c in chapters if set(chapter_exercises(c)) & defined]
    return found[0] if len(found) == 1 else None


def student_name(entry: str, is_file: bool, chapters: Sequence[str]) -> str:
    """The student a top-level entry of the folder belongs to (its name without a suffix, time stamp or chapter)."""
    stem = entry
    if is_file:
        stem = next((entry[: -len(s)] for s in _SUFFIXES if entry.endswith(s)), entry)
    stem = _STAMP.sub("", stem)
    for c in sorted(chapters, key=len, reverse=True):
        if stem.endswith("_" + c) and len(stem) > len(c) + 1:
            return stem[: -len(c) - 1]
    return stem


def _walk(folder: Path, problems: list) -> list[Path]:
    """The ``.ipynb`` and ``.zip`` files below ``folder`` (no link followed; bounded), sorted; links and special
    files among them go to ``problems``."""
    found, seen = [], 0
    for root, dirs, files in os.walk(folder, followlinks=False):
        depth = len(Path(root).relative_to(folder).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not d.startswith("__MACOSX") and depth < MAX_DEPTH)
        for name in sorted(files):
            seen += 1
            if seen > MAX_FILES:
                problems.append(f"{folder.name}: more than {MAX_FILES} files; the rest not read")
                return sorted(found)
            if not name.startswith(".") and name.endswith(_SUFFIXES):
                found.append(Path(root) / name)
        for name in dirs:
            if (Path(root) / name).is_symlink():
                problems.append(f"{name} is a symbolic link to a folder: not followed (hand in the folder itself)")
    return sorted(found)


def _files_of(entry: os.DirEntry, problems: list) -> list[Path]:
    """The files of one top-level entry to read (links and special files refused into ``problems``)."""
    mode = entry.stat(follow_symlinks=False).st_mode
    if stat.S_ISLNK(mode):
        problems.append(f"{entry.name} is a symbolic link: refused (hand in the file or folder itself)")
        return []
    if stat.S_ISDIR(mode):
        return _walk(Path(entry.path), problems)
    if not stat.S_ISREG(mode):
        problems.append(f"{entry.name} is {file_kind(mode)}, not a file: refused")
        return []
    return [Path(entry.path)]


def _entries(folder: Path) -> list[os.DirEntry]:
    """The top-level entries that are submissions (see the module doc), by name."""
    with os.scandir(folder) as it:
        entries = [e for e in it if not e.name.startswith(".")]
    out = []
    for e in sorted(entries, key=lambda e: e.name):
        try:
            mode = e.stat(follow_symlinks=False).st_mode
        except OSError:
            continue
        if stat.S_ISDIR(mode) or stat.S_ISLNK(mode) or e.name.endswith(_SUFFIXES):
            out.append(e)
    return out


def _when(saved: float) -> str:
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(saved))
    except (OverflowError, ValueError, OSError):
        return "an unknown time"


def add_notebook(sub: Submission, where: str, nb: dict, saved: float, chapters: Sequence[str]) -> None:
    """Add the notebook ``nb`` read from ``where`` (saved at ``saved``, seconds since the epoch) to ``sub``: under
    its chapter, the newer of two (see the module doc)."""
    chapter = _chapter(nb, where, chapters, sub.deadline)
    if chapter is None:
        sub.problems.append(f"{where}: no chapter of this class (its exercises are none of the key's)")
        return
    if chapter in sub.notebooks:
        before, was = sub.files[chapter], sub.saved[chapter]
        newer = saved >= was
        kept = where if newer else before
        sub.problems.append(f"{chapter} handed in twice: {before} (saved {_when(was)}) and {where} (saved "
                            f"{_when(saved)}); graded {kept}, the newer")
        if not newer:
            return
        sub._cells.pop(chapter, None)
    sub.notebooks[chapter], sub.files[chapter], sub.saved[chapter] = nb, where, saved


def find_submissions(folder: Path, chapters: Sequence[str]) -> list[Submission]:
    """Every student's submission in ``folder`` (see the module doc), sorted by student."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder of submissions")
    files: dict[str, list] = {}
    by_student: dict[str, Submission] = {}
    for entry in _entries(folder):
        is_dir = entry.is_dir(follow_symlinks=False) or entry.is_symlink()
        name = student_name(entry.name, not is_dir, chapters)
        sub = by_student.setdefault(name, Submission(name))
        try:
            files.setdefault(name, []).extend(_files_of(entry, sub.problems))
        except Exception as err:  # noqa: BLE001 - one entry the grader cannot walk is its student's sentence
            sub.problems.append(f"{entry.name} could not be read ({type(err).__name__}: {str(err)[:200]})")
    for name, sub in by_student.items():
        try:
            _read(sub, files.get(name, []), chapters)
        except Exception as err:  # noqa: BLE001 - nor one submission the grader cannot read
            sub.notebooks.clear()
            sub.problems.append(f"the grader could not read these files ({type(err).__name__}: {str(err)[:200]}): "
                                "not graded (look at them)")
        sub.problems = bounded_problems(sub.problems)
    return [by_student[k] for k in sorted(by_student)]


def _read(sub: Submission, paths: list, chapters: Sequence[str]) -> None:
    """Read ``paths`` into ``sub`` (in a program of their own, within the submission's reading time)."""
    notebooks, problems, seconds = read_files(paths, sub.deadline.seconds)
    sub.deadline.spent += seconds
    sub.problems += problems
    for where, nb, saved in notebooks:
        add_notebook(sub, where, nb, saved, chapters)
