"""What of the students' build stays callable while an exercise is graded, derived by running, never listed by hand.

While exercise X is graded the sandbox's cnet_lib keeps only the functions the exercise needs; every other
function of the students' build is a stub that refuses (:mod:`.absent`, :mod:`.grading_library`).  What it needs
is traced (:func:`trace`), in a process of its own with the sandbox's environment:

1. every function called while every module of the students' build is imported (import-time machinery);
2. every function called while X's cases are built (the public ones and the hidden ones of several students),
   and while the grader's runner (:mod:`.sandbox`) runs the chapter's solution of X on them, encodes what it
   returned, reports an error of the student's and tells an unfinished stub;
3. the solution's own calls into the library (``exact_solution`` and ``rollout`` for ``global_error``,
   ``block.theta`` and ``block.gain`` for ``euler_block_as_resnet``, ...).

The result is stored as data beside this module (:data:`KEPT_FILE`, ``{exercise: ["module:qualified name",
...]}``), written by ``python -m cnet_lib answers --write`` in the repository and checked by
``tests/test_grading.py`` (:func:`stale_kept`), so grading needs no chapter and traces nothing.  Besides what was
traced, the stubbing keeps what a module needs to import and the dunder methods and properties of every class
(:mod:`.grading_library`); ``tests/test_sandbox_parts.py`` tries everything kept on the exercise's hidden cases
and finds none that computes the answer.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Optional

from .limits import sandbox_environment

__all__ = ["KEPT_FILE", "kept", "trace", "write_kept", "stale_kept", "students_modules", "STUDENTS_LEAVE_OUT"]

KEPT_FILE = Path(__file__).with_name("kept_functions.json")
TRACER = Path(__file__).with_name("kept_trace.py")
PACKAGE = Path(__file__).resolve().parent.parent
STUDENTS_LEAVE_OUT = ("cnet_lib.teacher", "cnet_lib.cli.student", "cnet_lib.cli.grade", "cnet_lib.cli.answers",
                      "cnet_lib.__main__")
"""Modules the students' build lacks (:data:`cnet_lib.book.student_wheel.TEACHER_PATHS`) or that run on import."""
STUDENTS_DRAWN = 5


def students_modules(package: Path = PACKAGE) -> list[str]:
    """Every module of the students' build of ``package``, dotted, sorted."""
    out = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if not any(name == m or name.startswith(m + ".") for m in STUDENTS_LEAVE_OUT):
            out.append(name)
    return out


@lru_cache(maxsize=None)
def _stored() -> dict:
    if not KEPT_FILE.is_file():
        raise FileNotFoundError(f"{KEPT_FILE} is missing: in the repository, run `python -m cnet_lib answers --write`")
    return json.loads(KEPT_FILE.read_text(encoding="utf-8"))


def kept(exercise: str) -> frozenset:
    """``{"module:qualified name", ...}``: the functions of the students' build exercise ``exercise``'s sandbox
    keeps (see the module doc)."""
    found = _stored().get("kept", {}).get(exercise)
    if found is None:
        raise RuntimeError(f"{KEPT_FILE} has nothing for {exercise}: in the repository, run `python -m cnet_lib "
                           "answers --write`")
    return frozenset(found)


def trace(solutions: Mapping[str, str]) -> dict:
    """``{"format": 1, "kept": {exercise: sorted names}}`` traced for the exercises of ``solutions`` (exercise ->
    the chapter's solution source), in a process with the sandbox's environment (see the module doc)."""
    task = {"package": str(PACKAGE), "modules": students_modules(), "leave_out": list(STUDENTS_LEAVE_OUT),
            "drawn": STUDENTS_DRAWN, "solutions": dict(solutions)}
    with tempfile.TemporaryDirectory(prefix="cnet-kept-") as home:
        env = sandbox_environment() | {"HOME": home, "TMPDIR": home}
        out = subprocess.run([sys.executable, "-I", str(TRACER)], input=json.dumps(task), capture_output=True,
                             text=True, env=env, cwd=home, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"tracing what the exercises keep failed:\n{out.stderr[-3000:]}")
    return {"format": 1, "kept": json.loads(out.stdout)}


def write_kept(solutions: Mapping[str, str], path: Optional[Path] = None) -> Path:
    """Trace (:func:`trace`) and write :data:`KEPT_FILE` (or ``path``)."""
    path = Path(path or KEPT_FILE)
    path.write_text(json.dumps(trace(solutions), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    _stored.cache_clear()
    return path


def stale_kept(solutions: Mapping[str, str], path: Optional[Path] = None) -> list[str]:
    """The exercises whose stored kept functions differ from a fresh trace (missing ones included)."""
    path = Path(path or KEPT_FILE)
    stored = json.loads(path.read_text(encoding="utf-8")).get("kept", {}) if path.is_file() else {}
    fresh = trace(solutions)["kept"]
    return sorted(name for name in fresh if stored.get(name) != fresh[name])

