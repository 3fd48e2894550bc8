"""Exercise checks: run a student's function against the reference and say pass or fail.

Usage in a chapter (after the stub and its solution cells)::

    from cnet_lib.book.exercises import check_observed_order
    check_observed_order(observed_order)          # or check_observed_order(observed_order, hint=2)

A check prints ``✅ pass: ...`` or ``❌ fail: ...`` and returns a bool; it never raises, so a
class can run the whole notebook with unfinished exercises.

* **Graded hints.**  A failed check prints the first hint of its list, a nudge.  Each further
  hint comes only on request (``hint=2``) or after repeated failures of the same exercise in
  the session (the second from the third failure on, the third from the fifth).  An
  unfinished stub shows no hint and counts as no failure.
* **No shortcuts.**  While the student's function runs, a call guard watches for the library
  code the exercise asks the student to write (:class:`Forbidden`: functions matched by their
  code object, so every alias is caught, or whole modules), in its own thread and in threads it
  starts: every ``reference_*`` function loaded (the teacher's answer key, :mod:`cnet_lib.teacher`,
  where the repository has it) and, per exercise, e.g. the integrator.  Calling it fails the check.
  This guard runs on the student's side, so one line of code can switch it off: it is a help for
  readers, and a teacher grades with ``python -m cnet_lib grade``, which trusts nothing that ran there.
* **Expected values** come from a reference function run beside the student's, or, for the book's
  exercises, as data (``expected=``: the public answers, :mod:`.public_checks`), so that a student's
  install needs no reference implementation.
* **Solutions never replace the reader's code.**  A chapter's solution cell decorates its
  function with :func:`solution`: the solution takes the name only while the reader's
  function is still the unfinished stub, so "Run all" keeps the reader's own code.

Also here: ``with student_code(name):``, for cells that use a reader's function after its exercise
(:func:`student_code`).
"""
from __future__ import annotations

import copy
import os
import sys
import sysconfig
import threading
import traceback
import types
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from .differences import describe, first_difference, values_close

__all__ = ["Case", "Forbidden", "check", "values_close", "describe", "solution", "is_stub", "reset_hints",
           "student_frame", "call_guard", "asker", "student_code"]


_FAILURES: dict[str, int] = {}  # failed checks per exercise in this session (they grade the hints)
_EXERCISES_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


@dataclass(frozen=True)
class Case:
    """One call of the function under test: ``fn(*args, **kwargs)``; ``label`` describes it in messages, ``hint``
    (if any) is the first hint a failure of this case gets: a text, or a function of what the student's function
    gave that returns one (aimed at the near miss that value is; "" for none)."""

    args: Sequence[Any] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""
    hint: Union[str, Callable[[Any], str]] = ""

    def hint_for(self, got: Any) -> str:
        """The hint of this case when the student's function gave ``got``."""
        if not callable(self.hint):
            return self.hint
        try:
            return self.hint(got) or ""
        except Exception:  # noqa: BLE001 - a hint that cannot be aimed is the exercise's first
            return ""

    def __str__(self) -> str:
        if self.label:
            return self.label
        parts = [describe(a) for a in self.args] + [f"{k}={describe(v)}" for k, v in self.kwargs.items()]
        return "(" + ", ".join(parts) + ")"


def _as_case(c) -> Case:
    if isinstance(c, Case):
        return c
    if isinstance(c, Mapping):
        return Case((), dict(c))
    if isinstance(c, tuple):
        return Case(c, {})
    return Case((c,), {})


# ----------------------------------------------------------------------------- shortcuts
@dataclass(frozen=True)
class Forbidden:
    """Library code a student's function must not call, and what to do instead.

    ``functions`` are matched by their code object (a call through any alias or import is
    caught); ``modules`` (module objects) by file: a call of any function defined in the
    module, or anywhere in the package when it is one, is caught.
    """

    functions: Sequence[Callable] = ()
    modules: Sequence[types.ModuleType] = ()
    why: str = ""

    def codes(self) -> frozenset:
        out = set()
        for fn in self.functions:
            fn = getattr(fn, "__func__", fn)  # bound and class methods
            fn = getattr(fn, "fget", fn)  # properties
            code = getattr(fn, "__code__", None)
            if code is None:
                raise TypeError(f"Forbidden needs Python functions, got {fn!r}")
            out.add(code)
        return frozenset(out)

    def prefixes(self) -> tuple[str, ...]:
        out = []
        for mod in self.modules:
            path = os.path.abspath(mod.__file__)
            is_package = os.path.basename(path) == "__init__.py"
            out.append(os.path.dirname(path) + os.sep if is_package else path)
        return tuple(out)


class _CallGuard:
    """Records the first call of a forbidden function while active (``sys.setprofile``)."""

    def __init__(self, codes: frozenset, prefixes: tuple[str, ...]):
        self.codes, self.prefixes = codes, prefixes
        self.hit: Optional[str] = None
        self._previous = None

    def _profile(self, frame, event, arg):
        if event == "call" and self.hit is None:
            code = frame.f_code
            if code is _GUARD_EXIT:  # the guard switching itself off
                return
            if code in self.codes or code.co_filename.startswith(self.prefixes):
                module = frame.f_globals.get("__name__", "?")
                self.hit = f"{module}.{getattr(code, 'co_qualname', code.co_name)}"

    def __enter__(self) -> "_CallGuard":
        self._previous = sys.getprofile()
        self._previous_threads = threading.getprofile() if hasattr(threading, "getprofile") else None
        threading.setprofile(self._profile)  # threads the student's function starts
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc) -> None:
        sys.setprofile(self._previous)
        threading.setprofile(self._previous_threads)


_GUARD_EXIT = _CallGuard.__exit__.__code__


# ----------------------------------------------------------------------------- hints
def reset_hints(name: Optional[str] = None) -> None:
    """Forget the failures counted for exercise ``name`` (all exercises without a name)."""
    if name is None:
        _FAILURES.clear()
    else:
        _FAILURES.pop(name, None)


def _hint_level(n_hints: int, failures: int, requested: Optional[int]) -> int:
    """Which hint to show (1-based): the requested one, else one more for every two failures."""
    if requested is not None:
        return max(1, min(int(requested), n_hints))
    return max(1, min(n_hints, 1 + (failures - 1) // 2))


def _hint_text(hints: Sequence[str], level: int, ask: Optional[Callable[[int], str]], first: str = "") -> str:
    """The hint of ``level`` (``first`` in place of the first hint: the one aimed at the failed case), and how to
    ask for the next (``ask(k)``: the call that shows hint k)."""
    if not hints:
        return ""
    text = f"\n   hint {level} of {len(hints)}: {first if level == 1 and first else hints[level - 1]}"
    if level < len(hints):
        how = f"; or ask for it now: {ask(level + 1)}" if ask else ""
        text += f"\n   (a stronger hint comes after more failed tries{how})"
    return text


def asker(checker: Optional[str], name: str) -> Optional[Callable[[int], str]]:
    """How a reader asks for hint k of exercise ``name`` with the book's check ``checker``:
    ``checker(name, hint=k)``."""
    return (lambda k: f"{checker}({name}, hint={k})") if checker else None


# ----------------------------------------------------------------------------- the check
def _call(fn: Callable, case: Case, context: Optional[Callable], copy_args: bool, guard: Optional[_CallGuard] = None,
          observe: Optional[Callable] = None):
    """``fn(*case.args, **case.kwargs)`` (on a deep copy), inside ``context`` and ``guard``; with ``observe``,
    ``observe(result, args, kwargs)`` (what the arguments recorded of the call, e.g. how often a rate ran)."""
    args, kwargs = (copy.deepcopy((case.args, dict(case.kwargs))) if copy_args else (case.args, dict(case.kwargs)))
    with (context() if context is not None else nullcontext()), (guard if guard is not None else nullcontext()):
        result = fn(*args, **kwargs)
    return observe(result, args, kwargs) if observe is not None else result


def _installed() -> tuple[str, ...]:
    """The folders of code that is not the student's: this library, Python's standard library and its packages."""
    lib = os.path.dirname(os.path.dirname(_EXERCISES_DIR.rstrip(os.sep))) + os.sep
    paths = sysconfig.get_paths()
    return (lib, *{os.path.abspath(paths[k]) + os.sep for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths})


def student_frame(err: BaseException) -> str:
    """``line N: source`` of the innermost frame of the traceback in the student's own code: outside the library,
    Python's standard library and installed packages, and not code Python generates (a dataclass's ``__init__``,
    file ``<string>``), one with a line to show first; else the innermost frame outside the library."""
    frames = traceback.extract_tb(err.__traceback__)
    installed = _installed()
    own = [f for f in frames if not os.path.abspath(f.filename).startswith(installed) and f.filename != "<string>"]
    mine = ([f for f in own if (f.line or "").strip()] or own
            or [f for f in frames if not os.path.abspath(f.filename).startswith(installed[0])] or frames)
    if not mine:
        return "no line known"
    where = mine[-1]
    return f"line {where.lineno}: {(where.line or '').strip()}"


def check(
    student_fn: Callable,
    reference_fn: Optional[Callable],
    cases: Iterable[Any],
    name: str,
    hints: Union[str, Sequence[str]] = (),
    *,
    hint: Optional[int] = None,
    checker: Optional[str] = None,
    ask: Optional[Callable[[int], str]] = None,
    forbidden: Sequence[Forbidden] = (),
    rtol: float = 1e-6,
    atol: float = 1e-9,
    compare: Optional[Callable[[Any, Any], bool]] = None,
    explain: Optional[Callable[[Any, Any], Any]] = None,
    context: Optional[Callable] = None,
    copy_args: bool = True,
    expected: Optional[Sequence[Any]] = None,
    observe: Optional[Callable] = None,
) -> bool:
    """Run ``student_fn`` on every case and compare with ``reference_fn`` (run first, outside the guard) or with
    ``expected`` (one value per case: the reference's outputs as data); print pass/fail; return the verdict.

    A case is a :class:`Case`, a tuple of positional arguments, a dict of keyword arguments,
    or a single argument; each function gets a deep copy of it (``copy_args``).
    Outputs are compared with :func:`values_close` (or ``compare``); a failure says where they differ
    (``explain(got, want)``, by default :func:`.differences.first_difference`).  ``hints`` are graded,
    nudge first (see the module doc), a failed case's own ``hint`` in place of the first; ``hint`` asks for one
    by number, and ``ask(k)`` (by default ``checker(name, hint=k)``, e.g. ``check_rk_step(rk_step, hint=2)``)
    is the call the message names for it.  A call, during the student's function, of anything in ``forbidden``
    or of a loaded ``reference_*`` function fails the check.  ``context`` (e.g. ``torch.no_grad``) is entered
    around every call; ``observe`` (see :func:`_call`) adds what the arguments recorded to both sides' values."""
    cases = _checked_cases(cases, reference_fn, expected)
    hints = (hints,) if isinstance(hints, str) else tuple(hints)
    compare = compare or (lambda g, e: values_close(g, e, rtol, atol))
    explain = explain or (lambda g, e: first_difference(g, e, rtol, atol))
    ask = ask or asker(checker, name)
    guarded = _guarded(forbidden, reference_fn)

    def fail(message: str, case: Optional[Case] = None, got: Any = None) -> bool:
        _FAILURES[name] = _FAILURES.get(name, 0) + 1
        level = _hint_level(len(hints), _FAILURES[name], hint)
        print(f"❌ fail: {name}: {message}{_hint_text(hints, level, ask, case.hint_for(got) if case else '')}")
        return False

    if not callable(student_fn):
        return fail(f"expected a function, got {type(student_fn).__name__}: {name} must be the function itself "
                    f"(def {name}(...)), not the result of calling it")
    for i, case in enumerate(cases, 1):
        want = expected[i - 1] if expected is not None else _call(reference_fn, case, context, copy_args, observe=observe)
        got, hit, err = _run_student(student_fn, case, context, copy_args, guarded[1], guarded[2], observe)
        if hit is None and isinstance(err, NotImplementedError):
            return _not_done(name, ask if hints else None)
        problem = _problem(f"case {i}/{len(cases)} {case}", got, want, hit, err, guarded[0], compare, explain)
        if problem:
            return fail(problem, case, got)
    print(f"✅ pass: {name} ({len(cases)} case{'s' if len(cases) != 1 else ''})")
    return True


def _problem(label: str, got, want, hit: Optional[str], err: Optional[BaseException], rules, compare, explain) -> str:
    """What is wrong with one case's outcome, in words ("" when it passes)."""
    if hit is not None:
        why = next((r.why for r in rules if _matches(r, hit)), "")
        return f"your function calls {hit}, which does (part of) what the exercise asks you to write. {why}".rstrip()
    if err is not None:  # a student's bug: report it, never crash the notebook
        return f"{label} raised {type(err).__name__}: {err} ({student_frame(err)})"
    if compare(got, want):
        return ""
    try:
        diff = explain(got, want)
    except Exception:  # noqa: BLE001 - a value the explanation cannot read: say both sides as they are
        diff = None
    words = diff.words() if hasattr(diff, "words") else (diff or "")
    if not words:
        return f"{label}\n   expected {describe(want)}\n   got      {describe(got)}"
    return f"{label}\n   {words}"


def _checked_cases(cases: Iterable[Any], reference_fn: Optional[Callable], expected: Optional[Sequence[Any]]) -> list:
    """The cases as :class:`Case` objects; a clear error without cases, or without one way to the expected values."""
    cases = [_as_case(c) for c in cases]
    if not cases:
        raise ValueError("check needs at least one case")
    if (reference_fn is None) == (expected is None) or (expected is not None and len(expected) != len(cases)):
        raise ValueError("check needs either a reference_fn or one expected value per case")
    return cases


def _not_done(name: str, ask: Optional[Callable[[int], str]]) -> bool:
    """Say that the stub is unfinished (no hint, no failure counted); False."""
    extra = f" (a first hint: {ask(1)})" if ask else ""
    print(f"❌ not done yet: {name}: the function still raises NotImplementedError. "
          f"Replace the `raise NotImplementedError(...)` line with your code and run this cell again.{extra}")
    return False


def _guarded(forbidden: Sequence["Forbidden"], reference_fn: Optional[Callable]) -> tuple:
    """``(rules, code objects, module path prefixes)`` a check guards against: ``forbidden`` and every loaded
    reference."""
    rules = tuple(forbidden) + (Forbidden(functions=_references(reference_fn),
                                          why="The checks' references are not part of the answer: write it yourself."),)
    return rules, frozenset().union(*(r.codes() for r in rules)), tuple(p for r in rules for p in r.prefixes())


def call_guard(forbidden: Sequence["Forbidden"] = ()) -> "_CallGuard":
    """A context manager that records (``.hit``, a qualified name) the first call, in its thread or a thread
    started inside it, of anything in ``forbidden`` or of a loaded ``reference_*`` function."""
    _, codes, prefixes = _guarded(forbidden, None)
    return _CallGuard(codes, prefixes)


def _run_student(student_fn: Callable, case: "Case", context, copy_args: bool, codes, prefixes, observe=None) -> tuple:
    """``(result, the first forbidden call or None, the exception raised or None)`` of the student's
    function on ``case``, run under a call guard."""
    guard = _CallGuard(codes, prefixes)
    try:
        return _call(student_fn, case, context, copy_args, guard, observe), guard.hit, None
    except Exception as err:  # reported by check(), never raised into the notebook
        return None, guard.hit, err


def _references(reference_fn: Optional[Callable]) -> tuple:
    """``reference_fn`` (when it is a Python function) and every ``reference_*`` function loaded from this
    package or from the teacher's answer key (``cnet_lib.teacher``, absent from a student's install)."""
    found = [reference_fn] if hasattr(reference_fn, "__code__") else []
    packages = (__package__, __package__.split(".")[0] + ".teacher")
    for mod_name, mod in list(sys.modules.items()):
        if mod is not None and any(mod_name == p or mod_name.startswith(p + ".") for p in packages):
            found += [obj for key, obj in vars(mod).items() if key.startswith("reference_") and isinstance(obj, types.FunctionType)]
    return tuple(found)


def _matches(rule: Forbidden, hit: str) -> bool:
    """Whether the qualified name ``hit`` is one of ``rule``'s functions or in one of its modules."""
    names = {f"{getattr(f, '__module__', '')}.{getattr(f, '__qualname__', '')}" for f in rule.functions}
    mods = tuple(m.__name__ for m in rule.modules)
    return hit in names or hit.startswith(tuple(m + "." for m in mods))


# ----------------------------------------------------------------------------- solution cells
def is_stub(fn: Any) -> bool:
    """True for an unfinished exercise stub: a function whose only name is NotImplementedError
    (its body does nothing but ``raise NotImplementedError(...)``, docstring aside)."""
    code = getattr(fn, "__code__", None)
    return code is not None and tuple(code.co_names) == ("NotImplementedError",)


def solution(fn: Callable) -> Callable:
    """Decorate the function of a solution cell: it takes the name only while the reader's
    function of that name is still the unfinished stub.

    So "Run all" never replaces the reader's own code with the solution (the reader's function
    stays, and its check checks it), while the book, whose stubs are unfinished, runs and checks
    the solution.
    """
    current = fn.__globals__.get(fn.__name__)
    if current is None or current is fn or is_stub(current) or not callable(current):
        return fn
    print(f"(solution cell: your own {fn.__name__} is kept; the solution stands in only while the stub is unfinished)")
    return current


# Cells that use a reader's function after its exercise: ``with student_code("ideal_speedup"): ...``.
#
# A chapter (and every student copy made from it) calls a reader's function again after its check, e.g. on
# the trained model's numbers.  Any exception from it must not stop "Run all": :class:`student_code` catches
# it, says which function failed, with what and where (the line of the reader's own code), and lets the
# notebook go on; an unfinished stub (``NotImplementedError``) only gets a reminder.

class student_code:
    """A context manager for a cell's use of the reader's function ``name``: an exception inside is printed
    in one line (``NotImplementedError``: the exercise is not done yet) and not raised, so the rest of the
    notebook runs; ``KeyboardInterrupt`` and ``SystemExit`` pass through.  ``.failed`` says whether it caught one."""

    def __init__(self, name: str):
        self.name = name
        self.failed = False

    def __enter__(self) -> "student_code":
        return self

    def __exit__(self, exc_type, err, tb) -> bool:
        if err is None or not isinstance(err, Exception):
            return False
        self.failed = True
        if isinstance(err, NotImplementedError):
            print(f"(finish the exercise `{self.name}` above to see this part)")
        else:
            print(f"❌ your {self.name} raised {type(err).__name__}: {err} ({student_frame(err)}). The rest of this "
                  f"cell was skipped; fix {self.name} above, run its cell and its check, then this cell again.")
        return True
