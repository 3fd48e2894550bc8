"""One grading run of ``python -m cnet_lib grade``, from the submissions to the files it leaves
(:func:`grade_folder`).

The run works in a private temporary folder (the students' build of the library, the job files) that a janitor
process (:mod:`.janitor`) removes whenever the run ends, even by SIGKILL; SIGTERM and SIGHUP stop it as Ctrl-C
does.  Before anything runs it checks that the key, the submissions and the outputs lie outside every folder the
sandboxes see.  The grading process alone writes the gradebook and the feedback, each file atomically, and the
gradebook again after every student whose sandboxes have all ended: a run that is stopped keeps the students
graded so far, and ``--resume`` grades only the others (matched by their feedback file, one per exact name).
Each run draws its hidden cases anew (a nonce recorded in every row it writes), so a resubmission meets new
cases, and nothing one submission is or does stops the grading of the others (:mod:`.grading`).
"""
from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional

from .answer_key import AnswerKey
from .gradebook import feedback_name, read_rows, summary_line, write_feedback, write_gradebook
from .grading import SubmissionGrade, grade_submissions, new_nonce
from .isolation import SandboxError, runtime_paths
from .limits import Limits
from .sandbox_client import Sandbox
from .submissions import find_submissions

__all__ = ["GradingStopped", "RunOptions", "grade_folder", "stop_on_signals", "start_janitor"]

JANITOR = Path(__file__).with_name("janitor.py")


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
    """The janitor of ``folder`` (see :mod:`.janitor`): more paths go to its standard input, one a line."""
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
