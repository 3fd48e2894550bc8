"""A folder of submissions, read as data (nothing in them runs here): who handed in which chapter, and each
notebook's code cells.

The folder holds one entry per student: a folder named after the student with any of their notebooks (``.ipynb``)
or submission zips (``grader.export()``'s, or otter's), or a single file, a notebook or a zip, named after the
student (an export's ``_<chapter>_<time>`` or ``<chapter>_<time>`` part is dropped from the name).  The name is
kept exactly as the file system gives it (any script, any length, any bytes: a name that is not UTF-8, such as
the ``Jos\\xe9`` that unzipping "José" can give, arrives with the bytes it could not decode escaped, :pep:`383`):
:func:`printable` shows it (or any text holding it) as a spreadsheet and a markdown file can, undecodable bytes
written ``\\xe9`` and control characters as ``\\n``; :func:`file_key` is the stem of the student's feedback file
and the key ``--resume`` matches, one per name and never the same for two names: a plain name (lower-case ASCII
letters, digits, ``_ - .``, up to 64 characters) is its own key, any other its readable part (letters and digits
of any script, up to 60 bytes of UTF-8), ``~`` and 16 hex digits of the SHA-256 of the name's exact bytes, so that
Иван and 王伟, José and Josè, "bob smith" and "bob_smith", Alice and alice all get files of their own, and no key
is longer than 80 bytes.  A notebook's chapter comes from the metadata the student copy carries, else from its
file name, else from the exercises it defines.

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

A notebook's code cells read once, in bounded time: each cell turned into Python and parsed at most once
(:func:`read_cells`), so that everything the grader asks of a notebook afterwards (which cell defines an exercise,
the imports above it, what a cell uses) costs no more reading.

Reading is linear in the cells' sizes (:func:`cnet_lib.book.exercise_cells.cell_python`) and capped: a cell over
:data:`CELL_CAP` characters is not turned into Python nor parsed here (it is found by its ``def`` lines and still
runs in the sandbox, whose time limit bounds it) and is flagged; once one submission has spent
:data:`READ_SECONDS` on reading (its files, its cells, their audit, the similarity check) or had
:data:`READ_CHARACTERS` of code parsed (:class:`Deadline`), its remaining cells are treated the same way and
nothing more of it is audited.  A cell the parser refuses, however it refuses (a syntax
error, nesting too deep, a null byte), is "not Python" with the parser's words.
"""
from __future__ import annotations

import ast
import hashlib
import os
import re
import stat
import time
import unicodedata
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional, Sequence

from ..book.exercises.catalogue import chapter_exercises
from ..book.exercise_cells import python_and_tree
from .submission_files import READ_SECONDS, bounded_problems, file_kind, read_files

__all__ = ["Submission", "find_submissions", "add_notebook", "student_name", "MAX_FILES", "MAX_DEPTH", "CodeCell",
           "read_cells", "exercise_cell", "preamble", "Deadline", "CELL_CAP", "READ_SECONDS", "READ_CHARACTERS",
           "printable", "file_key", "name_bytes"]

MAX_FILES = 500
MAX_DEPTH = 6
_STAMP = re.compile(r"_?\d{4}_\d\d_\d\dT\d\d_\d\d_\d\d(_\d+)?$")
_SUFFIXES = (".ipynb", ".zip")


# ----------------------------------------------------------------------------- a notebook's code cells, read once
CELL_CAP = 50_000
"""Characters of one cell the grader reads (the book's longest exercise cell has under 1,500)."""
READ_CHARACTERS = 2_000_000
"""Characters of code cells one submission may have parsed (the book's eight chapters hold under 30,000)."""
_DEF = re.compile(r"^(?:async\s+)?def\s+(\w+)\s*\(", re.M)


class Deadline:
    """The reading one submission may spend: :data:`READ_SECONDS` (its files read by their own program, then its
    cells and their audit here), counted while it reads (:meth:`timing`), so that time spent on other students'
    submissions never counts against it; and :data:`READ_CHARACTERS` of code parsed (:meth:`charge`), which bounds
    the memory its parsed cells hold."""

    def __init__(self, seconds: float = READ_SECONDS, characters: int = READ_CHARACTERS):
        self.seconds, self.spent = seconds, 0.0
        self.characters, self.parsed = characters, 0

    def passed(self) -> bool:
        return self.spent > self.seconds or self.parsed > self.characters

    def why(self) -> str:
        """Why the budget is spent, in words."""
        if self.parsed > self.characters:
            return f"the submission's code cells hold over {self.characters:,} characters"
        return f"reading the submission took over {self.seconds:g} s"

    def charge(self, characters: int) -> bool:
        """Count ``characters`` about to be parsed; False (and nothing counted) when they do not fit."""
        if self.parsed + characters > self.characters:
            self.parsed = self.characters + 1
            return False
        self.parsed += characters
        return True

    @contextmanager
    def timing(self) -> Iterator[None]:
        """Count the time inside as this submission's reading."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.spent += time.perf_counter() - start


@dataclass(frozen=True)
class CodeCell:
    """One code cell: its ``index`` among the code cells, its ``source`` as handed in, ``python`` (the source as
    Python, None when not read), ``tree`` (None when not read or not Python), ``problem`` (why not, in words) and
    the names of the functions it ``defines`` at its top level."""

    index: int
    source: str
    python: Optional[str]
    tree: Optional[ast.Module]
    problem: str
    defines: frozenset

    @property
    def read(self) -> bool:
        """Whether the grader read the cell (it is Python and was parsed)."""
        return self.tree is not None


def _parse(source: str) -> tuple[Optional[str], Optional[ast.Module], str]:
    python, tree = python_and_tree(source)
    if isinstance(tree, ast.Module):
        return python, tree, ""
    if isinstance(tree, SyntaxError):
        return python, None, f"not Python (line {tree.lineno}: {tree.msg})"
    return python, None, f"not Python ({type(tree).__name__}: {str(tree)[:100] or 'the parser gave up'})"


def _read_one(index: int, source: str, deadline: Optional[Deadline]) -> CodeCell:
    by_lines = frozenset(_DEF.findall(source))
    if len(source) > CELL_CAP:
        return CodeCell(index, source, None, None, f"{len(source):,} characters, over the grader's reading cap of "
                        f"{CELL_CAP:,}: not read for flags (look at it)", by_lines)
    if deadline is not None and (deadline.passed() or not deadline.charge(len(source))):
        return CodeCell(index, source, None, None, f"not read: {deadline.why()} (look at it)", by_lines)
    with deadline.timing() if deadline is not None else nullcontext():
        python, tree, problem = _parse(source)
    if tree is None:
        return CodeCell(index, source, python, None, problem, by_lines)
    defined = frozenset(n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return CodeCell(index, source, python, tree, "", defined)


def read_cells(nb: dict, deadline: Optional[Deadline] = None) -> list[CodeCell]:
    """The code cells of ``nb`` (a notebook as :func:`.submission_files.read_notebook_data` gives it), each read
    once (see the module doc)."""
    sources = [c.get("source", "") for c in nb.get("cells", []) if isinstance(c, dict) and c.get("cell_type") == "code"]
    return [_read_one(i, s if isinstance(s, str) else "", deadline) for i, s in enumerate(sources)]


def exercise_cell(cells: list[CodeCell], name: str) -> Optional[CodeCell]:
    """The last code cell that defines ``def name(...)`` at its top level (the one "Run all" leaves in force); a
    cell that was not read counts when one of its lines starts with ``def name(``."""
    return next((c for c in reversed(cells) if name in c.defines), None)


def preamble(cells: list[CodeCell], upto: int) -> str:
    """The top-level import statements of the code cells before code cell ``upto`` (absolute imports only): what
    the grader runs before an exercise cell, so that a name imported above it (``torch``) is there."""
    lines = []
    for cell in cells[:upto]:
        if cell.tree is not None:
            lines += [ast.unparse(n) for n in cell.tree.body
                      if isinstance(n, (ast.Import, ast.ImportFrom)) and not getattr(n, "level", 0)]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- names as people write them
_PLAIN = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
_READABLE_BYTES = 60


def name_bytes(name: str) -> bytes:
    """The exact bytes of a name read from the file system (undecodable bytes as they were)."""
    try:
        return os.fsencode(name)
    except UnicodeError:  # a surrogate no file system name decodes to (from a notebook's text)
        return name.encode("utf-8", errors="surrogatepass")


def printable(text: str) -> str:
    """``text`` as valid, visible Unicode (see the module doc)."""
    out = []
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a byte the file system's name could not decode
            out.append(f"\\x{code - 0xDC00:02x}")
        elif 0xD800 <= code <= 0xDFFF or unicodedata.category(ch) in ("Cc", "Zl", "Zp"):
            out.append(ch.encode("unicode_escape", errors="backslashreplace").decode("ascii"))
        else:
            out.append(ch)
    return "".join(out)


def _readable(name: str) -> str:
    kept = "".join(ch if (ch.isalnum() or ch in "-_.") and not 0xDC80 <= ord(ch) <= 0xDCFF else "_" for ch in name)
    kept = re.sub(r"_+", "_", kept).strip("._") or "student"
    data = kept.encode("utf-8")[:_READABLE_BYTES]
    return data.decode("utf-8", errors="ignore")


def file_key(name: str) -> str:
    """The stem of ``name``'s feedback file and its key in the gradebook (see the module doc)."""
    if _PLAIN.fullmatch(name):
        return name
    return f"{_readable(name)}~{hashlib.sha256(name_bytes(name)).hexdigest()[:16]}"


# ----------------------------------------------------------------------------- who handed in what
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
