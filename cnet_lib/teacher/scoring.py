"""An exercise's points from the values its sandbox returned, and what the feedback says of them.

* **Points** (:func:`score`): the exercise's points times the share of its hidden cases passed, rounded to 0.01;
  but a submission that fails a hidden case built to catch one of the exercise's named near misses (the
  ``catches`` of the answer key's recipes, :class:`cnet_lib.book.exercises.public_checks.NearMiss`) gets at most a
  third of the points: the near miss misses what the exercise is about (:data:`NEAR_MISS_SHARE`).
* **Feedback** aimed at the submission's own mistake (:func:`aimed_near_miss`): the near miss it makes is the one
  whose values (the answer key's code for it, :mod:`.near_miss_key`) are the submission's on every hidden case it
  failed; the feedback then shows the first of those cases, says that it catches a mistake the exercise is about,
  and gives that near miss's hint.  Where no near miss gives the submission's values, the first failed case is
  shown with the exercise's first hint, and the cap on the points is said without naming a mistake.  A case is
  shown by its label (the inputs, drawn anew for every grading run) and where the function's value differs
  (:func:`cnet_lib.book.exercises.differences.first_difference`), with the function's own value but never the
  expected one (a rate's evaluations, which the scheme's stages fix, are shown on both sides).
"""
from __future__ import annotations

import re
from typing import Optional

from ..book.exercises.recipes import decode
from ..book.exercises.registry import exercise
from .near_miss_key import near_miss_outputs
from .stubbing import ABSENT_MARK

__all__ = ["score", "NEAR_MISS_SHARE", "absent_calls", "failure_note", "aimed_near_miss", "passes"]

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
