"""One submission graded, exercise by exercise, trusting nothing that ran on the student's side.

For each exercise of the key: the notebook's exercise cell is read (:mod:`.submissions`) and audited
(:mod:`.source_audit`); the hidden cases are drawn for this student (:func:`.keys.hidden_cases`) and the
reference's outputs computed here; the cell and the student's function run in the sandbox on the public and
hidden cases (:mod:`.sandbox_client`), and what it returned comes back as data and is compared here.

Points: the exercise's points times the fraction of hidden cases passed (rounded to 0.01).  Zero and a flag for
the teacher: library code the exercise asks to write (read in the cell, or called at run time), tampering (in
the cell, or with the public checks anywhere in the notebook), a cell that does not run (crashed), a function
still running after the time limit, a worker that died.  A flag without a deduction: every public case passes
but fewer than half of the hidden ones (answers built for the public cases?).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..book.exercises.framework import describe
from ..book.exercises.recipes import decode
from ..book.exercises.registry import chapter_exercises, exercise
from .answer_key import AnswerKey
from .keys import expected_outputs, hidden_cases
from .sandbox_client import Sandbox
from .source_audit import audit_exercise_cell, audit_other_cell, python_source
from .submissions import Submission, code_cells, exercise_cell, preamble

__all__ = ["ExerciseGrade", "SubmissionGrade", "grade_submission", "grade_exercise"]


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
    """Tampering with the public checks in the notebook's other code cells, as flags."""
    out = []
    for i, src in enumerate(code_cells(nb)):
        if i not in exercise_cells:
            out += [f"tampering with the public checks in code cell {i + 1}, {f}" for f in audit_other_cell(src)]
    return out


def grade_submission(sub: Submission, key: AnswerKey, sandbox: Sandbox) -> SubmissionGrade:
    """Grade every exercise of ``key`` in ``sub``."""
    result = SubmissionGrade(sub.student, problems=list(sub.problems))
    notebook_flags = {}
    for chapter, nb in sub.notebooks.items():
        cells = {found[0] for name in key.exercises if (found := exercise_cell(nb, name)) is not None}
        notebook_flags[chapter] = _tampering(nb, cells)
    for name in key.exercises:
        chapter = next(c for c in key.chapters if name in chapter_exercises(c))
        nb = sub.notebooks.get(chapter)
        result.grades[name] = grade_exercise(name, nb, sub.student, key, sandbox, notebook_flags.get(chapter, []))
    return result


def grade_exercise(name: str, nb: Optional[dict], student: str, key: AnswerKey, sandbox: Sandbox,
                   notebook_flags: list = ()) -> ExerciseGrade:
    """Grade exercise ``name`` of ``student``'s notebook ``nb`` (None: not handed in)."""
    grade = ExerciseGrade(name, key.points[name])
    found = exercise_cell(nb, name) if nb is not None else None
    if found is None:
        grade.notes.append("not handed in" if nb is None else f"no cell defines {name}(...)")
        return grade
    index, cell = found
    imports = preamble(nb, index)
    try:
        findings = audit_exercise_cell(cell, name, exercise(name).rules, imports)
    except SyntaxError as err:
        grade.flags.append(f"crashed: the cell is not Python (line {err.lineno}: {err.msg})")
        return grade
    grade.flags += [f"{f.kind}: {f}" for f in findings[:3]] + list(notebook_flags)
    if grade.flags:
        grade.notes.append("zero: the grader does not accept this code (see the flags)")
        return grade
    hidden = hidden_cases(name, key.secret, student)
    public = exercise(name).public()
    outcome = sandbox.run(name, python_source(cell), public + hidden, imports)
    if outcome.output:
        grade.notes.append(f"your code printed: {outcome.output[-300:]!r}")
    if outcome.status != "ok":
        grade.flags.append(("time limit: " if outcome.status == "timeout" else "crashed: ") + outcome.detail)
        return grade
    return _score(grade, outcome.result, public, hidden)


def _score(grade: ExerciseGrade, result: dict, public: list, hidden: list) -> ExerciseGrade:
    """Points from the sandbox's ``result`` on ``public + hidden``, compared with the references here."""
    if result.get("not_done"):
        grade.notes.append("not done: the function still raises NotImplementedError")
        return grade
    if "cell_error" in result:
        grade.flags.append(f"crashed: the cell raised {result['cell_error']} ({result.get('where', '')})")
        return grade
    ex, cases = exercise(grade.name), result.get("cases", [])
    if len(cases) != len(public) + len(hidden):
        grade.flags.append("crashed: the grader got a result for other cases than it asked")
        return grade
    hits = sorted({c["hit"] for c in cases if c.get("hit")})
    if hits:
        grade.flags.append(f"library: calls {', '.join(hits)} at run time, which does (part of) the exercise")
        return grade
    expected = expected_outputs(grade.name, public + hidden)
    ok = [_passes(ex, c, e) for c, e in zip(cases, expected)]
    n_public = len(public)
    grade.total, grade.passed = len(hidden), sum(ok[n_public:])
    grade.points = round(grade.possible * grade.passed / grade.total, 2)
    if all(ok[:n_public]) and grade.passed < grade.total / 2:
        grade.flags.append(f"every public case passes but only {grade.passed} of {grade.total} hidden ones: "
                           "answers built for the public cases?")
    failed = next((i for i in range(n_public, len(ok)) if not ok[i]), None)
    if failed is not None:
        grade.notes.append(_failure_note(hidden[failed - n_public], cases[failed], expected[failed]))
        grade.notes.append(f"hint: {ex.hints[0]}")
    return grade


def _passes(ex, case: dict, expected) -> bool:
    if "value" not in case:
        return False
    try:
        return bool(ex.matches(decode(case["value"]), expected))
    except Exception:  # noqa: BLE001 - a value the comparison cannot read does not match
        return False


def _failure_note(recipe: dict, case: dict, expected) -> str:
    if "error" in case:
        return f"hidden case {recipe['label']}: raised {case['error']} ({case.get('where', '')})"
    try:
        value = decode(case["value"])
    except Exception:  # noqa: BLE001 - a value that cannot be read
        return f"hidden case {recipe['label']}: expected {describe(expected)}, got a value the grader cannot read"
    if isinstance(value, dict) and isinstance(expected, dict) and set(value) == set(expected):
        differ = [k for k in expected if describe(value[k]) != describe(expected[k])]  # e.g. the rate's evaluations
        if differ:
            return f"hidden case {recipe['label']}: " + "; ".join(
                f"{k.replace('_', ' ')}: expected {describe(expected[k])}, got {describe(value[k])}" for k in differ)
    return f"hidden case {recipe['label']}: expected {describe(expected)}, got {describe(value)}"
