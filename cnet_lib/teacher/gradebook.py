"""A class's grades as files: the gradebook (CSV, one row per student) and one feedback file per student.

The CSV has the columns ``student`` (the name as the submission's file or folder gives it, undecodable bytes
written ``\\xe9``, :func:`cnet_lib.teacher.student_names.printable`), one per exercise (its points), ``total``,
``possible``, ``flag_count`` and ``flags`` (every flag, ``exercise: flag`` joined by `` | ``, the most serious
first: what the grader could not grade, files refused, crashes and limits, tampering, library code the exercise
asks for, imports above an exercise that failed, cells not read, similarity, public cases only; at most 25 of one
exercise and 30 of the files, the rest counted), ``isolation`` (how the students' code ran), ``cases``
(the grading run's nonce the row's hidden cases were drawn with, :func:`cnet_lib.teacher.keys.hidden_cases`) and
``feedback`` (the student's feedback file, named by :func:`cnet_lib.teacher.student_names.file_key`: one per
exact name, which ``--resume`` matches); it opens in any spreadsheet and imports into an LMS's gradebook by
student.  A feedback file (``<feedback>``, markdown) tells the student, per exercise, the points, how many hidden
cases passed, the first that failed (where the function's value differs, never the expected value), the hint
aimed at the student's own mistake (:mod:`.scoring`), and the flags, the most serious first; nothing in it names
a folder of the grading machine.  Both are written whole or not at all (a temporary file in the same folder, then
renamed), so a grading run that is stopped leaves the gradebook of the students graded so far and no
half-written file.
"""
from __future__ import annotations

import csv
import io
import os
from pathlib import Path
from typing import Optional, Sequence

from ..book.exercises.catalogue import info
from .grading import SEVERITY, SubmissionGrade, severity
from .student_names import file_key, printable

__all__ = ["write_gradebook", "write_feedback", "feedback_text", "summary_line", "feedback_name", "write_atomically",
           "read_rows", "header", "ordered_flags", "SEVERITY", "MAX_FLAGS_TEXT"]

MAX_FLAGS_TEXT = 30_000
"""Characters of the flags column (a spreadsheet's cell holds 32,767): the rest is counted, and in the feedback."""


def feedback_name(student: str) -> str:
    """The feedback file of ``student`` (see :func:`cnet_lib.teacher.student_names.file_key`)."""
    return f"{file_key(student)}.md"


def _points(value: float) -> str:
    return f"{value:g}"


def write_atomically(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` whole or not at all (a temporary file beside it, flushed, then renamed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{os.getpid()}.{path.name}.tmp")
    try:
        with open(tmp, "w", newline="", encoding="utf-8", errors="backslashreplace") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _cell(text: str) -> str:
    """A CSV cell a spreadsheet shows as text: one that could start a formula (``=``, ``+``, ``-``, ``@``, a tab
    or a carriage return) gets a leading apostrophe."""
    text = printable(text)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def header(exercises: Sequence[str]) -> list[str]:
    """The gradebook's columns for ``exercises``."""
    return ["student", *exercises, "total", "possible", "flag_count", "flags", "isolation", "cases", "feedback"]


def read_rows(path: Path, exercises: Sequence[str]) -> dict[str, list]:
    """The rows of an earlier gradebook at ``path`` with the same columns, by feedback file (one per exact name;
    empty when there is none); a gradebook with other columns is an error (another key's)."""
    path = Path(path)
    if not path.is_file():
        return {}
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if not rows or rows[0] != header(exercises):
        raise ValueError(f"{path} is a gradebook of other exercises than the key's (or of an older grader): --resume "
                         "continues only a gradebook of the same key (or choose another --out)")
    return {row[-1]: row for row in rows[1:] if len(row) == len(rows[0])}


def ordered_flags(grade: SubmissionGrade, exercises: Sequence[str]) -> list[str]:
    """Every flag of ``grade`` as ``exercise: flag`` (``files: ...`` for the files), the most serious first."""
    items = [(SEVERITY.index("files"), f"files: {p}") for p in grade.problems]
    items += [(severity(flag), f"{name}: {flag}") for name in exercises for flag in grade.grades[name].flags]
    return [text for _, text in sorted(items, key=lambda item: item[0])]


def _flags_cell(flags: list[str], feedback: str) -> str:
    text, shown = "", 0
    for f in flags:
        more = (" | " if text else "") + f
        if len(text) + len(more) > MAX_FLAGS_TEXT:
            return text + f" | … and {len(flags) - shown} more flags (all in {feedback})"
        text, shown = text + more, shown + 1
    return text


def write_gradebook(grades: Sequence[SubmissionGrade], exercises: Sequence[str], path: Path, isolation: str = "",
                    kept: Optional[dict] = None) -> Path:
    """Write the CSV gradebook of ``grades`` (columns as in the module doc), with the ``kept`` rows of an earlier
    run (by feedback file, as :func:`read_rows` gives them), sorted by student, to ``path``, atomically."""
    rows = dict(kept or {})
    for g in grades:
        flags, feedback = ordered_flags(g, exercises), feedback_name(g.student)
        rows[feedback] = [_cell(g.student), *(_points(g.grades[n].points) for n in exercises), _points(g.total),
                          str(g.possible), str(len(flags)), _cell(_flags_cell(flags, feedback)), isolation, g.nonce,
                          feedback]
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(header(exercises))
    writer.writerows(rows[k] for k in sorted(rows, key=lambda k: (rows[k][0].lstrip("'"), k)))
    return write_atomically(path, buf.getvalue())


def feedback_text(grade: SubmissionGrade) -> str:
    """The feedback for one student (markdown)."""
    lines = [f"# Feedback for {printable(grade.student)}", "", f"Total: {_points(grade.total)} of {grade.possible} points.", ""]
    if grade.problems:
        lines += ["Files:", *[f"- {printable(p)}" for p in grade.problems], ""]
    for name, g in grade.grades.items():
        cases = f", {g.passed} of {g.total} hidden cases" if g.total else ""
        lines += [f"## {name} ({info(name).chapter}): {_points(g.points)} of {g.possible} points{cases}", ""]
        lines += [f"- **flag**: {printable(flag)}" for flag in g.flags] + [f"- {printable(note)}" for note in g.notes]
        lines.append("")
    return "\n".join(lines)


def write_feedback(grade: SubmissionGrade, folder: Path) -> Path:
    """Write ``<folder>/<feedback file>`` (:func:`feedback_name`), atomically."""
    return write_atomically(Path(folder) / feedback_name(grade.student), feedback_text(grade))


def summary_line(grade: SubmissionGrade) -> str:
    """One line per student for the terminal: total and how many flags."""
    n_flags = sum(len(g.flags) for g in grade.grades.values()) + len(grade.problems)
    return (f"{printable(grade.student)}: {_points(grade.total)} of {grade.possible} points"
            + (f", {n_flags} flag{'s' if n_flags != 1 else ''}" if n_flags else ""))
