"""An exercise's public side: its cases, hints, forbidden calls and comparison (:class:`Exercise`), and the
check a reader runs (:func:`check_exercise`), with the expected values read as data.

The expected outputs of the public cases are stored in ``public_answers.json`` beside this module, computed
by the teacher's references (``python -m cnet_lib answers --write`` in the repository; ``tests/test_grading.py``
fails when they are out of date).  So a reader's check needs no reference implementation, and a student's
install carries none.  The same :class:`Exercise` tells the teacher's grader what to compare and what an
exercise cell may not use (:class:`Rules`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import torch

from .differences import Difference, first_difference
from .framework import Case, Forbidden, check, values_close
from .recipes import build_call, decode, observed, recipes_digest

__all__ = ["Rules", "NearMiss", "Exercise", "PUBLIC_ANSWERS", "public_expected", "public_near_misses", "check_exercise",
           "aimed_hint", "GENERIC_STUB_MESSAGE"]

PUBLIC_ANSWERS = Path(__file__).with_name("public_answers.json")
GENERIC_STUB_MESSAGE = "write your code here, in place of this line"


@dataclass(frozen=True)
class Rules:
    """What an exercise cell may not use, read from its source by the teacher's grader (the student's process
    is never trusted to say it): ``allowed_imports`` are the only ``cnet_lib`` names the cell may use (e.g.
    ``"cnet_lib.pendulum.rollout"``); ``banned_names`` are names and attributes that would do the exercise
    (``"odeint"``, ``"refine"``); ``banned_modules`` are modules that would (``"torchdiffeq"``);
    ``uncallable`` are parameters the function may not call (``block``: ``block(x)`` integrates)."""

    allowed_imports: tuple[str, ...] = ()
    banned_names: tuple[str, ...] = ()
    banned_modules: tuple[str, ...] = ()
    uncallable: tuple[str, ...] = ()


@dataclass(frozen=True)
class NearMiss:
    """A mistake the exercise is about: ``tag`` (the ``catches`` of the cases that tell it apart), ``words`` (what
    it is, for the answer key) and ``hint`` (what the student is told when a case that catches it fails; a nudge,
    never the answer line)."""

    tag: str
    words: str
    hint: str


@dataclass(frozen=True)
class Exercise:
    """An exercise's public side: ``name`` (the function), graded ``hints`` (a nudge, then a narrower one; never
    the answer line), ``public()`` (the public case recipes), ``forbidden()`` (library code the function may not
    call, for the in-notebook guard), ``rules`` (for the teacher's grader), and how outputs are compared:
    ``compare`` ``"close"`` (:func:`values_close` with ``rtol``/``atol``) or ``"same_tensor"`` (a tensor of the
    expected shape and dtype, close); ``no_grad`` runs every call under :func:`torch.no_grad`."""

    name: str
    hints: tuple[str, ...]
    public: Callable[[], list]
    forbidden: Callable[[], Sequence[Forbidden]] = lambda: ()
    rules: Rules = field(default_factory=Rules)
    compare: str = "close"
    rtol: float = 1e-6
    atol: float = 1e-9
    no_grad: bool = False
    near_misses: tuple = ()

    @property
    def checker(self) -> str:
        """The name of the chapter's check function, ``check_<name>``."""
        return f"check_{self.name}"

    def matches(self, got: Any, expected: Any) -> bool:
        """Whether the student's value ``got`` matches ``expected`` (both with their observations)."""
        if self.compare == "same_tensor":
            return _same_tensor(got, expected, self.rtol, self.atol)
        return values_close(got, expected, self.rtol, self.atol)

    def difference(self, got: Any, expected: Any) -> Optional[Difference]:
        """Where ``got`` differs from ``expected`` under :meth:`matches` (None where they match)."""
        return first_difference(got, expected, self.rtol, self.atol, exact_tensors=self.compare == "same_tensor")

    def near_miss(self, tag: str) -> Optional[NearMiss]:
        """The near miss ``tag`` of this exercise (None when it names none)."""
        return next((m for m in self.near_misses if m.tag == tag), None)

    def context(self):
        """The context every call runs in (:func:`torch.no_grad` or nothing)."""
        return torch.no_grad if self.no_grad else None


def _same_tensor(got, expected, rtol: float, atol: float) -> bool:
    if isinstance(expected, dict) and isinstance(got, dict):  # with observations
        return set(got) == set(expected) and all(_same_tensor(got[k], expected[k], rtol, atol) if k == "returned"
                                                 else values_close(got[k], expected[k]) for k in expected)
    return (isinstance(got, torch.Tensor) and isinstance(expected, torch.Tensor) and got.shape == expected.shape
            and got.dtype == expected.dtype and torch.allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True))


@lru_cache(maxsize=1)
def _answers() -> dict:
    if not PUBLIC_ANSWERS.is_file():
        raise FileNotFoundError(f"{PUBLIC_ANSWERS} is missing: in the repository, run `python -m cnet_lib answers --write`")
    return json.loads(PUBLIC_ANSWERS.read_text(encoding="utf-8"))


def public_expected(exercise: Exercise, recipes: Optional[list] = None) -> list:
    """The expected outputs of ``exercise``'s public cases, from ``public_answers.json`` (decoded); a clear
    error when they were computed for other cases than today's."""
    recipes = exercise.public() if recipes is None else recipes
    entry = _answers().get("exercises", {}).get(exercise.name)
    if entry is None or entry.get("recipes_sha256") != recipes_digest(recipes):
        raise RuntimeError(f"the public answers of {exercise.name} are missing or were computed for other cases: in "
                           "the repository, run `python -m cnet_lib answers --write` (and commit public_answers.json)")
    return [decode(e) for e in entry["expected"]]


def public_near_misses(exercise: Exercise) -> dict:
    """``{tag: [value or None per public case]}``: each named near miss's values on the public cases that catch it,
    from ``public_answers.json`` (empty where the file has none)."""
    entry = _answers().get("exercises", {}).get(exercise.name, {})
    return {tag: [None if v is None else decode(v) for v in values]
            for tag, values in (entry.get("near_misses") or {}).items()}


def check_exercise(exercise: Exercise, student_fn: Callable, hint: Optional[int] = None,
                   ask: Optional[Callable[[int], str]] = None) -> bool:
    """The public check of ``exercise``: ``student_fn`` on every public case against the stored answers; prints
    ``✅ pass`` or ``❌ fail`` with where the value differs and a graded hint (the hint of the near miss whose values
    the student's are, if any: :func:`aimed_hint`), and returns the verdict (it never raises).  ``ask(k)``: the call
    that shows hint k where the check runs (by default the book's, ``check_<name>(<name>, hint=k)``)."""
    recipes = exercise.public()
    expected = public_expected(exercise, recipes)
    near = public_near_misses(exercise)
    cases = [Case(*build_call(r), label=r["label"], hint=aimed_hint(exercise, r, [v[i] for v in near.values()],
                                                                    list(near)))
             for i, r in enumerate(recipes)]
    return check(student_fn, None, cases, name=exercise.name, hints=exercise.hints, hint=hint, checker=exercise.checker,
                 ask=ask, forbidden=exercise.forbidden(), compare=exercise.matches, explain=exercise.difference,
                 context=exercise.context(), expected=expected, observe=observed)


def aimed_hint(exercise: Exercise, recipe: dict, values: list, tags: list) -> Callable[[Any], str]:
    """The hint of a failed public case, given what the student's function gave (``got``): the hint of the first near
    miss the case catches whose stored value (``values``, in the order of ``tags``) ``got`` is; "" (the exercise's
    own first hint) when it is none of them: the student made another mistake, and is never told of one not made."""
    def hint(got) -> str:
        for tag, value in zip(tags, values):
            m = exercise.near_miss(tag)
            if m is None or value is None or tag not in recipe.get("catches", ()):
                continue
            try:
                if exercise.matches(got, value):
                    return m.hint
            except Exception:  # noqa: BLE001 - a value the comparison cannot read is no near miss's
                continue
        return ""
    return hint
