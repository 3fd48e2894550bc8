"""Exercise of the chapter "Beyond the paper II: adaptive steps": ``error_ratio(e, y0, y1, rtol, atol)``, the
scaled error norm that accepts or rejects one step of an embedded pair (:data:`ERROR_RATIO`; its reference and
hidden cases are the teacher's).  The cases tell the rule from its near misses: the RMS over the whole batch
(``rms_over_batch``: one hard sample among easy ones), the scale from ``|y0|`` alone (``y0_only``: the state
grows in the step), the largest entry instead of the RMS (``max_entry``), and the RMS along the last axis only
(``last_axis``: samples of more than one dimension)."""
from __future__ import annotations

from typing import Callable, Optional

from ...core import adaptive, step_control
from .framework import Forbidden
from .public_checks import Exercise, NearMiss, Rules, check_exercise
from .recipes import recipe

__all__ = ["ERROR_RATIO", "ERROR_RATIO_HINTS", "ERROR_RATIO_NEAR_MISSES", "check_error_ratio", "error_ratio_cases"]

ERROR_RATIO_HINTS = (
    "every entry of e is allowed its own tolerance, atol plus rtol times the larger magnitude of that entry before "
    "and after the step: divide by it first. Then measure each sample on its own, and let the worst sample decide.",
    "a sample is one slice along the first dimension (a 0-d or 1-d tensor is a single sample). Per sample, the root "
    "mean square of its scaled entries; then the largest of these, returned as a Python float.",
)


def _t(data) -> dict:
    return {"$": "tensor", "data": data}


EVERY_MISS = ("rms_over_batch", "y0_only", "max_entry")
SAMPLES_OF_MORE_DIMENSIONS = EVERY_MISS + ("last_axis",)


def error_ratio_cases() -> list:
    """Recipes: one sample; a batch with one hard sample; a state that grows in the step; images; rtol or atol 0."""
    hard = [1.0, 1.0, 1.0, 30.0]
    return [
        recipe("one sample of 3 entries (a 1-d tensor), rtol = atol = 1e-3",
               _t([2e-3, -1e-3, 5e-4]), _t([1.0, -2.0, 0.5]), _t([1.1, -1.9, 0.4]), 1e-3, 1e-3,
               catches=("y0_only", "max_entry")),
        recipe("a batch of 4 samples (rows), the last one 30 times harder: the worst sample decides",
               {"$": "randn", "shape": [4, 5], "seed": 3, "row_scale": hard}, {"$": "randn", "shape": [4, 5], "seed": 4},
               {"$": "randn", "shape": [4, 5], "seed": 5}, 0.01, 0.01, catches=EVERY_MISS),
        recipe("a state that grows tenfold in the step: the scale uses max(|y0|, |y1|)",
               _t([[1e-3, 2e-3], [4e-3, -1e-3]]), _t([[0.1, -0.1], [0.2, 0.05]]), _t([[1.0, -1.0], [2.0, 0.5]]),
               1e-2, 1e-4, catches=EVERY_MISS),
        recipe("a batch of 2 images of shape (3, 4, 4): each image is one sample",
               {"$": "randn", "shape": [2, 3, 4, 4], "seed": 6, "row_scale": [1e-3, 1e-2]},
               {"$": "randn", "shape": [2, 3, 4, 4], "seed": 7}, {"$": "randn", "shape": [2, 3, 4, 4], "seed": 8},
               1e-3, 1e-3, catches=SAMPLES_OF_MORE_DIMENSIONS),
        recipe("an absolute tolerance only (rtol = 0)", _t([[0.01, -0.02], [0.005, 0.0]]), _t([[3.0, 1.0], [0.0, 2.0]]),
               _t([[3.0, 1.1], [0.1, 2.0]]), 0.0, 0.01, catches=("rms_over_batch", "max_entry")),
        recipe("a relative tolerance only (atol = 0), in float32",
               {"$": "tensor", "data": [[0.01, -0.02, 0.03]], "dtype": "float32"},
               {"$": "tensor", "data": [[1.0, 2.0, -3.0]], "dtype": "float32"},
               {"$": "tensor", "data": [[1.5, 2.0, -2.0]], "dtype": "float32"}, 0.1, 0.0, catches=("y0_only", "max_entry")),
    ]


ERROR_RATIO_NEAR_MISSES = (
    NearMiss("rms_over_batch", "the RMS over the whole batch, not per sample",
             "a batch holds samples of very different difficulty: measure each sample on its own, and let the "
             "worst decide. Averaged over the batch, one hard sample hides among easy ones."),
    NearMiss("y0_only", "each entry's tolerance from |y0| alone",
             "the tolerance of an entry uses its larger magnitude, before or after the step: where the state "
             "grows in the step, the start alone asks too much."),
    NearMiss("max_entry", "the largest scaled entry, not the RMS of a sample's entries",
             "within a sample the scaled entries are combined as a root mean square, not by their largest."),
    NearMiss("last_axis", "the RMS along the last axis only (right for a batch of rows, wrong for samples of more "
                          "dimensions, such as images)",
             "a sample may have more than one dimension (an image has three): its root mean square runs over all of "
             "its entries, not along its last axis alone."),
)

ERROR_RATIO = Exercise(
    name="error_ratio", hints=ERROR_RATIO_HINTS, public=error_ratio_cases, near_misses=ERROR_RATIO_NEAR_MISSES,
    forbidden=lambda: [Forbidden(modules=(step_control, adaptive),
                                 why="the library's step control computes this norm; write the three lines yourself.")],
    rules=Rules(banned_names=("error_norm", "integrate_adaptive", "integrate_adaptive_positions", "odeint"),
                banned_modules=("torchdiffeq",)),
    rtol=1e-6, atol=1e-12, no_grad=True,
)


def check_error_ratio(student_fn: Callable, hint: Optional[int] = None) -> bool:
    """Check ``error_ratio(e, y0, y1, rtol, atol)`` on single states, batches with one hard sample and images."""
    return check_exercise(ERROR_RATIO, student_fn, hint)
