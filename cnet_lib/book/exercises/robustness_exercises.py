"""Exercise of the chapter "Beyond the paper: robustness and quantization": per-channel symmetric
quantization of a weight tensor (:data:`QUANTIZE_PER_CHANNEL`; its reference and hidden cases are the teacher's)."""
from __future__ import annotations

from typing import Callable, Optional

from ...studies import stats as image_stats
from ...studies.robustness import study as robustness_study
from .framework import Forbidden
from .public_checks import Exercise, NearMiss, Rules, check_exercise
from .recipes import recipe

__all__ = ["QUANTIZE_PER_CHANNEL", "QUANTIZE_HINTS", "QUANTIZE_NEAR_MISSES", "check_quantize_per_channel",
           "weight_cases"]

QUANTIZE_HINTS = (
    "every output channel w[c] (a slice along the first dimension, of any shape) gets its own scale, "
    "set by its largest weight in magnitude, so that this weight lands exactly on the last level.",
    "with b bits there are 2^(b−1) − 1 levels on each side of zero: divide by the channel's scale, round, keep "
    "the result within the levels and scale back. A channel of zeros has a scale of 0: do not divide by it. "
    "Return a tensor of w's shape and dtype.",
)


def weight_cases(rows) -> list:
    """Recipes from ``(label, shape, seed, row scales, zero rows, dtype, bits)``: a weight tensor and a bit width."""
    cases = []
    for label, shape, seed, scale, zeros, dtype, bits in rows:
        w = {"$": "randn", "shape": list(shape), "seed": seed, "dtype": dtype, "row_scale": scale, "zero_rows": list(zeros)}
        catches = ("one_scale",) if shape[0] - len(zeros) >= 2 else ()  # channels of their own sizes
        catches += ("nan_on_zeros",) if zeros else ()
        cases.append(recipe(label, w, bits, catches=catches + ("levels_off_by_one",)))
    return cases


_SPREAD = [1e-3, 1.0, 30.0, 0.25]

QUANTIZE_NEAR_MISSES = (
    NearMiss("one_scale", "one scale for the whole tensor, not one per output channel",
             "channels that differ in size by orders of magnitude each need a scale of their own, set by their own "
             "largest weight: one scale for all rounds the small channels to zero."),
    NearMiss("nan_on_zeros", "a division by the scale of a channel of zeros (NaN where zeros should stay)",
             "a channel of zeros has a scale of zero: dividing by it gives NaN. Such a channel stays zero."),
    NearMiss("levels_off_by_one", "2^(b−1) levels on each side of zero, one too many (the largest weight then lands "
                                  "on a level that b bits do not give both signs)",
             "count the levels again: b signed bits give as many levels above zero as below it, and the code "
             "that would break the symmetry is left unused. The largest weight lands on the last level."),
)

QUANTIZE_PER_CHANNEL = Exercise(
    name="quantize_per_channel", hints=QUANTIZE_HINTS, near_misses=QUANTIZE_NEAR_MISSES,
    public=lambda: weight_cases([
        ("a (4, 6) float64 weight whose rows differ in scale by 10⁴, 8 bits", (4, 6), 11, _SPREAD, (), "float64", 8),
        ("the same weight, 4 bits", (4, 6), 11, _SPREAD, (), "float64", 4),
        ("the same weight, 2 bits (levels -1, 0, 1)", (4, 6), 11, _SPREAD, (), "float64", 2),
        ("a (3, 2, 3, 3) convolution weight, 4 bits: one scale per output channel", (3, 2, 3, 3), 12, _SPREAD[:3], (),
         "float64", 4),
        ("a (3, 5) weight whose second row is all zeros, 8 bits", (3, 5), 13, None, (1,), "float64", 8),
        ("a float32 weight, 8 bits: the result keeps float32", (4, 6), 11, _SPREAD, (), "float32", 8),
    ]),
    forbidden=lambda: [Forbidden(modules=(robustness_study, image_stats),
                                 why="the robustness study quantizes for you; write the three lines yourself.")],
    rules=Rules(banned_names=("quantize_per_channel", "quantize_per_tensor", "fake_quantize_per_channel_affine",
                              "fake_quantize_per_tensor_affine", "quantize_weights", "quantize_theta", "quantization",
                              "perturbations", "ao")),
    compare="same_tensor", rtol=1e-6, atol=1e-12,
)


def check_quantize_per_channel(student_fn: Callable, hint: Optional[int] = None) -> bool:
    """Check ``quantize_per_channel(w, bits)`` on weights of several shapes, scales and bit widths."""
    return check_exercise(QUANTIZE_PER_CHANNEL, student_fn, hint)
