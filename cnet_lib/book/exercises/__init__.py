"""Exercise checks for the book's chapters (one module per study, the framework in :mod:`.framework`).

Each chapter's check is ``check_<function name>(student_fn, hint=None) -> bool``; it prints
``✅ pass`` or ``❌ fail`` with a graded hint, and rejects calls into the library code the
exercise asks the student to write.  Solution cells decorate their function with
:func:`solution`, so that running every cell never replaces the reader's own function.
Importing this package has no side effects.
"""
from .framework import Case, Forbidden, check, describe, is_stub, reset_hints, solution, values_close
from .how_to_use import check_observed_order
from .image_exercises import (check_euler_block_as_resnet, check_ideal_speedup, check_identity_gap,
                     check_parameters_after_refinement)
from .pendulum_exercises import check_global_error, check_rk_step
from .robustness_exercises import check_quantize_per_channel

__all__ = ["Case", "Forbidden", "check", "describe", "is_stub", "reset_hints", "solution", "values_close",
           "check_observed_order", "check_rk_step", "check_global_error", "check_euler_block_as_resnet",
           "check_parameters_after_refinement", "check_ideal_speedup", "check_identity_gap",
           "check_quantize_per_channel"]
