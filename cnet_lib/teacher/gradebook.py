"""A class's grades as files: the gradebook (CSV, one row per student) and one feedback file per student.

The CSV has the columns ``student``, one per exercise (its points), ``total``, ``possible`` and ``flags``
(``exercise: flag`` joined by `` | ``: what the teacher should look at); it opens in any spreadsheet and imports
into an LMS's gradebook by student.  A feedback file (``<student>.md``) tells the student, per exercise, the
points, how many hidden cases passed, the first that failed (with what was expected and what came back), a hint,
and the flags.
"""
from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Sequence

from ..book.exercises.catalogue import info
from .grading import SubmissionGrade

__all__ = ["write_gradebook", "write_feedback", "feedback_text", "summary_line", "safe_name"]


def safe_name(student: str) -> str:
    """A file name for ``student`` (letters, digits, ``.-_`` only)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", student).strip("._") or "student"


def _points(value: float) -> str:
    return f"{value:g}"


def write_gradebook(grades: Sequence[SubmissionGrade], exercises: Sequence[str], path: Path) -> Path:
    """Write the CSV gradebook of ``grades`` (columns as in the module doc) to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["student", *exercises, "total", "possible", "flags"])
        for g in grades:
            flags = [f"{name}: {flag}" for name in exercises for flag in g.grades[name].flags]
            flags += [f"files: {p}" for p in g.problems]
            writer.writerow([g.student, *(_points(g.grades[n].points) for n in exercises), _points(g.total), g.possible,
                             " | ".join(flags)])
    return path


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
    """Write ``<folder>/<student>.md``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{safe_name(grade.student)}.md"
    path.write_text(feedback_text(grade), encoding="utf-8")
    return path


def summary_line(grade: SubmissionGrade) -> str:
    """One line per student for the terminal: total and how many flags."""
    n_flags = sum(len(g.flags) for g in grade.grades.values())
    return (f"{grade.student}: {_points(grade.total)} of {grade.possible} points"
            + (f", {n_flags} flag{'s' if n_flags != 1 else ''}" if n_flags else ""))
