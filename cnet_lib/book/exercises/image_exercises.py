"""Exercises of the image chapters (their public side; references and hidden cases are the teacher's):

* "ContinuousNet": :data:`EULER_BLOCK_AS_RESNET`, one OdeBlock's Euler, N_t = M graph written as the residual
  loop of a ResNet (blocks with T ≠ 1, with and without skip gains, currently manifested as another graph; the
  block's own forward and the integrator are off limits).
* "Refinement training": :data:`PARAMETERS_AFTER_REFINEMENT` (the parameter count after every OdeBlock doubles
  M, without refining), :data:`REFINE_PIECEWISE_LINEAR` (a hat basis refined from M to 2M − 1 with θ(t)
  unchanged, without the library's refine) and :data:`IDEAL_SPEEDUP` (E · N_t(final) / Σ N_t, with schedules
  whose last N_t is not their largest).
* "Manifestation invariance": :data:`IDENTITY_GAP`, how many accuracy points the blocks are worth, from sweep
  rows in any order.
"""
from __future__ import annotations

from typing import Callable, Optional

from ...studies.robustness import study as robustness_study
from ...core import bases, integrate, models, odeblock
from ...runtime import rich_text
from ...studies import manifestation, refinement, robustness, stats as image_stats
from .framework import Forbidden
from .public_checks import Exercise, NearMiss, Rules, check_exercise
from .recipes import build, recipe

__all__ = ["EULER_BLOCK_AS_RESNET", "EULER_BLOCK_HINTS", "check_euler_block_as_resnet", "euler_block_cases",
           "PARAMETERS_AFTER_REFINEMENT", "PARAMETERS_AFTER_REFINEMENT_HINTS", "check_parameters_after_refinement",
           "model_cases", "REFINE_PIECEWISE_LINEAR", "REFINE_HINTS", "check_refine_piecewise_linear", "hat_cases",
           "IDEAL_SPEEDUP", "IDEAL_SPEEDUP_HINTS", "check_ideal_speedup", "schedule_cases", "IDENTITY_GAP",
           "IDENTITY_GAP_HINTS", "check_identity_gap", "sweep_cases", "refine_functions", "UNSHUFFLED",
           "EULER_BLOCK_NEAR_MISSES", "PARAMETERS_NEAR_MISSES", "REFINE_NEAR_MISSES", "IDEAL_SPEEDUP_NEAR_MISSES",
           "IDENTITY_GAP_NEAR_MISSES", "QUANTIZE_PER_CHANNEL", "QUANTIZE_HINTS", "QUANTIZE_NEAR_MISSES",
           "check_quantize_per_channel", "weight_cases"]


EULER_BLOCK_HINTS = (
    "an Euler step adds h times the rate to x. With N_t = M steps, step k starts at t_k = k·h and reads "
    "θ there: one residual update per step, in a loop over k.",
    "T is not always 1, and the rate includes the block's gain ε s(t); functional_call evaluates the residual "
    "with the weights θ(t) of the block. Each step starts from the x the step before produced. The block's "
    "current scheme and N_t play no role: the exercise fixes Euler and N_t = M.",
)

PARAMETERS_AFTER_REFINEMENT_HINTS = (
    "which parts of a ContinuousNet hold weight functions θ(t)? Only those grow when M doubles.",
    "a refinement doubles every trainable tensor inside the blocks (the coefficient sets θ̂_β and the "
    "gains s_β); the stem, the stitches and the head keep their size.",
)

REFINE_HINTS = (
    "the new nodes are the old ones plus one in the middle of each interval. A hat function's coefficient is "
    "θ at its node: what is θ at an old node, and at a midpoint between two nodes, where θ is a straight line?",
    "interleave: the old coefficients stay at the even positions, each odd position gets a value from its two "
    "neighbours. M = 1 is a constant θ: it becomes 2 hats with the same coefficient. Keep the trailing shape and "
    "the dtype.",
)

IDEAL_SPEEDUP_HINTS = (
    "an epoch costs in proportion to its N_t. What does the whole schedule cost, and what would the same "
    "number of epochs cost, all at the final N_t?",
    "the fixed-depth run uses the N_t of the last epoch, which is not always the largest; the speed-up is its "
    "cost divided by the schedule's, as a float.",
)

IDENTITY_GAP_HINTS = (
    "find the rows by their 'kind', not by their position: the order of the rows is not fixed.",
    "the gap compares the row of kind 'trained' with the row of kind 'identity'. Accuracies are fractions "
    "of 1; the gap is asked in percentage points.",
)


def _integrator_functions() -> tuple:
    """The functions of :mod:`cnet_lib.core.integrate` that integrate (its helpers stay allowed)."""
    return (integrate.integrate, integrate.integrate_positions, integrate.stage_positions)


def refine_functions() -> tuple:
    """Every ``refine`` of the library (models, OdeBlock, bases), the maps it applies, and ``project`` (projecting
    onto twice the functions counts what refining would)."""
    out = []
    for mod in (models, odeblock, bases):
        for cls in vars(mod).values():
            if isinstance(cls, type) and cls.__module__ == mod.__name__:
                out += [f for key, f in vars(cls).items() if callable(f) and hasattr(f, "__code__")
                        and ("refine" in key or key in ("_apply_map", "apply", "project", "project_matrix"))]
    return tuple(out)


# ----------------------------------------------------------------------------- chapter "ContinuousNet"
def euler_block_cases(blocks) -> list:
    """Recipes from ``(M, T, skip gains, ε, current scheme, current N_t, seed)``: the block and x of shape (6, 5)."""
    cases = []
    for m, T, skip, eps, scheme, n, seed in blocks:
        block = {"$": "ode_block", "m": m, "T": T, "skip": skip, "eps": eps, "scheme": scheme, "n_steps": n, "seed": seed}
        x = {"$": "randn", "shape": [6, 5], "seed": seed, "dtype": "float32"}
        catches = (("h_without_T",) if T != 1 else ()) + (("without_gain",) if skip or eps != 1 else ())
        cases.append(recipe(f"an OdeBlock with M = {m}, T = {T}, ε = {eps}, {'skip gains s(t)' if skip else 'no skip gains'}, "
                            f"currently set to {scheme} with N_t = {n}; x of shape (6, 5)", block, x, catches=catches))
    return cases


EULER_BLOCK_NEAR_MISSES = (
    NearMiss("h_without_T", "the step h = 1/M, the block's horizon T forgotten",
             "the block integrates over [0, T], and T is not always 1: M steps of that interval are each T/M long."),
    NearMiss("without_gain", "each residual update without the block's gain ε s(t)",
             "the rate of an OdeBlock is its residual scaled by the block's gain at that time (ε, and the skip "
             "gains s(t) when it has them): leave it out and every step is off."),
)

EULER_BLOCK_AS_RESNET = Exercise(
    name="euler_block_as_resnet", hints=EULER_BLOCK_HINTS, near_misses=EULER_BLOCK_NEAR_MISSES,
    public=lambda: euler_block_cases([(1, 1.0, False, 1.0, "euler", 1, 0), (3, 0.5, False, 0.8, "midpoint", 3, 1),
                                      (4, 2.5, True, 1.0, "rk4_classic", 2, 2), (7, 1.3, True, 0.6, "euler", 14, 3)]),
    forbidden=lambda: [
        Forbidden(functions=(odeblock.OdeBlock.forward, odeblock.OdeBlock.rate),
                  why="block(x) integrates the whole block; write the M residual updates yourself with "
                  "block.theta, block.gain and functional_call."),
        Forbidden(functions=(*_integrator_functions(), models.resnet_from_continuousnet, models.PreActResNet.forward),
                  why="write the M residual updates yourself with block.theta, block.gain and functional_call."),
    ],
    rules=Rules(banned_names=("forward", "manifested", "manifest", "rate", "integrate", "integrate_positions",
                              "stage_positions", "resnet"), uncallable=("block",)),
    rtol=1e-5, atol=1e-6, no_grad=True,
)


def check_euler_block_as_resnet(student_fn: Callable, hint: Optional[int] = None) -> bool:
    """Check ``euler_block_as_resnet(block, x)`` against the block's own Euler, N_t = M graph."""
    return check_exercise(EULER_BLOCK_AS_RESNET, student_fn, hint)


# ----------------------------------------------------------------------------- chapter "Refinement training"
def model_cases(nets) -> list:
    """Recipes from ``(channels, M, skip gains, classes, seed)``: small ContinuousNets; one with skip gains catches
    ``without_gains``."""
    return [recipe(f"ContinuousNet(channels={tuple(ch)}, n_basis={m}, skip_init={skip}, num_classes={k})",
                   {"$": "continuous_net", "channels": list(ch), "n_basis": m, "skip": skip, "classes": k, "seed": seed},
                   catches=("doubled_everything",) + (("without_gains",) if skip else ()))
            for ch, m, skip, k, seed in nets]


PARAMETERS_NEAR_MISSES = (
    NearMiss("doubled_everything", "every parameter doubled, the stem, the stitches and the head too",
             "only the blocks' weight functions θ(t) get twice the coefficients; the layers outside the blocks "
             "keep their size."),
    NearMiss("without_gains", "the coefficients θ̂ doubled but not the blocks' skip gains s_β",
             "a block with skip gains holds them as a function of t too, on the same basis as θ: they double "
             "with it."),
)


PARAMETERS_AFTER_REFINEMENT = Exercise(
    name="parameters_after_refinement", hints=PARAMETERS_AFTER_REFINEMENT_HINTS, near_misses=PARAMETERS_NEAR_MISSES,
    public=lambda: model_cases([((4, 8, 8), 1, True, 10, 0), ((3, 5), 2, False, 10, 0), ((2, 4, 6), [1, 2, 4], True, 10, 0),
                                ((6,), 3, False, 100, 0)]),
    forbidden=lambda: [Forbidden(functions=refine_functions(),
                                 why="The exercise is to count without refining: which tensors double?")],
    rules=Rules(banned_names=("refine", "_apply_map")),
)


def check_parameters_after_refinement(student_fn: Callable, hint: Optional[int] = None) -> bool:
    """Check ``parameters_after_refinement(model)`` on a few ContinuousNets (counted by refining a copy)."""
    return check_exercise(PARAMETERS_AFTER_REFINEMENT, student_fn, hint)


def hat_cases(rows) -> list:
    """Recipes from ``(M, trailing shape, dtype, seed)``: coefficient tensors θ̂ of shape (M, *shape)."""
    return [recipe(f"M = {m} hat coefficients of shape {tuple([m, *shape])}, {dtype}",
                   {"$": "randn", "shape": [m, *shape], "seed": seed, "dtype": dtype},
                   catches=("m_is_one",) if m == 1 else ("constant_refinement",))
            for m, shape, dtype, seed in rows]


REFINE_NEAR_MISSES = (
    NearMiss("constant_refinement", "each coefficient copied twice, as for a piecewise-constant θ(t)",
             "between two nodes a piecewise-linear θ is a straight line, not a step: a new node in the middle of "
             "an interval takes the value on that line."),
    NearMiss("m_is_one", "M = 1 left out: 2M − 1 = 1 coefficient where the refined basis has 2",
             "M = 1 is a constant θ, and its refinement has 2 hats, both at that constant: the rule for M ≥ 2 "
             "gives one."),
)

REFINE_PIECEWISE_LINEAR = Exercise(
    name="refine_piecewise_linear", hints=REFINE_HINTS, near_misses=REFINE_NEAR_MISSES,
    public=lambda: hat_cases([(1, [3], "float64", 0), (2, [], "float64", 1), (3, [2, 2], "float32", 2),
                              (5, [4], "float64", 3), (8, [2, 3, 3], "float32", 4)]),
    forbidden=lambda: [Forbidden(functions=refine_functions(), modules=(bases,),
                                 why="the library's bases refine for you; interleave the coefficients yourself.")],
    rules=Rules(banned_names=("refine", "_apply_map", "project", "project_matrix", "interpolate", "interp",
                              "make_basis", "PiecewiseLinear", "CoefficientMap", "bases")),
    compare="same_tensor", rtol=1e-6, atol=1e-7,
)


def check_refine_piecewise_linear(student_fn: Callable, hint: Optional[int] = None) -> bool:
    """Check ``refine_piecewise_linear(coeffs)`` on hat coefficients of several M, shapes and dtypes."""
    return check_exercise(REFINE_PIECEWISE_LINEAR, student_fn, hint)


def schedule_cases(schedules) -> list:
    """Recipes: one refinement schedule (N_t per epoch) each; one whose last N_t is below its largest catches
    ``max_not_last``."""
    def label(s):
        return f"N_t per epoch {list(s) if len(s) < 12 else str(list(s)[:6])[:-1] + ', …]'}"

    return [recipe(label(s), list(s), catches=("max_not_last",) if s[-1] != max(s) else ()) for s in schedules]


IDEAL_SPEEDUP_NEAR_MISSES = (
    NearMiss("max_not_last", "the largest N_t of the schedule in place of the last",
             "the fixed-depth run uses the depth the schedule ends at: its last N_t, which is not always its "
             "largest."),
)

IDEAL_SPEEDUP = Exercise(
    name="ideal_speedup", hints=IDEAL_SPEEDUP_HINTS, near_misses=IDEAL_SPEEDUP_NEAR_MISSES,
    public=lambda: schedule_cases([[1, 2, 2], [8] * 5, [1, 1, 2, 2, 4, 4, 8, 8, 8, 8], [1, 2, 4],
                                   [1] * 20 + [2] * 20 + [4] * 20 + [8] * 10 + [16] * 10 + [32] * 40,
                                   [1, 2, 4, 8, 4]]),
    forbidden=lambda: [Forbidden(modules=(refinement, manifestation),
                                 why="the image study computes the measured and ideal speed-ups; compute it yourself.")],
    rules=Rules(banned_names=("refinement_cost",)),
)


def check_ideal_speedup(student_fn: Callable, hint: Optional[int] = None) -> bool:
    """Check ``ideal_speedup(n_steps_per_epoch)`` on a few refinement schedules."""
    return check_exercise(IDEAL_SPEEDUP, student_fn, hint)


# ----------------------------------------------------------------------------- chapter "Manifestation invariance"
UNSHUFFLED = (4, 6)
"""Where a sweep's rows of kind ``trained`` and ``identity`` stand before they are shuffled."""


def sweep_cases(rows) -> list:
    """Recipes from ``(trained accuracy, identity accuracy, shuffle seed)``: seven sweep rows each; one where the
    rows at the two rows' unshuffled places (:data:`UNSHUFFLED`) hold other accuracies catches ``by_position``, one
    whose gap is not zero ``as_fraction``."""
    cases = []
    for tr, ident, seed in rows:
        rows_ = {"$": "sweep_rows", "trained": tr, "identity": ident, "seed": seed}
        built = build(rows_)
        moved = (built[UNSHUFFLED[0]]["accuracy"], built[UNSHUFFLED[1]]["accuracy"]) != (tr, ident)
        catches = (("by_position",) if moved else ()) + (("as_fraction",) if tr != ident else ())
        cases.append(recipe(f"7 sweep rows in a shuffled order (seed {seed})", rows_, catches=catches))
    return cases


IDENTITY_GAP_NEAR_MISSES = (
    NearMiss("by_position", "the rows read by their position in the table, not by their kind",
             "the rows come in any order: find each by its kind, wherever it stands."),
    NearMiss("as_fraction", "the gap as a fraction of 1, not in percentage points",
             "accuracies are fractions of 1, and the gap is asked in percentage points."),
)


_ROW_READERS = (rich_text.matches, rich_text.select_rows, rich_text.find_row, rich_text.format_table, rich_text.uniform,
                 rich_text.by_column_table, rich_text.spread_cell, rich_text.seeds_phrase, rich_text.times)
"""The library's functions that find, select and tabulate rows (what identity_gap asks to do by hand)."""


IDENTITY_GAP = Exercise(
    name="identity_gap", hints=IDENTITY_GAP_HINTS, near_misses=IDENTITY_GAP_NEAR_MISSES,
    public=lambda: sweep_cases([(0.775, 0.183, 0), (0.18, 0.18, 1), (0.5, 0.6, 2), (0.723, 0.208, 3)]),
    forbidden=lambda: [Forbidden(modules=(manifestation, robustness), functions=_ROW_READERS,
                                 why="the library's row readers (find_row, which other chapters use) find the rows "
                                     "for you; here, find them yourself.")],
    rules=Rules(banned_names=("find_row", "identity_gap_rows", "table1_rows")),
    rtol=1e-9, atol=1e-9,
)


def check_identity_gap(student_fn: Callable, hint: Optional[int] = None) -> bool:
    """Check ``identity_gap(rows)`` on synthetic sweep rows, in shuffled orders."""
    return check_exercise(IDENTITY_GAP, student_fn, hint)


# Exercise of the chapter "Beyond the paper: robustness and quantization": per-channel symmetric
# quantization of a weight tensor (:data:`QUANTIZE_PER_CHANNEL`; its reference and hidden cases are the teacher's).

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
