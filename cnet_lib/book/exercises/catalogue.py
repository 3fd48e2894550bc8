"""Every exercise of the book in one table: its chapter, learning objective, estimated minutes, difficulty and
points.  The book's Exercises page, the student copies (a line above each exercise), the teacher's answer key
and the gradebook all read it from here; ``tests/test_grading.py`` checks that every exercise of every chapter
has a row and the Exercises page shows it.

The minutes are the author's estimate for a student who has read the chapter up to the exercise (not a
measurement); difficulty is 1 (a warm-up), 2 (the chapter's core) or 3 (a challenge).

Also here: every exercise's public side by name (:data:`EXERCISES`), in the catalogue's order.
"""
from __future__ import annotations

from dataclasses import dataclass

from .image_exercises import (EULER_BLOCK_AS_RESNET, IDEAL_SPEEDUP, IDENTITY_GAP, PARAMETERS_AFTER_REFINEMENT,
    QUANTIZE_PER_CHANNEL, REFINE_PIECEWISE_LINEAR)
from .pendulum_exercises import EMBEDDED_STEP, ERROR_RATIO, GLOBAL_ERROR, OBSERVED_ORDER, RK_STEP
from .public_checks import Exercise

__all__ = ["ExerciseInfo", "CATALOGUE", "DIFFICULTY", "info", "exercise_line", "EXERCISES", "exercise",
           "chapter_exercises"]


DIFFICULTY = {1: "warm-up", 2: "core", 3: "challenge"}


@dataclass(frozen=True)
class ExerciseInfo:
    """One exercise: the function the student writes (``name``), its chapter (notebook stem), what it teaches
    (``objective``), the estimated ``minutes``, the ``difficulty`` (1–3) and the ``points`` it is graded on."""

    name: str
    chapter: str
    objective: str
    minutes: int
    difficulty: int
    points: int

    def __post_init__(self) -> None:
        if self.difficulty not in DIFFICULTY:
            raise ValueError(f"{self.name}: difficulty must be one of {sorted(DIFFICULTY)}, got {self.difficulty}")
        if self.minutes < 1 or self.points < 1:
            raise ValueError(f"{self.name}: minutes and points must be >= 1")


CATALOGUE: tuple[ExerciseInfo, ...] = (
    ExerciseInfo("observed_order", "how_to_use",
                 "estimate an order of convergence from a whole error table, as a least-squares slope on log-log axes",
                 10, 1, 1),
    ExerciseInfo("rk_step", "pendulum_integrators",
                 "read one explicit Runge–Kutta step off a Butcher tableau: stages, nodes c_i, weights b_i",
                 20, 2, 2),
    ExerciseInfo("embedded_step", "pendulum_integrators",
                 "share the stages of an embedded Runge–Kutta pair: one step and its local error estimate from s "
                 "evaluations", 30, 3, 3),
    ExerciseInfo("global_error", "resnet_euler",
                 "measure a global error at t_final, with the step count N_t = t_final/Δt taken exactly",
                 15, 2, 2),
    ExerciseInfo("euler_block_as_resnet", "continuousnet",
                 "see an OdeBlock's Euler, N_t = M graph as the M residual updates of a ResNet (T ≠ 1, gains s(t))",
                 25, 2, 2),
    ExerciseInfo("parameters_after_refinement", "refinement_training",
                 "tell which tensors of a ContinuousNet are weight functions θ(t), the ones refinement doubles",
                 10, 1, 1),
    ExerciseInfo("refine_piecewise_linear", "refinement_training",
                 "refine a piecewise-linear θ(t) from M to 2M − 1 hats without changing the function",
                 25, 3, 3),
    ExerciseInfo("ideal_speedup", "refinement_training",
                 "cost a refinement schedule: the ideal speed-up E·N_t(final)/Σ N_t over fixed depth",
                 5, 1, 1),
    ExerciseInfo("identity_gap", "manifestation_invariance",
                 "read a sweep's rows by their kind: how many accuracy points the blocks are worth",
                 5, 1, 1),
    ExerciseInfo("quantize_per_channel", "robustness",
                 "quantize a weight tensor symmetrically with one scale per output channel",
                 20, 2, 2),
    ExerciseInfo("error_ratio", "adaptive",
                 "measure one step's embedded error estimate against rtol and atol, sample by sample, the worst "
                 "sample of a batch deciding",
                 15, 2, 2),
)


def info(name: str) -> ExerciseInfo:
    """The catalogue's row of exercise ``name``."""
    for row in CATALOGUE:
        if row.name == name:
            return row
    raise KeyError(f"no exercise {name!r} in cnet_lib.book.exercises.catalogue.CATALOGUE; add its row there "
                   f"(chapter, objective, minutes, difficulty, points)")


def exercise_line(row: ExerciseInfo) -> str:
    """The line a student copy shows above the exercise (markdown)."""
    stars = "★" * row.difficulty + "☆" * (3 - row.difficulty)
    return (f"**Exercise `{row.name}`** · {row.points} point{'s' if row.points != 1 else ''} · about {row.minutes} min "
            f"· difficulty {stars} ({DIFFICULTY[row.difficulty]})  \n*Objective:* {row.objective}.")


# Every exercise's public side by name (:data:`EXERCISES`), in the order of :data:`.catalogue.CATALOGUE`.

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
