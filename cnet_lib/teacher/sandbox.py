"""The grader's worker: ``python -I -m cnet_lib.teacher.sandbox EVENT_FD`` (started by :mod:`.sandbox_client`).

It imports torch and the library once, then reads jobs, one JSON line each, from its standard input, and runs
each job in a child process of its own (``os.fork``): a submission's exercise cell and the student's function on
the job's cases.  A child that patches torch, the library or the checks spoils only its own outputs; the next
exercise starts from the untouched worker.  The worker never runs student code itself, and it holds no
reference, no expected value and no secret: the cases arrive as recipes, and the child writes what the
student's function returned (as data, :func:`cnet_lib.book.exercises.recipes.encode`) to the job's result
file, which the grading process reads and compares with its own references.  A child's files and memory are
capped (:func:`_limit_resources`): a submission that prints forever or allocates without end fails its case.

Events go to ``EVENT_FD`` as JSON lines, written by the worker only (a child closes it first thing):
``{"ready"}``, then per job ``{"forked": pid}`` and ``{"done": id, "exit": code}``.  Time limits are the
grading process's: it kills a child's process group, or the worker.
"""
from __future__ import annotations

import ast
import copy
import importlib
import json
import linecache
import os
import resource
import signal
import sys
from typing import Any

import torch

from ..book.exercises.framework import call_guard, is_stub, student_frame
from ..book.exercises.recipes import build_call, encode, observed
from ..book.exercises.registry import EXERCISES, exercise

__all__ = ["main", "run_job"]

MAX_TEXT = 2000  # characters of an error message kept
MAX_FILE_BYTES = 256 * 2**20  # the largest file a child may write (its output, its result)
MEMORY_BUDGET = 4 * 2**30  # the memory a child may map beyond the worker's (at most a quarter of the machine's)
CELL = "<exercise cell>"  # the file name of the exercise cell in tracebacks


class _NoAnswerKey:
    """A meta-path finder that refuses to import the answer key in a child (one more fence; the grading process
    also refuses any cell that imports it)."""

    def find_spec(self, name, path=None, target=None):
        if name.startswith("cnet_lib.teacher."):
            raise ImportError(f"{name} is not available to a submission")
        return None


def _send(fd: int, event: dict) -> None:
    os.write(fd, (json.dumps(event) + "\n").encode())


def _preamble(source: str, ns: dict) -> list[str]:
    """Run the notebook's imports (one statement at a time); the ones that fail are listed, not fatal."""
    failed = []
    try:
        statements = ast.parse(source).body
    except SyntaxError:
        return ["the imports above the exercise do not parse"]
    for stmt in statements:
        try:
            exec(compile(ast.Module([stmt], []), "<imports of the cells above>", "exec"), ns)
        except Exception as err:  # noqa: BLE001 - reported in the feedback
            failed.append(f"{ast.unparse(stmt)}: {type(err).__name__}: {err}"[:MAX_TEXT])
    return failed


def _case(fn, args, kwargs, ex) -> dict:
    """One call of the student's function on copies of the arguments, under the call guard."""
    a, k = copy.deepcopy((args, kwargs))
    guard = call_guard(ex.forbidden())
    try:
        with (ex.context() or _Nothing)(), guard:
            out = fn(*a, **k)
        return {"value": encode(observed(out, a, k)), "hit": guard.hit}
    except BaseException as err:  # noqa: BLE001 - SystemExit and KeyboardInterrupt too: a failed case
        return {"error": f"{type(err).__name__}: {err}"[:MAX_TEXT], "where": student_frame(err), "hit": guard.hit}


class _NoIPython:
    """``get_ipython()`` for a cell with a magic (``%time``, ``!ls``): every call does nothing."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def run_job(job: dict) -> dict:
    """Run one exercise cell and the student's function on the job's cases; the result as data: ``{"cases":
    [{"value"} or {"error", "where"}, each with the forbidden call it made, if any]}``, or ``{"cell_error"}``
    (the cell did not run), or ``{"not_done": true}`` (the stub is unfinished)."""
    torch.set_num_threads(1)
    ex = exercise(job["exercise"])
    calls = [build_call(r) for r in job["cases"]]  # built before any student code runs
    ns: dict[str, Any] = {"__name__": "__main__", "get_ipython": _NoIPython}  # magics become calls that do nothing
    failed_imports = _preamble(job.get("preamble", ""), ns)
    linecache.cache[CELL] = (len(job["cell"]), None, job["cell"].splitlines(True), CELL)  # lines in tracebacks
    try:
        exec(compile(job["cell"], CELL, "exec"), ns)
    except BaseException as err:  # noqa: BLE001
        where = f"line {err.lineno}: {(err.text or '').strip()}" if isinstance(err, SyntaxError) else student_frame(err)
        return {"cell_error": f"{type(err).__name__}: {err}"[:MAX_TEXT], "where": where, "failed_imports": failed_imports}
    fn = ns.get(ex.name)
    if not callable(fn):
        return {"cell_error": f"the cell defines no function {ex.name}", "failed_imports": failed_imports}
    if is_stub(fn):
        return {"not_done": True}
    return {"cases": [_case(fn, args, kwargs, ex) for args, kwargs in calls], "failed_imports": failed_imports}


def _limit_resources() -> None:
    """Caps on a child, so that a submission cannot fill the disk or the memory of the teacher's machine: a write
    past :data:`MAX_FILE_BYTES` fails (``OSError``, File too large), and on Linux an allocation past the worker's
    memory plus :data:`MEMORY_BUDGET` fails (``MemoryError`` or torch's ``RuntimeError``): a failed case, not a
    machine out of memory."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the cap raises instead of killing the child
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # not Linux: no cap on memory
        return
    budget = min(MEMORY_BUDGET, os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 4)
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    cap = mapped + budget if hard == resource.RLIM_INFINITY else min(mapped + budget, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def _child(job: dict, event_fd: int) -> None:
    """The forked child: its own process group, no event pipe, no stdin, output to the job's file; never returns."""
    code = 0
    try:
        os.setpgid(0, 0)
        os.close(event_fd)
        out = os.open(job["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, 1)
        os.dup2(out, 2)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        sys.meta_path.insert(0, _NoAnswerKey())
        _limit_resources()
        result = run_job(job)
        tmp = job["result"] + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(result, f)
        os.replace(tmp, job["result"])
    except BaseException:  # noqa: BLE001 - the grading process sees the exit status and no result
        code = 3
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - a stream the student replaced or closed
                pass
        os._exit(code)


def _warm_up() -> None:
    """Load, once before any fork, what the children would each load again: every exercise's forbidden calls
    (torchdiffeq, ...) and the objects of its public cases (torch.func, scipy's elliptic functions, ...).  With
    one thread (the worker's environment), so no thread pool exists when it forks."""
    torch.set_num_threads(1)
    for module in ("scipy.special", "torch.func"):  # the pendulum's exact solution; what the OdeBlock exercise uses
        importlib.import_module(module)

    for ex in EXERCISES.values():
        ex.forbidden()
        for recipe in ex.public()[:2]:
            build_call(recipe)


def main(argv: list[str]) -> int:
    """Serve jobs from standard input until it closes (see the module doc)."""
    event_fd = int(argv[0])  # the library is loaded already (this module's imports), once before any fork
    _warm_up()
    _send(event_fd, {"ready": True, "pid": os.getpid()})
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(job, event_fd)
        try:
            os.setpgid(pid, pid)
        except OSError:  # the child did it first, or is gone already
            pass
        _send(event_fd, {"forked": pid, "job": job["id"]})
        _, status = os.waitpid(pid, 0)
        _send(event_fd, {"done": job["id"], "exit": os.waitstatus_to_exitcode(status)})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
