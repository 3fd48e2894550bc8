"""The book's exercises, their public side (the pendulum and numerics chapters' in :mod:`.pendulum_exercises`, the image chapters' in :mod:`.image_exercises`, the framework in :mod:`.framework`).

Each chapter's check is ``check_<function name>(student_fn, hint=None) -> bool``; it prints ``✅ pass`` or
``❌ fail`` with a graded hint, and rejects calls into the library code the exercise asks the student to
write.  Expected outputs are data (``public_answers.json``): the references and the hidden cases are the
teacher's (:mod:`cnet_lib.teacher`, which a student's install does not carry).  :data:`EXERCISES` holds every
exercise's cases, hints and rules; :mod:`.catalogue` its objective, minutes, difficulty and points; a student
copy's ``grader`` is a :class:`Notebook`.  Solution cells decorate their function with :func:`solution`, so that
running every cell never replaces the reader's own function; later cells use a reader's function inside
``with student_code(name):``.  Importing this package has no side effects.
"""
from .catalogue import CATALOGUE, ExerciseInfo, EXERCISES, chapter_exercises, exercise, info
from .framework import Case, Forbidden, check, describe, is_stub, reset_hints, solution, student_code, values_close
from .image_exercises import (check_euler_block_as_resnet, check_ideal_speedup, check_identity_gap,
    check_parameters_after_refinement, check_quantize_per_channel, check_refine_piecewise_linear)
from .notebook_grader import Notebook
from .pendulum_exercises import (check_embedded_step, check_error_ratio, check_global_error, check_observed_order,
    check_rk_step)
from .public_checks import Exercise, Rules, check_exercise

__all__ = ["Case", "Forbidden", "check", "describe", "is_stub", "reset_hints", "solution", "values_close",
           "check_observed_order", "check_rk_step", "check_embedded_step", "check_global_error",
           "check_euler_block_as_resnet", "check_parameters_after_refinement", "check_refine_piecewise_linear",
           "check_ideal_speedup", "check_identity_gap", "check_quantize_per_channel", "Notebook", "student_code",
           "EXERCISES", "exercise", "chapter_exercises", "Exercise", "Rules", "check_exercise", "CATALOGUE",
           "ExerciseInfo", "info", "check_error_ratio"]
