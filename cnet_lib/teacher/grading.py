"""Submissions graded, exercise by exercise, trusting nothing that ran on the student's side or in the sandbox.

For each exercise of the key (:func:`prepare`): the notebook's exercise cell is read (:mod:`.submissions`); a cell
that is not Python, or still the unfinished stub, is decided here; every other cell becomes a sandbox job (the
cell, the imports above it, the public cases and the hidden ones drawn for this student,
:func:`.keys.hidden_cases`), run where the code the exercise asks for is absent (:mod:`.sandbox_client`).  The
sandbox's values come back as data and are compared here with the references' (:func:`.keys.expected_outputs`);
a counted rate's evaluations are the ones this process counted (:mod:`.rate_server`).

Points: the exercise's points times the fraction of hidden cases passed (rounded to 0.01).  Zero and a flag: a
cell that does not run (crashed), a function still running after the time limit, a sandbox out of memory.  A case
that calls code the exercise asks for fails (the code is absent: a stub raises), with a flag.  Flags without a
deduction, for the teacher to look at: every public case passes but fewer than half of the hidden ones; the cell
resembles the library's own code for the exercise (:mod:`.similarity`); the cell or another cell of the notebook
reads like tampering (:mod:`.source_audit`: feedback, never the barrier).
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Optional

from ..book.exercises.framework import describe
from ..book.exercises.recipes import decode
from ..book.exercises.registry import chapter_exercises, exercise
from .answer_key import AnswerKey
from .keys import expected_outputs, hidden_cases
from .sandbox_client import Job, Outcome, Sandbox
from .similarity import compare
from .source_audit import audit_exercise_cell, audit_other_cell, python_source
from .stubbing import ABSENT_MARK
from .submissions import Submission, code_cells, exercise_cell, preamble

__all__ = ["ExerciseGrade", "SubmissionGrade", "prepare", "finish", "grade_submissions", "grade_submission",
           "unfinished_stub"]


@dataclass
class ExerciseGrade:
    """One exercise's result: ``points`` of ``possible``, hidden cases ``passed`` of ``total``, ``flags`` (for the
    teacher) and ``notes`` (feedback for the student)."""

    name: str
    possible: int
    points: float = 0.0
    passed: int = 0
    total: int = 0
    flags: list = field(default_factory=list)
    notes: list = field(default_factory=list)


@dataclass
class SubmissionGrade:
    """A student's grades, by exercise, and what was wrong with the files (``problems``)."""

    student: str
    grades: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)

    @property
    def total(self) -> float:
        return round(sum(g.points for g in self.grades.values()), 2)

    @property
    def possible(self) -> int:
        return sum(g.possible for g in self.grades.values())


def _tampering(nb: dict, exercise_cells: set) -> list[str]:
    """What in the notebook's other code cells reads like tampering with the public checks (a flag to look at)."""
    out = []
    for i, src in enumerate(code_cells(nb)):
        if i not in exercise_cells:
            out += [f"look at code cell {i + 1} (no points taken): {f}" for f in audit_other_cell(src)]
    return out


def unfinished_stub(source: str, name: str) -> bool:
    """Whether the cell is nothing but imports and ``def name(...)`` whose body only raises NotImplementedError (a
    docstring aside): the unfinished exercise, decided without running it."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    defs = [n for n in body if isinstance(n, ast.FunctionDef)]
    others = [n for n in body if not isinstance(n, (ast.FunctionDef, ast.Import, ast.ImportFrom))
              and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    imported = {a.asname or a.name.split(".")[0] for n in body if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    if others or len(defs) != 1 or defs[0].name != name or defs[0].decorator_list or name in imported:
        return False
    stmts = defs[0].body[1:] if ast.get_docstring(defs[0]) is not None else defs[0].body
    if len(stmts) != 1 or not isinstance(stmts[0], ast.Raise) or stmts[0].exc is None:
        return False
    exc = stmts[0].exc.func if isinstance(stmts[0].exc, ast.Call) else stmts[0].exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def _read_cell(grade: ExerciseGrade, cell: str, imports: str) -> Optional[str]:
    """The cell as Python with the source reading's notes and flags added to ``grade``; None when it is not Python."""
    try:
        findings = audit_exercise_cell(cell, grade.name, exercise(grade.name).rules, imports)
    except SyntaxError as err:
        grade.flags.append(f"crashed: the cell is not Python (line {err.lineno}: {err.msg})")
        return None
    for f in findings[:3]:
        if f.kind == "library":
            grade.notes.append(f"you called library code the exercise asks you to write ({f}); it is absent while the "
                               "exercise is graded")
        else:
            grade.flags.append(f"look at (no points taken): {f}")
    return python_source(cell)


def _prepare_exercise(name: str, nb: Optional[dict], student: str, key: AnswerKey,
                      notebook_flags: list) -> tuple[ExerciseGrade, Optional[Job]]:
    grade = ExerciseGrade(name, key.points[name])
    found = exercise_cell(nb, name) if nb is not None else None
    if found is None:
        grade.notes.append("not handed in" if nb is None else f"no cell defines {name}(...)")
        return grade, None
    index, cell = found
    imports = preamble(nb, index)
    source = _read_cell(grade, cell, imports)
    if source is None:
        return grade, None
    grade.flags += list(notebook_flags)
    if unfinished_stub(source, name):
        grade.notes.append("not done: the function still raises NotImplementedError")
        return grade, None
    similar = compare(source, name)
    if similar is not None and similar.noted:
        grade.notes.append(similar.note())
        if similar.flagged:
            grade.flags.append(f"look at (no points taken): {similar.note()}")
    hidden = hidden_cases(name, key.secret, student)
    grade.total = len(hidden)
    return grade, Job(name, source, exercise(name).public() + hidden, imports, key=(student, name, len(hidden)))


def prepare(sub: Submission, key: AnswerKey) -> tuple[SubmissionGrade, list[Job]]:
    """The grades decided without running anything, and a sandbox job for every other exercise of ``key``."""
    result = SubmissionGrade(sub.student, problems=list(sub.problems))
    notebook_flags = {}
    for chapter, nb in sub.notebooks.items():
        cells = {found[0] for name in key.exercises if (found := exercise_cell(nb, name)) is not None}
        notebook_flags[chapter] = _tampering(nb, cells)
    jobs = []
    for name in key.exercises:
        chapter = next(c for c in key.chapters if name in chapter_exercises(c))
        grade, job = _prepare_exercise(name, sub.notebooks.get(chapter), sub.student, key, notebook_flags.get(chapter, []))
        result.grades[name] = grade
        jobs += [job] if job is not None else []
    return result, jobs


def finish(grade: ExerciseGrade, job: Job, outcome: Outcome) -> ExerciseGrade:
    """Score ``grade`` from the sandbox's ``outcome`` of ``job``."""
    if outcome.output:
        grade.notes.append(f"your code printed: {outcome.output[-300:]!r}")
    if outcome.status != "ok":
        grade.flags.append(("time limit: " if outcome.status == "timeout" else "crashed: ") + outcome.detail)
        return grade
    if outcome.detail:
        grade.flags.append(f"look at: {outcome.detail}")
    result = outcome.result
    for failed in result.get("failed_imports", [])[:3]:
        grade.notes.append(f"an import above the exercise failed in the grader: {failed}")
    if result["kind"] == "not_done":
        grade.notes.append("not done: the function still raises NotImplementedError")
    elif result["kind"] == "cell_error":
        grade.flags.append(f"crashed: the cell raised {result['error']} ({result['where']})")
    else:
        _score(grade, job, result["cases"], outcome.evaluations)
    return grade


def _absent_calls(cases: list) -> list[str]:
    found = {m.group(1) for c in cases if "error" in c
             for m in [re.search(rf"{ABSENT_MARK}: (.+?) is not available", c["error"])] if m}
    return sorted(found)


def _score(grade: ExerciseGrade, job: Job, cases: list, evaluations: dict) -> None:
    ex, n_hidden = exercise(grade.name), job.key[2]
    n_public = len(job.recipes) - n_hidden
    absent = _absent_calls(cases)
    if absent:
        grade.flags.append(f"library: calls {', '.join(absent[:3])}, which the exercise asks you to write (absent "
                           "while it is graded: those cases failed)")
    expected = expected_outputs(grade.name, job.recipes)
    ok = [_passes(ex, c, e, evaluations.get(i)) for i, (c, e) in enumerate(zip(cases, expected))]
    grade.passed = sum(ok[n_public:])
    grade.points = round(grade.possible * grade.passed / grade.total, 2)
    if all(ok[:n_public]) and grade.passed < grade.total / 2:
        grade.flags.append(f"every public case passes but only {grade.passed} of {grade.total} hidden ones: "
                           "answers built for the public cases?")
    failed = next((i for i in range(n_public, len(ok)) if not ok[i]), None)
    if failed is not None:
        grade.notes.append(_failure_note(job.recipes[failed], cases[failed], expected[failed], evaluations.get(failed)))
        grade.notes.append(f"hint: {ex.hints[0]}")


def _value(case: dict, evaluations: Optional[int]):
    """The student's value of a case as the reference's is observed (with the counted rate's evaluations)."""
    value = decode(case["value"])
    return value if evaluations is None else {"returned": value, "rate_evaluations": evaluations}


def _passes(ex, case: dict, expected, evaluations: Optional[int]) -> bool:
    if "value" not in case:
        return False
    try:
        return bool(ex.matches(_value(case, evaluations), expected))
    except Exception:  # noqa: BLE001 - a value the comparison cannot read does not match
        return False


def _failure_note(recipe: dict, case: dict, expected, evaluations: Optional[int]) -> str:
    if "error" in case:
        return f"hidden case {recipe['label']}: raised {case['error']} ({case.get('where', '')})"
    try:
        value = _value(case, evaluations)
    except Exception:  # noqa: BLE001 - a value that cannot be read
        return f"hidden case {recipe['label']}: expected {describe(expected)}, got a value the grader cannot read"
    if isinstance(value, dict) and isinstance(expected, dict) and set(value) == set(expected):
        differ = [k for k in expected if describe(value[k]) != describe(expected[k])]  # e.g. the rate's evaluations
        if differ:
            return f"hidden case {recipe['label']}: " + "; ".join(
                f"{k.replace('_', ' ')}: expected {describe(expected[k])}, got {describe(value[k])}" for k in differ)
    return f"hidden case {recipe['label']}: expected {describe(expected)}, got {describe(value)}"


def grade_submissions(subs: Iterable[Submission], key: AnswerKey, sandbox: Sandbox) -> Iterator[SubmissionGrade]:
    """Grade ``subs``; yields each student's grade as soon as all of its sandboxes have ended, in the given order."""
    grades, waiting, jobs = [], [], []
    for i, sub in enumerate(subs):
        grade, own = prepare(sub, key)
        grades.append(grade)
        waiting.append(len(own))
        jobs += [Job(j.exercise, j.cell, j.recipes, j.preamble, key=(i, *j.key[1:])) for j in own]
    done = 0
    while done < len(grades) and waiting[done] == 0:
        yield grades[done]
        done += 1
    for job, outcome in sandbox.run_many(jobs):
        i, name, _ = job.key
        finish(grades[i].grades[name], job, outcome)
        waiting[i] -= 1
        while done < len(grades) and waiting[done] == 0:
            yield grades[done]
            done += 1


def grade_submission(sub: Submission, key: AnswerKey, sandbox: Sandbox) -> SubmissionGrade:
    """Grade one submission."""
    return next(grade_submissions([sub], key, sandbox))
