"""A class's grades as files: the gradebook (CSV, one row per student) and one feedback file per student.

The CSV has the columns ``student``, one per exercise (its points), ``total``, ``possible``, ``flags``
(``exercise: flag`` joined by `` | ``: what the teacher should look at) and ``isolation`` (how the students' code
ran: the sandbox and its limits, or that it ran without one); it opens in any spreadsheet and imports into an
LMS's gradebook by student.  A feedback file (``<student>.md``) tells the student, per exercise, the points, how
many hidden cases passed, the first that failed (with what was expected and what came back), a hint, and the
flags.  Both are written whole or not at all (a temporary file in the same folder, then renamed), so a grading
run that is stopped leaves the gradebook of the students graded so far and no half-written file.
"""
from __future__ import annotations

import csv
import io
import os
import re
from pathlib import Path
from typing import Optional, Sequence

from ..book.exercises.catalogue import info
from .grading import SubmissionGrade

__all__ = ["write_gradebook", "write_feedback", "feedback_text", "summary_line", "safe_name", "write_atomically",
           "read_rows", "header"]


def safe_name(student: str) -> str:
    """A file name for ``student`` (letters, digits, ``.-_`` only)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", student).strip("._") or "student"


def _points(value: float) -> str:
    return f"{value:g}"


def write_atomically(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` whole or not at all (a temporary file beside it, flushed, then renamed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _cell(text: str) -> str:
    """A CSV cell a spreadsheet shows as text: one that a submission's name could start with ``=``, ``+``, ``-`` or
    ``@`` (a formula) gets a leading apostrophe."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def header(exercises: Sequence[str]) -> list[str]:
    """The gradebook's columns for ``exercises``."""
    return ["student", *exercises, "total", "possible", "flags", "isolation"]


def read_rows(path: Path, exercises: Sequence[str]) -> dict[str, list]:
    """The rows of an earlier gradebook at ``path`` with the same columns, by student (empty when there is none);
    a gradebook with other columns is an error (another key's)."""
    path = Path(path)
    if not path.is_file():
        return {}
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if not rows or rows[0] != header(exercises):
        raise ValueError(f"{path} is a gradebook of other exercises than the key's: --resume continues only a "
                         "gradebook of the same key (or choose another --out)")
    return {_name(row[0]): row for row in rows[1:] if len(row) == len(rows[0])}


def _name(cell: str) -> str:
    """The student's name in a cell written by :func:`_cell`."""
    return cell[1:] if cell[:1] == "'" and cell[1:2] in ("=", "+", "-", "@", "\t", "\r") else cell


def write_gradebook(grades: Sequence[SubmissionGrade], exercises: Sequence[str], path: Path, isolation: str = "",
                    kept: Optional[dict] = None) -> Path:
    """Write the CSV gradebook of ``grades`` (columns as in the module doc), with the ``kept`` rows of an earlier
    run (``{student: row}``), sorted by student, to ``path``, atomically."""
    rows = dict(kept or {})
    for g in grades:
        flags = [f"{name}: {flag}" for name in exercises for flag in g.grades[name].flags]
        flags += [f"files: {p}" for p in g.problems]
        rows[g.student] = [_cell(g.student), *(_points(g.grades[n].points) for n in exercises), _points(g.total),
                           str(g.possible), _cell(" | ".join(flags)), isolation]
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(header(exercises))
    writer.writerows(rows[s] for s in sorted(rows))
    return write_atomically(path, buf.getvalue())


def feedback_text(grade: SubmissionGrade) -> str:
    """The feedback for one student (markdown)."""
    lines = [f"# Feedback for {grade.student}", "", f"Total: {_points(grade.total)} of {grade.possible} points.", ""]
    if grade.problems:
        lines += ["Files:", *[f"- {p}" for p in grade.problems], ""]
    for name, g in grade.grades.items():
        cases = f", {g.passed} of {g.total} hidden cases" if g.total else ""
        lines += [f"## {name} ({info(name).chapter}): {_points(g.points)} of {g.possible} points{cases}", ""]
        lines += [f"- **flag**: {flag}" for flag in g.flags] + [f"- {note}" for note in g.notes]
        lines.append("")
    return "\n".join(lines)


def write_feedback(grade: SubmissionGrade, folder: Path) -> Path:
    """Write ``<folder>/<student>.md``, atomically."""
    return write_atomically(Path(folder) / f"{safe_name(grade.student)}.md", feedback_text(grade))


def summary_line(grade: SubmissionGrade) -> str:
    """One line per student for the terminal: total and how many flags."""
    n_flags = sum(len(g.flags) for g in grade.grades.values())
    return (f"{grade.student}: {_points(grade.total)} of {grade.possible} points"
            + (f", {n_flags} flag{'s' if n_flags != 1 else ''}" if n_flags else ""))
