"""The answer key by exercise: each exercise's reference and hidden-case generator (:data:`KEYS`), the hidden
cases of one submission (:func:`hidden_cases`: drawn from the key's secret, the student, the exercise and the
grading run, so every submission and every regrading gets its own and no table built from another's, or from
earlier feedback, can pass), and the reference's outputs
(:func:`expected_outputs`), computed in the grading process and nowhere else."""
from __future__ import annotations

import hashlib
import random
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Callable

from ..book.exercises.recipes import build_call, observed
from ..book.exercises.registry import EXERCISES, exercise
from . import adaptive_key, image_key, pendulum_key
from .student_names import name_bytes

__all__ = ["Key", "KEYS", "key", "hidden_cases", "expected_outputs", "submission_seed"]


@dataclass(frozen=True)
class Key:
    """An exercise's ``reference`` (what the student's function must return) and ``hidden(rng)`` (its hidden cases)."""

    reference: Callable
    hidden: Callable[[random.Random], list]


def _keys() -> dict:
    out = {}
    for name in EXERCISES:
        module = next((m for m in (pendulum_key, adaptive_key) if hasattr(m, f"reference_{name}")), image_key)
        out[name] = Key(getattr(module, f"reference_{name}"), getattr(module, f"hidden_{name}"))
    return out


KEYS: dict[str, Key] = _keys()


def key(name: str) -> Key:
    """The key of exercise ``name``."""
    exercise(name)  # a clear error for an unknown name
    return KEYS[name]


def submission_seed(secret: str, student: str, name: str, nonce: str = "") -> int:
    """The seed of one submission's hidden cases of exercise ``name`` in the grading run ``nonce``: SHA-256 of the
    key's secret, the student's exact name, the exercise and the run's nonce (so the cases differ between students
    and between grading runs, and cannot be predicted without the secret)."""
    data = b"\0".join([secret.encode(), name_bytes(student), name.encode(), nonce.encode()])
    return int.from_bytes(hashlib.sha256(data).digest()[:8], "big")


def hidden_cases(name: str, secret: str, student: str, nonce: str = "") -> list:
    """The hidden case recipes of exercise ``name`` for ``student``'s submission in the grading run ``nonce``
    (the gradebook records each row's)."""
    return key(name).hidden(random.Random(submission_seed(secret, student, name, nonce)))


def expected_outputs(name: str, recipes: list) -> list:
    """The reference's values on ``recipes`` (with what the arguments observed, e.g. evaluations of a rate)."""
    ex, ref = exercise(name), key(name).reference
    out = []
    for r in recipes:
        args, kwargs = build_call(r)
        with (ex.context() or nullcontext)():
            out.append(observed(ref(*args, **kwargs), args, kwargs))
    return out
