"""Submissions graded, exercise by exercise, trusting nothing that ran on the student's side or in the sandbox.

For each exercise of the key (:func:`prepare`): the notebook's exercise cell is found among its code cells, read
once and within bounds (:mod:`.submissions`); a cell that is not Python, or still the unfinished stub, is
decided here; every other cell becomes a sandbox job (the cell, the imports above it, the public cases and the
hidden ones drawn for this student and this grading run, :func:`.keys.hidden_cases`), run where the code the
exercise asks for is absent (:mod:`.sandbox_client`).  The sandbox's values come back as data and are compared
here with the references' (:func:`.keys.expected_outputs`); a counted rate's evaluations are the ones this
process counted (:mod:`.rate_server`).  Points and feedback: :mod:`.scoring`.

Zero and a flag: a cell that does not run (crashed), a function still running after the time limit, a sandbox
out of memory, and anything of one submission the grader itself cannot read or grade (a ``grader:`` flag that
says why): one student's fault never stops the grading of the others.  An import above the exercise that fails in
the sandbox is a flag (``import:``) as well as a note.  No flag or note names a folder of the grading machine
(:func:`without_machine_paths`).  A case that calls code the exercise asks
for fails (the code is absent: a stub raises), with a flag.  Flags without a deduction, for the teacher to look
at, every one of them kept: what the exercise cell, the imports above it and the notebook's other cells use that
reads like tampering or like the library's own answer (:mod:`.source_audit`), a cell the grader did not read (over
its cap), a cell that resembles the library's own code for the exercise (:mod:`.similarity`), every public case
passed but fewer than half of the hidden ones.
"""
from __future__ import annotations

import ast
import os
import re
import secrets
import site
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Iterator, Optional

from ..book.exercises.registry import chapter_exercises, exercise
from .answer_key import AnswerKey
from .grading_library import installed_package
from .isolation import runtime_paths
from .keys import expected_outputs, hidden_cases
from .sandbox_client import Job, Outcome, Sandbox
from .scoring import score
from .similarity import compare
from .stubbing import ABSENT_MARK
from .source_audit import audit_exercise_cell, audit_imports_above, audit_other_cell
from .submissions import CodeCell, Deadline, Submission, exercise_cell, preamble

__all__ = ["ExerciseGrade", "SubmissionGrade", "prepare", "finish", "grade_submissions", "grade_submission",
           "unfinished_stub", "new_nonce", "grader_fault", "SEVERITY", "MAX_FLAGS", "severity", "bounded"]


@dataclass
class ExerciseGrade:
    """One exercise's result: ``points`` of ``possible``, hidden cases ``passed`` of ``total``, ``flags`` (for the
    teacher, each ``"<kind>: <words>"``) and ``notes`` (feedback for the student)."""

    name: str
    possible: int
    points: float = 0.0
    passed: int = 0
    total: int = 0
    flags: list = field(default_factory=list)
    notes: list = field(default_factory=list)


@dataclass
class SubmissionGrade:
    """A student's grades, by exercise, what was wrong with the files (``problems``), and the ``nonce`` of the
    grading run their hidden cases were drawn with."""

    student: str
    grades: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)
    nonce: str = ""

    @property
    def total(self) -> float:
        return round(sum(g.points for g in self.grades.values()), 2)

    @property
    def possible(self) -> int:
        return sum(g.possible for g in self.grades.values())


SEVERITY = ("grader", "files", "crashed", "time limit", "out of memory", "tampering", "library", "import", "unread",
            "similarity", "public cases only")
"""The kinds of flags, the most serious first (a flag is ``"<kind>: <words>"``)."""
MAX_FLAGS = 25
"""Flags of one exercise kept (the most serious first); the rest are counted in one more."""
MAX_NOTES = 12
"""Notes of one exercise kept for the feedback."""


def severity(flag: str) -> int:
    """The rank of ``flag``'s kind in :data:`SEVERITY` (unknown kinds last)."""
    kind = flag.split(":", 1)[0]
    return next((i for i, k in enumerate(SEVERITY) if kind == k), len(SEVERITY))


@lru_cache(maxsize=1)
def _machine_paths() -> tuple:
    """``(path, what it becomes)`` of the grading machine's folders a message may name, the longest first: where the
    library and the Python packages are installed (a path below them is left as the package's own, as in a student's
    copy: ``cnet_lib/__init__.py``), the Python runtime, the home folder."""
    found = {str(installed_package().parent): "", **{str(p): "" for p in site.getsitepackages()}}
    found.update({str(p): "<python>" for p in runtime_paths()})
    found[os.path.expanduser("~")] = "~"
    return tuple(sorted(((k, v) for k, v in found.items() if len(k) > 1), key=lambda kv: -len(kv[0])))


def without_machine_paths(text: str) -> str:
    """``text`` with the grading machine's folders replaced (:func:`_machine_paths`): feedback says nothing of the
    machine that graded it (issue 54: "cannot import name 'pendulm' from 'cnet_lib' (<the teacher's clone>/...)")."""
    for path, what in _machine_paths():
        if path in text:
            text = text.replace(path + os.sep, f"{what}{os.sep}" if what else "").replace(path, what or ".")
    return _WORK_FOLDER.sub("", text)


_WORK_FOLDER = re.compile(r"\S*/cnet-grade-[^/\s]+/")


def bounded(grade: "ExerciseGrade") -> "ExerciseGrade":
    """``grade`` with its flags in order of severity (stable), at most :data:`MAX_FLAGS` of them and the rest
    counted in one, and at most :data:`MAX_NOTES` notes; no path of the grading machine in any of them."""
    grade.flags = [without_machine_paths(f) for f in grade.flags]
    grade.notes = [without_machine_paths(n) for n in grade.notes]
    flags = sorted(grade.flags, key=severity)
    if len(flags) > MAX_FLAGS:
        flags = flags[:MAX_FLAGS] + [f"unread: and {len(flags) - MAX_FLAGS:,} more flags of this exercise, less serious "
                                     "(not listed: look at the notebook)"]
    grade.flags = flags
    if len(grade.notes) > MAX_NOTES:
        grade.notes = grade.notes[:MAX_NOTES] + [f"and {len(grade.notes) - MAX_NOTES} more notes"]
    return grade


def new_nonce() -> str:
    """A fresh nonce for one grading run (recorded in the gradebook: the run's hidden cases can be drawn again)."""
    return secrets.token_hex(8)


def grader_fault(err: BaseException, what: str) -> str:
    """The flag of something the grader could not do for one submission (zero for it, the run goes on)."""
    return f"grader: {what} could not be graded ({type(err).__name__}: {str(err)[:300]}): zero for it (look at it)"


def unfinished_stub(source, name: str) -> bool:
    """Whether the cell is nothing but imports and ``def name(...)`` whose body only raises NotImplementedError (a
    docstring aside): the unfinished exercise, decided without running it.  ``source``: text or a parsed tree."""
    try:
        body = (source if isinstance(source, ast.Module) else ast.parse(source)).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
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


def _lines(findings) -> list[tuple[str, str]]:
    """``(kind, words)`` per distinct finding, the lines it is on gathered (most serious first, as given)."""
    by_what: dict = defaultdict(list)
    for f in findings:
        by_what[(f.kind, f.what)].append(f.line)
    out = []
    for (kind, what), lines in by_what.items():
        lines = sorted(set(lines))
        shown = ", ".join(map(str, lines[:5])) + (f" and {len(lines) - 5} more" if len(lines) > 5 else "")
        out.append((kind, f"line{'s' if len(lines) > 1 else ''} {shown}: {what}"))
    return out


def _audit(grade: ExerciseGrade, cell: CodeCell, above: list[CodeCell], imports: str) -> None:
    """The source reading's flags (every finding kept) and notes for ``grade``'s exercise cell."""
    rules = exercise(grade.name).rules
    findings = audit_exercise_cell(cell.tree, grade.name, rules, ast.parse(imports) if imports else "")
    findings += audit_imports_above([c.tree for c in above if c.tree is not None], rules)
    for kind, words in _lines(sorted(findings, key=lambda f: f.kind != "tampering")):
        if kind == "library":
            grade.flags.append(f"library: {words}")
            grade.notes.append(f"you used library code the exercise asks you to write ({words}); it is absent while "
                               "the exercise is graded")
        else:
            grade.flags.append(f"tampering: {words} (look at it; no points taken)")


def _similarity(grade: ExerciseGrade, python: str) -> None:
    similar = compare(python, grade.name)
    if similar is not None and similar.noted:
        grade.notes.append(similar.note())
        if similar.flagged:
            grade.flags.append(f"{similar.note()} (look at it; no points taken)")


def _prepare_exercise(name: str, sub: Submission, chapter: Optional[str], key: AnswerKey, nonce: str,
                      notebook_flags: list) -> tuple[ExerciseGrade, Optional[Job]]:
    grade = ExerciseGrade(name, key.points[name])
    cells = sub.cells(chapter) if chapter in sub.notebooks else None
    cell = exercise_cell(cells, name) if cells is not None else None
    if cell is None:
        grade.notes.append("not handed in" if cells is None else f"no cell defines {name}(...)")
        return grade, None
    if cell.problem.startswith("not Python"):
        grade.flags.append(f"crashed: the cell is {cell.problem}")
        return grade, None
    imports = preamble(cells, cell.index)
    grade.flags += list(notebook_flags)
    if cell.read:
        if unfinished_stub(cell.tree, name):
            grade.notes.append("not done: the function still raises NotImplementedError")
            return grade, None
        if sub.deadline.passed():
            grade.flags.append(f"unread: code cell {cell.index + 1} (the exercise) not audited: {sub.deadline.why()} "
                               "(look at it)")
        else:
            with sub.deadline.timing():
                _audit(grade, cell, cells[:cell.index], imports)
                _similarity(grade, cell.python)
    else:
        grade.flags.append(f"unread: code cell {cell.index + 1} (the exercise) is {cell.problem}")
    hidden = hidden_cases(name, key.secret, sub.student, nonce)
    grade.total = len(hidden)
    source = cell.python if cell.python is not None else cell.source
    return grade, Job(name, source, exercise(name).public() + hidden, imports, key=(sub.student, name, len(hidden)))


def _notebook_flags(cells: list[CodeCell], exercise_cells: set, deadline: Deadline) -> list[str]:
    """What the notebook's other code cells use that reads like tampering with the public checks, and which of
    them the grader did not read (a flag each)."""
    out = []
    for cell in cells:
        if cell.index in exercise_cells:
            continue
        if cell.read and deadline.passed():
            out.append(f"unread: code cell {cell.index + 1} not audited: {deadline.why()} (look at it)")
        elif cell.read:
            with deadline.timing():
                found = audit_other_cell(cell.tree)
            out += [f"tampering: code cell {cell.index + 1}: {words} (look at it; no points taken)"
                    for _, words in _lines(found)]
        elif not cell.problem.startswith("not Python"):
            out.append(f"unread: code cell {cell.index + 1} is {cell.problem}")
    return out


def prepare(sub: Submission, key: AnswerKey, nonce: str = "") -> tuple[SubmissionGrade, list[Job]]:
    """The grades decided without running anything, and a sandbox job for every other exercise of ``key`` (hidden
    cases drawn with the run's ``nonce``); anything of the submission the grader cannot read is that exercise's
    zero and ``grader:`` flag."""
    result = SubmissionGrade(sub.student, problems=list(sub.problems), nonce=nonce)
    notebook_flags = {}
    for chapter in sub.notebooks:
        try:
            cells = sub.cells(chapter)
            found = {c.index for name in key.exercises if (c := exercise_cell(cells, name)) is not None}
            notebook_flags[chapter] = _notebook_flags(cells, found, sub.deadline)
        except Exception as err:  # noqa: BLE001 - one notebook the grader cannot read is its student's flag
            notebook_flags[chapter] = [grader_fault(err, f"the notebook of {chapter}")]
    jobs = []
    for name in key.exercises:
        chapter = next((c for c in key.chapters if name in chapter_exercises(c)), None)
        try:
            grade, job = _prepare_exercise(name, sub, chapter, key, nonce, notebook_flags.get(chapter, []))
        except Exception as err:  # noqa: BLE001 - ditto, for one exercise
            grade, job = ExerciseGrade(name, key.points[name], flags=[grader_fault(err, "the exercise")]), None
        result.grades[name] = bounded(grade)
        jobs += [job] if job is not None else []
    return result, jobs


def finish(grade: ExerciseGrade, job: Job, outcome: Outcome) -> ExerciseGrade:
    """Score ``grade`` from the sandbox's ``outcome`` of ``job`` (whatever came back: a fault of the grader's in
    reading it is this exercise's zero and flag)."""
    try:
        _finish(grade, job, outcome)
    except Exception as err:  # noqa: BLE001 - what one sandbox returned never stops the run
        grade.points, grade.passed = 0.0, 0
        grade.flags.append(grader_fault(err, "what the sandbox returned"))
    return bounded(grade)


def _finish(grade: ExerciseGrade, job: Job, outcome: Outcome) -> None:
    if outcome.output:
        grade.notes.append(f"your code printed: {outcome.output[-300:]!r}")
    if outcome.status != "ok":
        grade.flags.append(("time limit: " if outcome.status == "timeout" else "crashed: ") + outcome.detail)
        return
    if outcome.detail:
        grade.flags.append(f"out of memory: {outcome.detail}" if "memory" in outcome.detail else f"crashed: {outcome.detail}")
    result = outcome.result
    for loaded in result.get("second_copies", [])[:5]:
        grade.flags.append(f"tampering: {loaded}: a second copy of a package, loaded from a file path (look at it; no "
                           "points taken)")
    for failed in result.get("failed_imports", [])[:3]:
        grade.flags.append(f"import: an import above the exercise failed in the grader: {failed} (the exercise ran "
                           "without it; look at it)")
        grade.notes.append(f"an import above the exercise failed in the grader: {failed}")
    if result["kind"] == "not_done":
        grade.notes.append("not done: the function still raises NotImplementedError")
    elif result["kind"] == "cell_error" and ABSENT_MARK in result["error"]:
        grade.flags.append(f"library: the cell raised {result['error']} ({result['where']})")
    elif result["kind"] == "cell_error":
        grade.flags.append(f"crashed: the cell raised {result['error']} ({result['where']})")
    else:
        expected = expected_outputs(grade.name, job.recipes)
        score(grade, job.recipes, job.key[2], result["cases"], expected, outcome.evaluations)


def grade_submissions(subs: Iterable[Submission], key: AnswerKey, sandbox: Sandbox,
                      nonce: Optional[str] = None) -> Iterator[SubmissionGrade]:
    """Grade ``subs`` with the hidden cases of one run (``nonce``, a fresh one by default); yields each student's
    grade as soon as all of its sandboxes have ended, in the given order."""
    nonce = new_nonce() if nonce is None else nonce
    grades, waiting, jobs = [], [], []
    for i, sub in enumerate(subs):
        grade, own = prepare(sub, key, nonce)
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


def grade_submission(sub: Submission, key: AnswerKey, sandbox: Sandbox, nonce: Optional[str] = None) -> SubmissionGrade:
    """Grade one submission."""
    return next(grade_submissions([sub], key, sandbox, nonce))
