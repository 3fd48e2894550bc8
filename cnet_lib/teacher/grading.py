"""Submissions graded, exercise by exercise, trusting nothing that ran on the student's side or in the sandbox;
the gradebook and the feedback; one run of ``python -m cnet_lib grade`` (:func:`grade_folder`).

**Grading** (:func:`prepare`, :func:`finish`).  For each exercise of the key the notebook's exercise cell is found
among its code cells, read once and within bounds (:mod:`.submissions`); a cell that is not Python, or still the
unfinished stub, is decided here; every other cell becomes a sandbox job (the cell, the imports above it, the public
cases and the hidden ones drawn for this student and this grading run), run where the code the exercise asks for
is absent (:mod:`.sandbox`).  The sandbox's values come back as data and are compared here with the references'; a
counted rate's evaluations are the ones this process counted.  Zero and a flag: a cell that does not run
(crashed), a function still running after the time limit, a sandbox out of memory, and anything of one submission
the grader itself cannot read or grade (a ``grader:`` flag that says why): one student's fault never stops the
grading of the others.  An import above the exercise that fails in the sandbox is a flag (``import:``) as well as a
note; a case that calls code the exercise asks for fails (the code is absent: a stub raises), with a flag.  Flags
without a deduction, for the teacher, every one of them kept: what the cells use that reads like tampering or like
the library's own answer, a cell the grader did not read (over its cap), a cell that resembles the library's own
code for the exercise (:mod:`.audit`), every public case passed but fewer than half of the hidden ones.  No flag or
note names a folder of the grading machine (:func:`without_machine_paths`).

**Points** (:func:`score`): the exercise's points times the share of its hidden cases passed, rounded to 0.01; but a
submission that fails a hidden case built to catch one of the exercise's named near misses gets at most
:data:`.keys.NEAR_MISS_SHARE` of them.  **Feedback** aimed at the submission's own mistake (:func:`aimed_near_miss`):
the near miss whose values are the submission's on every hidden case it failed; the feedback shows the first of
those cases, says that it catches a mistake the exercise is about, and gives that near miss's hint.  Where no near
miss gives the submission's values, the first failed case is shown with the exercise's first hint.  A case is shown
by its label and where the function's value differs (:func:`cnet_lib.book.exercises.differences.first_difference`),
with the function's own value, never the expected one (a rate's evaluations are shown on both sides).

**The gradebook** (CSV, :func:`write_gradebook`): ``student`` (as the file or folder names them, undecodable bytes
written ``\\xe9``), one column per exercise (its points), ``total``, ``possible``, ``flag_count``, ``flags`` (every
flag, ``exercise: flag`` joined by `` | ``, the most serious first, at most 25 of one exercise and 30 of the files,
the rest counted), ``isolation`` (how the students' code ran), ``cases`` (the grading run's nonce the row's hidden
cases were drawn with) and ``feedback`` (the student's feedback file, one per exact name, which ``--resume``
matches); it opens in any spreadsheet and imports into an LMS's gradebook by student.  **A feedback file** per
student (markdown) gives per exercise the points, the hidden cases passed, the first that failed, the hint aimed at
the student's own mistake, and the flags.  Both are written whole or not at all (:func:`write_atomically`).

**The run** (:func:`grade_folder`) works in a private temporary folder (the students' build of the library, the job
files) that a janitor process (:func:`.isolation.clean`) removes whenever the run ends, even by SIGKILL; SIGTERM and
SIGHUP stop it as Ctrl-C does.  Before anything runs it checks that the key, the submissions and the outputs lie
outside every folder the sandboxes see.  The gradebook is written again after every student whose sandboxes have
all ended: a run that is stopped keeps the students graded so far, and ``--resume`` grades only the others.  Each
run draws its hidden cases anew (a nonce recorded in every row it writes), so a resubmission meets new cases.
"""
from __future__ import annotations

import ast
import csv
import io
import os
import re
import secrets
import shutil
import signal
import site
import subprocess
import sys
import tempfile
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional, Sequence

from ..book.exercises.catalogue import chapter_exercises, exercise, info
from ..book.exercises.recipes import decode
from .absent import ABSENT_MARK, installed_package
from .audit import audit_exercise_cell, audit_imports_above, audit_other_cell, compare
from .isolation import Limits, SandboxError, runtime_paths
from .keys import AnswerKey, NEAR_MISS_SHARE, expected_outputs, hidden_cases, near_miss_outputs
from .sandbox import Job, Outcome, Sandbox
from .submissions import CodeCell, Deadline, Submission, exercise_cell, file_key, find_submissions, preamble, printable

__all__ = ["ExerciseGrade", "SubmissionGrade", "prepare", "finish", "grade_submissions", "grade_submission",
           "unfinished_stub", "new_nonce", "grader_fault", "SEVERITY", "MAX_FLAGS", "severity", "bounded",
           "without_machine_paths", "score", "absent_calls", "failure_note", "aimed_near_miss", "passes",
           "write_gradebook", "write_feedback", "feedback_text", "summary_line", "feedback_name", "write_atomically",
           "read_rows", "header", "ordered_flags", "MAX_FLAGS_TEXT", "GradingStopped", "RunOptions", "grade_folder",
           "stop_on_signals", "start_janitor"]

JANITOR = Path(__file__).with_name("isolation.py")
MAX_FLAGS_TEXT = 30_000
"""Characters of the flags column (a spreadsheet's cell holds 32,767): the rest is counted, and in the feedback."""

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


# ----------------------------------------------------------------------------- points and feedback
def absent_calls(cases: list) -> list[str]:
    """The library or outside routines the cases called that were absent (their stubs' messages), sorted."""
    found = {m.group(1) for c in cases if "error" in c
             for m in [re.search(rf"(\S+) {ABSENT_MARK}", c["error"])] if m}
    return sorted(found)


def _value(case: dict, evaluations: Optional[int]):
    """The student's value of a case as the reference's is observed (with the counted rate's evaluations)."""
    value = decode(case["value"])
    return value if evaluations is None else {"returned": value, "rate_evaluations": evaluations}


def passes(ex, case: dict, expected, evaluations: Optional[int]) -> bool:
    """Whether the sandbox's ``case`` matches ``expected`` (a value the comparison cannot read does not)."""
    if "value" not in case:
        return False
    try:
        return bool(ex.matches(_value(case, evaluations), expected))
    except Exception:  # noqa: BLE001 - a value the comparison cannot read does not match
        return False


def failure_note(ex, recipe: dict, case: dict, expected, evaluations: Optional[int]) -> str:
    """What the feedback says of one failed hidden case (see the module doc)."""
    label = f"hidden case {recipe.get('label', '')}"
    if "error" in case:
        return f"{label}: raised {case['error']} ({case.get('where', '')})"
    try:
        diff = ex.difference(_value(case, evaluations), expected)
    except Exception:  # noqa: BLE001 - a value that cannot be read
        return f"{label}: the function returned a value the grader cannot read"
    if diff is None:
        return f"{label}: the value differs from the reference's"
    observations = {k.replace("_", " ") for k in expected if k != "returned"} if isinstance(expected, dict) else set()
    public = diff.path.split(" at index")[0].split("[")[0] in observations  # what the arguments saw: the count
    return f"{label}: {diff.words(show_expected=public)}"


def aimed_near_miss(ex, recipes: list, cases: list, failed: list, evaluations: dict):
    """The near miss of ``ex`` whose values are the submission's ``cases`` on every failed case (indices
    ``failed`` into ``recipes``), the first such in the exercise's order; None when none is."""
    if not failed:
        return None
    chosen = [recipes[i] for i in failed]
    for m in ex.near_misses:
        if not all(m.tag in r.get("catches", ()) for r in chosen):
            continue
        try:
            values = near_miss_outputs(ex.name, m.tag, chosen)
        except Exception:  # noqa: BLE001 - the key's code for a near miss that cannot run aims nothing
            continue
        if all(v is not None and passes(ex, cases[i], v, evaluations.get(i)) for i, v in zip(failed, values)):
            return m
    return None


def score(grade, recipes: list, n_hidden: int, cases: list, expected: list, evaluations: dict) -> None:
    """Points, cases passed, flags and notes of ``grade`` from the sandbox's ``cases`` (see the module doc)."""
    ex = exercise(grade.name)
    n_public = len(recipes) - n_hidden
    absent = absent_calls(cases)
    if absent:
        grade.flags.append(f"library: calls {', '.join(absent)}, absent while the exercise is graded (those cases "
                           "failed)")
    ok = [passes(ex, c, e, evaluations.get(i)) for i, (c, e) in enumerate(zip(cases, expected))]
    hidden_ok = ok[n_public:]
    grade.passed, grade.total = sum(hidden_ok), n_hidden
    share = grade.passed / n_hidden if n_hidden else 0.0
    missed = [t for r, passed in zip(recipes[n_public:], hidden_ok) if not passed for t in r.get("catches", ())]
    if missed:
        share = min(share, NEAR_MISS_SHARE)
    grade.points = round(grade.possible * share, 2)
    if all(ok[:n_public]) and grade.passed < n_hidden / 2:
        grade.flags.append(f"public cases only: every public case passes but only {grade.passed} of {n_hidden} hidden "
                           "ones (answers built for the public cases?)")
    failed = [i for i in range(n_public, len(ok)) if not ok[i]]
    if not failed:
        return
    aimed = aimed_near_miss(ex, recipes, cases, failed, evaluations)
    shown = failed[0]
    grade.notes.append(failure_note(ex, recipes[shown], cases[shown], expected[shown], evaluations.get(shown)))
    cap = f"at most {round(grade.possible * NEAR_MISS_SHARE, 2):g} of {grade.possible} points"
    if aimed is not None:
        grade.notes.append(f"this case catches a mistake the exercise is about: {cap}")
        grade.notes.append(f"hint: {aimed.hint}")
    else:
        if missed:
            grade.notes.append(f"a case you failed is built to catch a mistake the exercise is about: {cap}")
        grade.notes.append(f"hint: {ex.hints[0]}")


# ----------------------------------------------------------------------------- the gradebook and the feedback files
def feedback_name(student: str) -> str:
    """The feedback file of ``student`` (:func:`.submissions.file_key`)."""
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


# ----------------------------------------------------------------------------- one grading run
class GradingStopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP: the run stops as after Ctrl-C."""


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP raise :class:`GradingStopped` (so the run cleans up) while inside."""
    def stop(signum, frame):
        raise GradingStopped(signal.Signals(signum).name)

    old = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def start_janitor(folder: Path) -> subprocess.Popen:
    """The janitor of ``folder`` (:func:`.isolation.clean`): more paths go to its standard input, one a line."""
    janitor = subprocess.Popen([sys.executable, "-I", str(JANITOR)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True, text=True)
    tell(janitor, folder)
    return janitor


def tell(janitor: subprocess.Popen, path: Path) -> None:
    janitor.stdin.write(f"{path}\n")
    janitor.stdin.flush()


def check_outside(paths: dict) -> None:
    """SandboxError when one of ``paths`` (``{what: path}``) lies in a folder the sandboxes see read-only."""
    seen = [Path("/usr"), *runtime_paths()]
    for what, path in paths.items():
        real = Path(path).resolve()
        inside = next((s for s in seen if s == real or s in real.parents), None)
        if inside is not None:
            raise SandboxError(f"{what} {path} lies in {inside}, which every sandbox sees (the Python runtime): "
                               "move it elsewhere")


@dataclass(frozen=True)
class RunOptions:
    """What ``grade`` was asked: the files, the limits, the sandboxes at a time, the unsafe mode, resuming."""

    submissions: Path
    key: Path
    out: Path
    feedback: Path
    limits: Limits
    jobs: Optional[int] = None
    unsafe: bool = False
    resume: bool = False


def grade_folder(opts: RunOptions, say: Callable[[str], None] = print) -> list[SubmissionGrade]:
    """Grade every submission of ``opts.submissions`` into the gradebook and the feedback (see the module doc);
    the grades of this run."""
    key = AnswerKey.load(opts.key)
    subs = find_submissions(opts.submissions, key.chapters)
    if not subs:
        raise ValueError(f"no submissions in {opts.submissions} (one folder, .ipynb or .zip per student)")
    check_outside({"the answer key": opts.key, "the submissions": opts.submissions, "the gradebook": opts.out,
                   "the feedback": opts.feedback})
    kept = read_rows(opts.out, key.exercises) if opts.resume else {}
    todo = [s for s in subs if feedback_name(s.student) not in kept]
    if kept:
        say(f"(--resume: {len(subs) - len(todo)} students already in {opts.out}; grading the other {len(todo)})")
    tmp = Path(tempfile.mkdtemp(prefix="cnet-grade-"))
    janitor = start_janitor(tmp)
    try:
        check_outside({"the temporary folder (TMPDIR)": tmp})
    except SandboxError:
        shutil.rmtree(tmp, ignore_errors=True)
        janitor.stdin.close()
        raise
    grades: list[SubmissionGrade] = []
    try:
        with stop_on_signals(), Sandbox(tmp / "work", opts.limits, opts.unsafe, opts.jobs) as sandbox:
            for parent in (sandbox.cgroups.parents if sandbox.cgroups else []):
                tell(janitor, parent)
            say(f"isolation: {sandbox.describe()}; {sandbox.jobs} sandbox{'es' if sandbox.jobs > 1 else ''} at a time")
            nonce = new_nonce()
            say(f"hidden cases drawn anew for this run (nonce {nonce}, recorded in the gradebook's cases column)")
            for grade in grade_submissions(todo, key, sandbox, nonce):
                grades.append(grade)
                try:
                    write_feedback(grade, opts.feedback)
                except OSError as err:  # one student's file never stops the run: said in their row
                    grade.problems.append(f"the feedback file could not be written ({err})")
                write_gradebook(grades, key.exercises, opts.out, sandbox.describe(), kept)
                say(f"[{len(grades)}/{len(todo)}] {summary_line(grade)}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        janitor.stdin.close()
    return grades
