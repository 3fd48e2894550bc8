"""Exercises of the numerical chapters (their public side; the references and hidden cases are the teacher's):

* "How this book works": the observed order of convergence (:data:`OBSERVED_ORDER`).
* "Beyond the paper II: adaptive steps": ``error_ratio(e, y0, y1, rtol, atol)``, the scaled error norm that accepts
  or rejects one step of an embedded pair (:data:`ERROR_RATIO`).

* "Numerical integrators": ``rk_step(f, t, x, h, tableau)``, one explicit RK step read off a Butcher tableau
  (:data:`RK_STEP`); and ``embedded_step(f, t, x, h, tableau, b_hat)``, one step of an embedded pair with its
  error estimate from the same s evaluations (:data:`EMBEDDED_STEP`).  Neither may call the integrator,
  torchdiffeq or the pendulum's stepping functions.
* "Is a ResNet a forward-Euler integrator?": ``global_error(G, scheme, dt, t_final)`` (:data:`GLOBAL_ERROR`),
  with step counts where ``t_final / dt`` lands a hair below a whole number (``int()`` is one short) and a
  hair above it (rounding up is one too many).
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable, Optional

from ...core.schemes import get_scheme
from ...studies.pendulum import study
from ...core import adaptive, integrate as integrate_module
from ...pendulum import odenet, physics, trained_models
from .framework import Forbidden
from .public_checks import Exercise, NearMiss, Rules, check_exercise
from .recipes import recipe

STUDY = (study, trained_models)
"""The pendulum study's measurements and the module that obtains its trained models: the exercises ask for code
they hold."""

__all__ = ["STUDY", "RK_STEP", "RK_STEP_HINTS", "check_rk_step", "rk_step_cases", "EMBEDDED_STEP", "EMBEDDED_STEP_HINTS",
           "check_embedded_step", "embedded_step_cases", "GLOBAL_ERROR", "GLOBAL_ERROR_HINTS", "check_global_error",
           "global_error_cases", "integrator_rules", "SCHEMES", "EMBEDDED_PAIRS", "NODE_MISSES", "embedded_misses",
           "RK_STEP_NEAR_MISSES", "EMBEDDED_STEP_NEAR_MISSES", "GLOBAL_ERROR_NEAR_MISSES", "OBSERVED_ORDER",
           "OBSERVED_ORDER_HINTS", "OBSERVED_ORDER_NEAR_MISSES", "check_observed_order", "observed_order_cases",
           "ERROR_RATIO", "ERROR_RATIO_HINTS", "ERROR_RATIO_NEAR_MISSES", "check_error_ratio", "error_ratio_cases"]

SCHEMES = ("euler", "midpoint", "heun", "ralston", "rk3", "rk4_classic", "rk4_38")
EMBEDDED_PAIRS = (("heun", ("1", "0")), ("ralston", ("1", "0")), ("rk3", ("0", "1", "0")),
                  ("rk4_classic", ("0", "1", "0", "0")), ("rk4_38", ("1", "0", "0", "0")),
                  ("rk4_classic", ("1/6", "1/3", "1/3", "1/6")))
"""(scheme, embedded weights b̂) pairs that share the scheme's stages: Heun–Euler, Ralston–Euler, Kutta's RK3
with the midpoint rule, classic RK4 with the midpoint rule, RK4 3/8 with Euler, and b̂ = b (a zero estimate)."""

RK_STEP_HINTS = (
    "a tableau with s stages needs s evaluations of the rate, one per stage, each using the slopes "
    "of the stages before it. Keep the slopes in a list as you compute them.",
    "stage i is evaluated at its own time, which depends on c[i] and on h, and at x moved by the earlier slopes "
    "weighted with row i of a; the step weighs all slopes with b. The entries are Fractions: convert them to "
    "float before they multiply a tensor.",
)

EMBEDDED_STEP_HINTS = (
    "an embedded pair is two methods that share every stage: compute the slopes once, as for one step, "
    "and combine the same slopes twice, with b and with b̂.",
    "count the rate's evaluations: s of them, not 2s. The estimate is the difference of the two combinations "
    "(the higher-order step minus the embedded one), already multiplied by h; return both as a pair.",
)

GLOBAL_ERROR_HINTS = (
    "N_t = t_final / dt steps of size dt from the exact state at t = 0 end at t_final: roll the rate "
    "out for that many steps and compare the last state with the exact one there.",
    "t_final / dt is a float, and lands a hair below or a hair above the whole number it means (0.3 / 0.1 is "
    "2.9999999999999996, 2.1 / 0.3 is 7.000000000000001): take the nearest whole number. The error is the "
    "Euclidean norm over both components, as a Python float.",
)


def integrator_rules() -> list:
    """What a step may not call: the library's integrators (fixed and adaptive) and stepping functions, the study,
    torchdiffeq."""
    stepping = (integrate_module.integrate, integrate_module.integrate_positions, integrate_module.stage_positions)
    rules = [
        Forbidden(functions=stepping, modules=STUDY,
                  why="cnet_lib's integrator takes the whole step for you; write the stage loop yourself."),
        Forbidden(functions=(odenet.one_step, odenet.rollout),
                  why="one_step and rollout call the integrator; write the stage loop yourself."),
        Forbidden(modules=(adaptive,), why="the adaptive integrator takes embedded steps for you; write the stage loop "
                  "yourself."),
    ]
    try:
        import torchdiffeq
    except ImportError:  # pragma: no cover - a dependency of cnet_lib
        return rules
    return rules + [Forbidden(modules=(torchdiffeq,), why="torchdiffeq takes the step for you; write the stage loop yourself.")]


_STEPPING_RULES = Rules(banned_names=("integrate", "integrate_positions", "stage_positions", "odeint", "one_step",
                                      "rollout", "odeint_adjoint"), banned_modules=("torchdiffeq",))


# --------------------------------------------------------------------------- one RK step
def _x0() -> dict:
    return {"$": "tensor", "data": [3 * math.pi / 4, 0.0]}


def _batch() -> dict:
    return {"$": "tensor", "data": [[0.5, -1.0], [2.0, 0.3], [-1.0, 1.5]]}


def rk_step_cases(schemes=SCHEMES, t: float = 0.7, h: float = 0.25, omega: float = 3.0) -> list:
    """Recipes: each scheme on the pendulum from [3π/4, 0] (h = 0.1), and on a forced, time-dependent rate from a
    batch of three states at ``t`` (step ``h``, frequency ``omega``): there a step that ignores h in the stage
    times is wrong."""
    cases = []
    for name in schemes:
        scheme = {"$": "scheme", "name": name}
        cases.append(recipe(f"{name}: pendulum, t = 0, x = [3π/4, 0], h = 0.1", {"$": "rate", "name": "pendulum"}, 0.0,
                            _x0(), 0.1, scheme))
        cases.append(recipe(f"{name}: forced rate (ω = {omega}), t = {t}, a batch of 3 states, h = {h}",
                            {"$": "rate", "name": "forced", "omega": omega}, t, _batch(), h, scheme,
                            catches=() if name == "euler" else NODE_MISSES))
    return cases


NODE_MISSES = ("stage_time_without_h", "no_nodes")
"""The near misses of the nodes c_i, caught by a rate that depends on time and a scheme with c ≠ 0."""

RK_STEP_NEAR_MISSES = (
    NearMiss("stage_time_without_h", "stage i evaluated at t + c_i instead of t + c_i h",
             "a stage's time is t plus a fraction c_i of the step: the node c_i is a fraction of h, not of a unit "
             "of time."),
    NearMiss("no_nodes", "every stage evaluated at t (the nodes c_i ignored)",
             "each stage has its own time, set by its node c_i: on a rate that depends on time, a stage evaluated "
             "at the step's start is wrong."),
)

RK_STEP = Exercise(name="rk_step", hints=RK_STEP_HINTS, public=rk_step_cases, forbidden=integrator_rules,
                   rules=_STEPPING_RULES, rtol=1e-12, atol=1e-12, near_misses=RK_STEP_NEAR_MISSES)


def check_rk_step(student_fn: Callable, hint: Optional[int] = None) -> bool:
    """Check ``rk_step(f, t, x, h, tableau)`` on seven tableaux (Euler to RK4 3/8), autonomous and forced rates."""
    return check_exercise(RK_STEP, student_fn, hint)


# --------------------------------------------------------------------------- an embedded pair
def embedded_step_cases(pairs=EMBEDDED_PAIRS, t: float = 0.7, h: float = 0.25, omega: float = 3.0) -> list:
    """Recipes: every (scheme, b̂) pair on the pendulum and on the forced rate (a batch of three states); the rate
    counts its evaluations, which must be the scheme's s."""
    cases = []
    for name, b_hat in pairs:
        args = ({"$": "scheme", "name": name}, {"$": "fractions", "items": list(b_hat)})
        pair = f"{name} with b̂ = ({', '.join(b_hat)})"
        catches = embedded_misses(name, b_hat)
        cases.append(recipe(f"{pair}: pendulum, t = 0, x = [3π/4, 0], h = 0.1",
                            {"$": "rate", "name": "pendulum", "counted": True}, 0.0, _x0(), 0.1, *args, catches=catches))
        cases.append(recipe(f"{pair}: forced rate (ω = {omega}), t = {t}, a batch of 3 states, h = {h}",
                            {"$": "rate", "name": "forced", "omega": omega, "counted": True}, t, _batch(), h, *args,
                            catches=catches))
    return cases


def embedded_misses(name: str, b_hat) -> tuple:
    """The near misses a case of the pair (``name``, ``b_hat``) catches: two steps always; a flipped estimate
    unless b̂ = b (an estimate of zero has no sign)."""
    same = [Fraction(b) for b in b_hat] == list(get_scheme(name).b)
    return ("two_steps",) + (() if same else ("flipped_estimate",))


EMBEDDED_STEP_NEAR_MISSES = (
    NearMiss("two_steps", "two whole steps, one per set of weights: 2s evaluations of the rate instead of s",
             "an embedded pair shares its stages: the rate is evaluated once per stage, s times in all, and the "
             "same slopes are combined twice."),
    NearMiss("flipped_estimate", "the error estimate with its sign flipped (the embedded step minus the step)",
             "the estimate is the step's own combination minus the embedded one, in that order: check its sign."),
)

EMBEDDED_STEP = Exercise(name="embedded_step", hints=EMBEDDED_STEP_HINTS, public=embedded_step_cases,
                         forbidden=integrator_rules, rules=_STEPPING_RULES, rtol=1e-12, atol=1e-12,
                         near_misses=EMBEDDED_STEP_NEAR_MISSES)


def check_embedded_step(student_fn: Callable, hint: Optional[int] = None) -> bool:
    """Check ``embedded_step(f, t, x, h, tableau, b_hat)``: the step, its error estimate and s evaluations."""
    return check_exercise(EMBEDDED_STEP, student_fn, hint)


# --------------------------------------------------------------------------- global error
def global_error_cases(rows: list) -> list:
    """Recipes from ``(G, scheme, dt, t_final)`` rows (G: ``"true_rate"`` or an ODENet seed); a row whose
    t_final / dt is not exactly whole catches ``int`` (a hair below) or ``ceil`` (a hair above)."""
    cases = []
    for g, scheme, dt, t_final in rows:
        rate = {"$": "true_rate"} if g == "true_rate" else {"$": "odenet", "hidden": 8, "seed": int(g)}
        ratio, whole = t_final / dt, round(t_final / dt)
        catches = ("int",) if ratio < whole else ("ceil",) if ratio > whole else ()
        side = {"int": f", t_final/dt = {ratio!r}", "ceil": f", t_final/dt = {ratio!r}"}.get(catches[0] if catches else "", "")
        name = "true_rate" if g == "true_rate" else f"a small fixed ODENet (seed {g})"
        cases.append(recipe(f"G = {name}, {scheme}, dt = {dt}, t_final = {t_final}{side}", rate, scheme, dt, t_final,
                            catches=catches))
    return cases


GLOBAL_ERROR_NEAR_MISSES = (
    NearMiss("int", "N_t = int(t_final / dt): one step short where t_final / dt lands a hair below a whole number",
             "t_final / dt is a float, and here it lands a hair below the whole number it means: cutting it off "
             "loses a step. Take the nearest whole number."),
    NearMiss("ceil", "N_t rounded up: one step too many where t_final / dt lands a hair above a whole number",
             "t_final / dt is a float, and here it lands a hair above the whole number it means: rounding up adds "
             "a step. Take the nearest whole number."),
)

GLOBAL_ERROR = Exercise(
    name="global_error", hints=GLOBAL_ERROR_HINTS, near_misses=GLOBAL_ERROR_NEAR_MISSES,
    public=lambda: global_error_cases([("true_rate", "euler", 0.01, 1.0), ("true_rate", "midpoint", 0.02, 1.0),
                                       ("true_rate", "rk4_classic", 0.05, 2.0), (123, "rk4_38", 0.01, 0.5),
                                       (123, "midpoint", 0.005, 0.25), ("true_rate", "rk4_classic", 0.1, 0.3),
                                       (123, "euler", 0.1, 0.7), ("true_rate", "rk4_classic", 0.3, 2.1),
                                       (123, "midpoint", 0.01, 0.07)]),
    forbidden=lambda: [Forbidden(functions=(odenet.global_error, physics.steps_for), modules=STUDY,
                                 why="Compare the last state with exact_solution(t_final) yourself.")],
    rules=Rules(allowed_imports=("cnet_lib.pendulum.exact_solution", "cnet_lib.pendulum.rollout",
                                 "cnet_lib.pendulum.physics.exact_solution", "cnet_lib.pendulum.odenet.rollout"),
                banned_names=("global_error", "final_error", "global_errors", "convergence")),
    # rtol 1e-6: the error of a rollout of a fixed random ODENet moves by up to 5e-9 of itself between CPU kernels
    # (float64 tanh in ATen's plain loops against its AVX2/AVX-512 ones, measured); a step too few or too many moves
    # it by far more than 1e-6
    rtol=1e-6, atol=1e-12,
)


def check_global_error(student_fn: Callable, hint: Optional[int] = None) -> bool:
    """Check ``global_error(G, scheme, dt, t_final)`` on the true rate and a small fixed network."""
    return check_exercise(GLOBAL_ERROR, student_fn, hint)


# Exercise of the chapter "How this book works": the observed order of convergence (:data:`OBSERVED_ORDER`).
#
# Its expected outputs are data (``public_answers.json``); the reference and the hidden cases are the teacher's
# (:mod:`cnet_lib.teacher`, absent from a student's install).

OBSERVED_ORDER_HINTS = (
    "an error that behaves like C·Δt^r is a straight line on log–log axes, and r is its slope. "
    "Use every point, not only two of them.",
    "take the logarithm of both lists first; then fit one straight line through all the points "
    "(log Δt, log error) by least squares: its slope is r. numpy can fit polynomials of any degree.",
)


def observed_order_cases(dts: list, powers: tuple, wobbly: list, shuffled: list) -> list:
    """Recipes: exact power laws 3 Δt^p on ``dts``; errors that wobble ±30% around Δt² on ``wobbly`` (a
    two-point slope, or the mean of the slopes between neighbours, is wrong there); numpy arrays in the order
    ``shuffled`` whose errors lie a little off a power law (ditto)."""
    cases = [recipe(f"an exact power law, error = 3 Δt^{p}", dts, [3.0 * d ** p for d in dts]) for p in powers]
    cases.append(recipe(f"errors that wobble around C Δt² ({len(wobbly)} points)", wobbly,
                        [d ** 2 * (1.0 + 0.3 * (-1) ** k) for k, d in enumerate(wobbly)],
                        catches=("two_point", "mean_of_slopes")))
    cases.append(recipe("numpy arrays in no order, errors a little off a power law",
                        {"$": "array", "data": [dts[i] for i in shuffled]},
                        {"$": "array", "data": [0.7 * dts[i] ** 3 * (1 + 0.1 * i) for i in shuffled]},
                        catches=("two_point", "mean_of_slopes")))
    return cases


OBSERVED_ORDER_NEAR_MISSES = (
    NearMiss("two_point", "the slope through two points of the table (the two finest runs), not a fit through all",
             "a slope through two points ignores the rest of the table: where the errors wobble, every point "
             "should pull on the line. Fit one straight line through all of them."),
    NearMiss("mean_of_slopes", "the mean of the slopes between neighbouring points, not the least-squares slope",
             "the mean of the slopes between neighbours is not the slope of the best line through all the points: "
             "where the errors wobble, or the table is not sorted, they differ. Fit the line itself."),
)


OBSERVED_ORDER = Exercise(
    name="observed_order",
    hints=OBSERVED_ORDER_HINTS,
    public=lambda: observed_order_cases([0.5, 0.25, 0.125, 0.0625], (1, 2, 4), [0.3, 0.2, 0.1, 0.05, 0.025],
                                        [2, 0, 3, 1]),
    forbidden=lambda: [Forbidden(modules=STUDY, why="Fit the line yourself (numpy's polynomial fit is fine).")],
    rules=Rules(banned_names=("fit_slopes", "local_slopes", "convergence")),
    near_misses=OBSERVED_ORDER_NEAR_MISSES,
)


def check_observed_order(student_fn: Callable, hint: Optional[int] = None) -> bool:
    """Check ``observed_order(dts, errors)`` on a few error tables (exact power laws, wobbly, unsorted arrays)."""
    return check_exercise(OBSERVED_ORDER, student_fn, hint)


# Exercise of the chapter "Beyond the paper II: adaptive steps": ``error_ratio(e, y0, y1, rtol, atol)``, the
# scaled error norm that accepts or rejects one step of an embedded pair (:data:`ERROR_RATIO`; its reference and
# hidden cases are the teacher's).  The cases tell the rule from its near misses: the RMS over the whole batch
# (``rms_over_batch``: one hard sample among easy ones), the scale from ``|y0|`` alone (``y0_only``: the state
# grows in the step), the largest entry instead of the RMS (``max_entry``), and the RMS along the last axis only
# (``last_axis``: samples of more than one dimension).

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
    forbidden=lambda: [Forbidden(modules=(adaptive,),
                                 why="the library's step control computes this norm; write the three lines yourself.")],
    rules=Rules(banned_names=("error_norm", "integrate_adaptive", "integrate_adaptive_positions", "odeint"),
                banned_modules=("torchdiffeq",)),
    rtol=1e-6, atol=1e-12, no_grad=True,
)


def check_error_ratio(student_fn: Callable, hint: Optional[int] = None) -> bool:
    """Check ``error_ratio(e, y0, y1, rtol, atol)`` on single states, batches with one hard sample and images."""
    return check_exercise(ERROR_RATIO, student_fn, hint)
