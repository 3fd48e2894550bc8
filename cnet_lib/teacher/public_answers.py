"""The expected outputs of every exercise's public cases, as data: ``cnet_lib/book/exercises/public_answers.json``,
which the book's checks read (:func:`cnet_lib.book.exercises.public_checks.public_expected`) so that a student's
install needs no reference; beside them, each named near miss's values on the cases that catch it (the answer
key's code for it, :mod:`.near_miss_key`), so that a failed check gives the hint of the near miss the student's
values are, and no other.  ``python -m cnet_lib answers --write`` rewrites it from the references;
:func:`stale_answers` says which exercises it no longer matches (``tests/test_grading.py`` checks it)."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Optional

from ..book.exercises.public_checks import PUBLIC_ANSWERS
from ..book.exercises.recipes import decode, encode, recipes_digest
from ..book.exercises.registry import EXERCISES, exercise
from .keys import expected_outputs
from .near_miss_key import near_miss_outputs

__all__ = ["public_answers", "write_public_answers", "stale_answers"]


def public_answers() -> dict:
    """``{"format": 1, "exercises": {name: {"recipes_sha256", "expected": [encoded values], "near_misses": {tag:
    [encoded value, or None where the case does not catch it]}}}}`` from the references and the near misses' code."""
    out = {}
    for name in EXERCISES:
        ex = exercise(name)
        recipes = ex.public()
        near = {}
        for m in ex.near_misses:
            values = near_miss_outputs(name, m.tag, recipes)
            near[m.tag] = [encode(v) if v is not None and m.tag in r.get("catches", ()) else None
                           for v, r in zip(values, recipes)]
        out[name] = {"recipes_sha256": recipes_digest(recipes),
                     "expected": [encode(v) for v in expected_outputs(name, recipes)], "near_misses": near}
    return {"format": 1, "exercises": out}


def write_public_answers(path: Optional[Path] = None) -> Path:
    """Write :func:`public_answers` to ``path`` (default: the package's ``public_answers.json``)."""
    path = Path(path or PUBLIC_ANSWERS)
    path.write_text(json.dumps(public_answers(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def stale_answers(path: Optional[Path] = None, margin: float = 1.0) -> list[str]:
    """The exercises whose stored public answers no longer serve their checks (missing ones included): the cases
    changed, or the reference's values on this machine fail the exercise's comparison with the stored ones at
    ``margin`` times its tolerances (1: the check's own; the tests ask for 0.1)."""
    path = Path(path or PUBLIC_ANSWERS)
    stored = json.loads(path.read_text(encoding="utf-8")).get("exercises", {}) if path.is_file() else {}
    stale = []
    for name, entry in public_answers()["exercises"].items():
        old = stored.get(name)
        if (not isinstance(old, dict) or old.get("recipes_sha256") != entry["recipes_sha256"]
                or not isinstance(old.get("expected"), list) or len(old["expected"]) != len(entry["expected"])
                or not isinstance(old.get("near_misses"), dict) or set(old["near_misses"]) != set(entry["near_misses"])):
            stale.append(name)
            continue
        ex = exercise(name)
        tight = dataclasses.replace(ex, rtol=ex.rtol * margin, atol=ex.atol * margin)
        if not all(tight.matches(decode(new), decode(kept)) for new, kept in zip(entry["expected"], old["expected"])):
            stale.append(name)
    return stale
