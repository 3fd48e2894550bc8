"""The tracing run of :func:`.absent.trace`: ``python -I kept_trace.py`` in a process of its own, with the
package's parent folder, the modules to import, the modules to leave out and the chapters' solutions as JSON on
standard input; writes ``{exercise: sorted "module:qualified name"}`` to standard output.

It imports nothing of cnet_lib before its profile hook is on (:func:`sys.setprofile`, and
:func:`threading.setprofile` for threads), so the package's own import is traced too.  A code object is named by
its module (from its file) and its qualified name up to the first ``<`` (a nested function, a comprehension or a
lambda counts as the function that holds it, which was called to create it).
"""
from __future__ import annotations

import importlib
import json
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

__all__ = ["main", "recording"]


def _namer(package: Path, leave_out: list):
    def name(code) -> str:
        try:
            rel = Path(code.co_filename).resolve().relative_to(package)
        except ValueError:
            return ""
        parts = (package.name, *rel.with_suffix("").parts)
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if any(module == m or module.startswith(m + ".") for m in leave_out):
            return ""
        qual = getattr(code, "co_qualname", code.co_name).split(".<", 1)[0]
        return "" if qual.startswith("<") else f"{module}:{qual}"
    return name


@contextmanager
def recording(name):
    """A set that fills with the names (``name(code)``) of the functions called inside."""
    seen, codes = set(), set()

    def profile(frame, event, arg):
        if event == "call" and frame.f_code not in codes:
            codes.add(frame.f_code)
            found = name(frame.f_code)
            if found:
                seen.add(found)

    old = sys.getprofile()
    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        yield seen
    finally:
        sys.setprofile(old)
        threading.setprofile(None)


def _run_exercise(name: str, solution: str, drawn: int) -> None:
    """Build ``name``'s cases and run the grader's runner on the solution, a failing cell and a stub."""
    # by name, as every module here: nothing of cnet_lib may be imported before the hook is on
    recipes_module = importlib.import_module("cnet_lib.book.exercises.recipes")
    exercise = importlib.import_module("cnet_lib.book.exercises.catalogue").exercise(name)
    runner = importlib.import_module("cnet_lib.teacher.runner")
    hidden_cases = importlib.import_module("cnet_lib.teacher.keys").hidden_cases
    build = recipes_module.build

    recipes = exercise.public()
    for i in range(drawn):
        recipes += hidden_cases(name, "tracing", f"student {i}")
    recipes_module.BUILDERS["counted_rate"] = lambda ident, label: build({"$": "rate", "name": "pendulum", "counted": True})
    calls = [recipes_module.build_call(r) for r in recipes]
    job = {"exercise": name, "cell": solution, "preamble": "", "no_grad": bool(exercise.no_grad)}
    result = runner.run_job(job, calls)
    if result.get("kind") != "cases" or any("error" in c for c in result["cases"]):
        raise RuntimeError(f"the solution of {name} does not run on its cases: {str(result)[:2000]}")
    for case in result["cases"]:
        recipes_module.decode(case["value"])
    recipes_module.decode(recipes_module.encode(build({"$": "tensor", "data": [1.0, 2.0]})))
    failing = f"def {name}(*args, **kwargs):\n    raise ValueError('a student\\'s bug')\n"
    runner.run_job({**job, "cell": failing}, calls[:1])
    stub = f"def {name}(*args, **kwargs):\n    '''Task.'''\n    raise NotImplementedError('write it')\n"
    runner.run_job({**job, "cell": stub}, calls[:1])


def main() -> int:
    task = json.loads(sys.stdin.read())
    package = Path(task["package"]).resolve()
    name = _namer(package, task["leave_out"])
    sys.path.insert(0, str(package.parent))
    with recording(name) as imported:
        for module in task["modules"]:
            importlib.import_module(module)
    out = {}
    for exercise_name in sorted(task["solutions"]):
        with recording(name) as used:
            _run_exercise(exercise_name, task["solutions"][exercise_name], task["drawn"])
        out[exercise_name] = sorted(imported | used)
    sys.stdout.write(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
