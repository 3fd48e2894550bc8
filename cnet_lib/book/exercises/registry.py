"""Every exercise's public side by name (:data:`EXERCISES`), in the order of :data:`.catalogue.CATALOGUE`."""
from __future__ import annotations

from .adaptive_exercises import ERROR_RATIO
from .catalogue import CATALOGUE
from .how_to_use import OBSERVED_ORDER
from .image_exercises import (EULER_BLOCK_AS_RESNET, IDEAL_SPEEDUP, IDENTITY_GAP, PARAMETERS_AFTER_REFINEMENT,
                              REFINE_PIECEWISE_LINEAR)
from .pendulum_exercises import EMBEDDED_STEP, GLOBAL_ERROR, RK_STEP
from .public_checks import Exercise
from .robustness_exercises import QUANTIZE_PER_CHANNEL

__all__ = ["EXERCISES", "exercise", "chapter_exercises"]

_ALL = (OBSERVED_ORDER, RK_STEP, EMBEDDED_STEP, GLOBAL_ERROR, EULER_BLOCK_AS_RESNET, PARAMETERS_AFTER_REFINEMENT,
        REFINE_PIECEWISE_LINEAR, IDEAL_SPEEDUP, IDENTITY_GAP, QUANTIZE_PER_CHANNEL, ERROR_RATIO)
EXERCISES: dict[str, Exercise] = {row.name: next(e for e in _ALL if e.name == row.name) for row in CATALOGUE}


def exercise(name: str) -> Exercise:
    """The public side of exercise ``name`` (a clear error for an unknown name)."""
    if name not in EXERCISES:
        raise KeyError(f"no exercise named {name!r}; the exercises are {', '.join(EXERCISES)}")
    return EXERCISES[name]


def chapter_exercises(chapter: str) -> list[str]:
    """The names of the exercises of ``chapter`` (a notebook stem), in the chapter's order."""
    return [row.name for row in CATALOGUE if row.chapter == chapter]
