"""An exercise's points from the values its sandbox returned, and what the feedback says of them.

* **Points** (:func:`score`): the exercise's points times the share of its hidden cases passed, rounded to 0.01;
  but a submission that fails a hidden case built to catch one of the exercise's named near misses (the
  ``catches`` of the answer key's recipes, :class:`cnet_lib.book.exercises.public_checks.NearMiss`) gets at most a
  third of the points: the near miss misses what the exercise is about (:data:`NEAR_MISS_SHARE`).
* **Feedback**: the first failed hidden case, by its label (the inputs, drawn anew for every grading run) and
  where the function's value differs (:func:`cnet_lib.book.exercises.differences.first_difference`), with the
  function's own value but never the expected one (a rate's evaluations, which the scheme's stages fix, are shown
  on both sides); and the hint aimed at the failures: the hint of the near miss whose cases failed (of each that
  fits as well), else the exercise's first.
"""
from __future__ import annotations

import re
from typing import Optional

from ..book.exercises.recipes import decode
from ..book.exercises.registry import exercise
from .stubbing import ABSENT_MARK

__all__ = ["score", "NEAR_MISS_SHARE", "absent_calls", "failure_note", "case_hint", "passes"]

NEAR_MISS_SHARE = 1 / 3
"""The most a submission that fails a case catching a named near miss gets, as a share of the points."""


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


def case_hint(ex, recipes: list, passed: list) -> str:
    """The hint aimed at the submission's failures: the hint of the near miss whose catching cases are most like
    the failed ones (of every near miss that fits as well, when several do), else the exercise's first hint."""
    failed = {i for i, ok in enumerate(passed) if not ok}
    fits = {}
    for m in ex.near_misses:
        catching = {i for i, r in enumerate(recipes) if m.tag in r.get("catches", ())}
        if catching & failed:
            fits[m.hint] = len(catching & failed) - len(catching - failed) - len(failed - catching)
    if not fits:
        return ex.hints[0]
    best = max(fits.values())
    return " Or: ".join(h for h, fit in fits.items() if fit == best)


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
    failed = next((i for i in range(n_public, len(ok)) if not ok[i]), None)
    if failed is not None:
        grade.notes.append(failure_note(ex, recipes[failed], cases[failed], expected[failed], evaluations.get(failed)))
        if missed:
            grade.notes.append(f"this case catches a near miss the exercise is about: at most "
                               f"{round(grade.possible * NEAR_MISS_SHARE, 2):g} of {grade.possible} points")
        grade.notes.append(f"hint: {case_hint(ex, recipes[n_public:], hidden_ok)}")

