"""Every function of the students' build that an exercise's sandbox keeps callable, tried on the exercise's hidden
cases (``python tests/absent_trial.py``, in a process of its own: a kept function called with a case's arguments
may change the library's state).  Prints ``{exercise: [functions that returned the expected value]}`` as JSON;
tests/test_grading.py wants it empty for every exercise.  ``--control EXERCISE ...`` tries those exercises'
own forbidden functions instead (the control: the trial finds the library's answer where it is there).

Each kept function is called with every case's arguments where they bind its signature (all of them, in order)
and, for a method or a property, on every argument that is an instance of its class with the other arguments;
each call gets a deep copy and at most two seconds.
"""
from __future__ import annotations

import contextlib
import copy
import importlib
import inspect
import io
import json
import signal
import sys
import warnings
from pathlib import Path

from cnet_lib.book.exercises.catalogue import EXERCISES, exercise
from cnet_lib.book.exercises.recipes import build_call, observed
from cnet_lib.teacher.absent import functions, installed_package, kept_in, plan, students_modules
from cnet_lib.teacher.keys import expected_outputs, hidden_cases

STUDENTS = 1


class _Late(Exception):
    pass


def _late(signum, frame):
    raise _Late()


def _resolve(module, qualname: str):
    obj, owner = module, None
    for part in qualname.split("."):
        owner, obj = obj, inspect.getattr_static(obj, part)
    return owner, obj


def _calls(owner, obj, qualname: str, args: tuple, kwargs: dict):
    """Ways to call ``obj`` (a kept function, method or property) with one case's arguments."""
    fn = obj.fget if isinstance(obj, property) else getattr(obj, "__func__", obj)
    if "." not in qualname or isinstance(obj, (staticmethod, classmethod)):
        target = getattr(owner, qualname.rsplit(".", 1)[-1]) if "." in qualname else fn
        yield lambda a, k: target(*a, **k)
        return
    for i, arg in enumerate(args):
        if isinstance(owner, type) and isinstance(arg, owner):
            others = args[:i] + args[i + 1:]
            if isinstance(obj, property):
                yield lambda a, k, i=i: getattr(a[i], qualname.rsplit(".", 1)[-1])
            else:
                yield lambda a, k, i=i, o=others: fn(a[i], *a[:i], *a[i + 1:], **k)


def _binds(owner, obj, qualname: str, args: tuple, kwargs: dict) -> bool:
    """Whether a plain function's signature takes the case's arguments (methods and properties are tried on the
    arguments of their class instead)."""
    if "." in qualname and not isinstance(obj, (staticmethod, classmethod)):
        return True
    fn = getattr(obj, "__func__", obj)
    try:
        inspect.signature(fn).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return False
    return True


def _computes(name: str, module_name: str, qualname: str, built: list, expected: list) -> bool:
    module = importlib.import_module(module_name)
    try:
        owner, obj = _resolve(module, qualname)
    except AttributeError:
        return False
    ex = exercise(name)
    for (args, kwargs), want in zip(built, expected):
        if not _binds(owner, obj, qualname, args, kwargs):
            continue
        for call in _calls(owner, obj, qualname, args, kwargs):
            a, k = copy.deepcopy((args, kwargs))
            signal.alarm(2)
            try:
                got = observed(call(a, k), a, k)
                if ex.matches(got, want):
                    return True
            except BaseException:  # noqa: BLE001 - a call that does not fit the case is no answer
                pass
            finally:
                signal.alarm(0)
    return False


def _candidates(name: str, control: bool) -> list[tuple[str, str]]:
    """``(module, qualified name)`` to try: what exercise ``name``'s sandbox keeps, or (``control``) its own
    forbidden functions."""
    p, package = plan(name), installed_package()
    out = []
    for module in students_modules():
        rel = Path(*module.split(".")[1:])
        path = package / rel / "__init__.py" if (package / rel).is_dir() else (package / rel).with_suffix(".py")
        if not control:
            out += [(module, q) for q in kept_in(p, module, path)]
        elif module in p.named:
            out += [(module, q) for q, _ in functions(path.read_text(encoding="utf-8")) if p.is_named(module, q)]
    return out


def main(argv: list) -> int:
    signal.signal(signal.SIGALRM, _late)
    warnings.simplefilter("ignore")
    control = argv[:1] == ["--control"]
    names = argv[1:] if control else list(EXERCISES)
    found = {}
    with contextlib.redirect_stdout(io.StringIO()):  # what a tried function prints is not the answer
        for name in names:
            cases = [c for i in range(STUDENTS) for c in hidden_cases(name, "trial", f"student {i}")]
            expected, built = expected_outputs(name, cases), [build_call(c) for c in cases]
            found[name] = [f"{m}.{q}" for m, q in _candidates(name, control) if _computes(name, m, q, built, expected)]
    sys.stdout.write(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
