"""Embedded pairs and adaptive steps: exact tableaux, every stage's position, break points, the error norm over a
batch, the controller, the first step, max_steps, gradients, and agreement with torchdiffeq and the exact pendulum."""
import math
from fractions import Fraction

import numpy as np
import pytest
import torch
import torchdiffeq

from cnet_lib.core.adaptive import (AdaptivePosition, FACMAX, FACMIN, MaxStepsError, SAFETY, Tolerances, embedded_step,
    error_norm, initial_step, integrate_adaptive, integrate_adaptive_positions, propose_step)
from cnet_lib.core.bases import piece_index
from cnet_lib.core.schemes import EmbeddedPair, is_embedded_pair
from cnet_lib.pendulum.physics import exact_solution, true_rate
from cnet_lib import get_scheme, integrate, scheme_names

F = Fraction
PAIRS = {"bosh3": (3, 2, 4), "dopri5": (5, 4, 7)}  # orders of b and b_hat, stages


def fitted_slope(xs, ys):
    return np.polyfit(np.log(xs), np.log(ys), 1)[0]


# --------------------------------------------------------------------------- tableaux
@pytest.mark.parametrize("name", sorted(PAIRS))
def test_pairs_are_exact_checked_fsal_tableaux(name):
    p, p_hat, s = PAIRS[name]
    pair = get_scheme(name)
    assert isinstance(pair, EmbeddedPair) and is_embedded_pair(name) and name in scheme_names()
    assert (pair.order, pair.order_hat, pair.stages, pair.error_order) == (p, p_hat, s, min(p, p_hat))
    assert pair.satisfies_order(p) and not pair.satisfies_order(p + 1)
    assert all(isinstance(v, Fraction) for v in pair.b + pair.b_hat + pair.c)
    assert pair.fsal and pair.a[-1] == pair.b and pair.c[-1] == 1 and pair.b[-1] == 0
    assert not is_embedded_pair("rk4_classic")


@pytest.mark.parametrize("name,module,table", [("bosh3", "bosh3", "_BOGACKI_SHAMPINE_TABLEAU"),
                                               ("dopri5", "dopri5", "_DORMAND_PRINCE_SHAMPINE_TABLEAU")])
def test_pairs_have_torchdiffeqs_propagated_tableau(name, module, table):
    """Same A, c and b as torchdiffeq's solvers of the same name; bosh3 also the same error row.  torchdiffeq's
    dopri5 estimates the error with another embedded row (Shampine's), itself of order 4, so its step choice
    differs slightly from DOPRI5's (HNW's b̂, used here)."""
    import importlib

    ref = getattr(importlib.import_module(f"torchdiffeq._impl.{module}"), table)
    pair = get_scheme(name)
    assert torch.allclose(ref.alpha, torch.tensor([float(c) for c in pair.c[1:]], dtype=torch.float64), rtol=0, atol=1e-15)
    for i, row in enumerate(ref.beta, start=1):
        assert torch.allclose(row, torch.tensor([float(v) for v in pair.a[i][:i]], dtype=torch.float64), atol=1e-14)
    assert torch.allclose(ref.c_sol, torch.tensor([float(v) for v in pair.b], dtype=torch.float64), atol=1e-15)
    theirs_hat = [F(v).limit_denominator(100_000) for v in (ref.c_sol - ref.c_error).tolist()]
    from cnet_lib.core.schemes import row_satisfies

    assert row_satisfies(pair.a, theirs_hat, pair.order_hat) and not row_satisfies(pair.a, theirs_hat, pair.order_hat + 1)
    assert (tuple(theirs_hat) == pair.b_hat) == (name == "bosh3")


def test_wrong_pair_declarations_are_refused():
    bs = get_scheme("bosh3")
    make = lambda **kw: EmbeddedPair(**{**dict(name="x", order=3, a=bs.a, b=bs.b, c=bs.c, b_hat=bs.b_hat,
                                                order_hat=2, fsal=True), **kw})
    assert make().b_hat == bs.b_hat
    with pytest.raises(ValueError, match="b_hat but fails the order-2"):
        make(b_hat=(F(1, 4), F(1, 4), F(1, 4), F(1, 4)))
    with pytest.raises(ValueError, match="b_hat but satisfies every order-3"):
        make(order_hat=2, b_hat=bs.b)
    with pytest.raises(ValueError, match="declared fsal=False"):
        make(fsal=False)
    with pytest.raises(ValueError, match="order_hat must be"):
        make(order_hat=3)
    with pytest.raises(ValueError, match="b_hat has 3 entries"):
        make(b_hat=(1, 0, 0))
    heun_euler = dict(name="he", order=2, a=((), (1,)), b=(F(1, 2), F(1, 2)), c=(0, 1), b_hat=(1, 0), order_hat=1)
    assert not EmbeddedPair(**heun_euler).fsal  # Heun–Euler 2(1): no FSAL, and it need not claim it
    with pytest.raises(ValueError, match="declared fsal=True"):
        EmbeddedPair(**heun_euler, fsal=True)
    for name in ("rk45", "RK23"):
        with pytest.raises(ValueError, match="ambiguous"):
            get_scheme(name)


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_a_pair_as_a_fixed_step_scheme_has_its_propagated_order(name):
    """With n_steps a pair is the fixed-step method of its row b (order 3 and 5), and the stage only the error
    estimate uses (dopri5's seventh) is not evaluated."""
    calls = []
    f = lambda t, x: (calls.append(t), (-1.0 + 0.5 * math.sin(4.0 * t)) * x)[1]
    exact = 1.5 * math.exp(-1.0 + (1.0 - math.cos(4.0)) / 8.0)  # y' = (−1 + sin(4t)/2) y, y(0) = 1.5, at t = 1
    x0 = torch.tensor([1.5], dtype=torch.float64)
    ns = [8, 16, 32, 64]
    errs = [abs(integrate(f, x0, name, n, (0.0, 1.0)).item() - exact) for n in ns]
    assert PAIRS[name][0] - 0.2 <= -fitted_slope(ns, errs) <= PAIRS[name][0] + 0.7, errs
    calls.clear()
    integrate(f, x0, name, 3, (0.0, 1.0))
    assert len(calls) == 3 * (PAIRS[name][2] - 1)


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_embedded_error_estimate_has_order_q_plus_1(name):
    """e = h Σ (b_i − b̂_i) k_i is the local error of the lower-order row: it falls like h^(q+1)."""
    f = lambda t, x: torch.stack([x[..., 1], -9.81 * torch.sin(x[..., 0])], -1)
    x0 = torch.tensor([2.0, 0.3], dtype=torch.float64)
    hs = [0.02, 0.01, 0.005]
    errs = [torch.linalg.norm(embedded_step(f, 0.0, x0, h, name)[1]).item() for h in hs]
    assert abs(fitted_slope(hs, errs) - (get_scheme(name).error_order + 1)) <= 0.15, errs
    y1, e = embedded_step(f, 0.0, x0, 0.01, name)
    assert torch.allclose(y1, integrate(f, x0, name, 1, (0.0, 0.01)), rtol=0, atol=1e-15)


# --------------------------------------------------------------------------- step control
def test_controller_and_norm_follow_hairer_norsett_wanner():
    assert propose_step(0.1, 1.0, 4) == pytest.approx(0.1 * SAFETY)
    assert propose_step(0.1, 2.0 ** 5, 4) == pytest.approx(0.1 * SAFETY / 2)
    assert propose_step(0.1, 1e-12, 4) == pytest.approx(0.1 * FACMAX)
    assert propose_step(0.1, 1e-12, 4, facmax=1.0) == pytest.approx(0.1)
    assert propose_step(0.1, 1e9, 4) == pytest.approx(0.1 * FACMIN)
    assert propose_step(0.1, math.nan, 4) == pytest.approx(0.1 * FACMIN)
    y0 = torch.tensor([[1.0, -2.0], [0.0, 0.0]], dtype=torch.float64)
    y1 = torch.tensor([[3.0, 1.0], [0.0, 0.0]], dtype=torch.float64)
    e = torch.tensor([[0.1, 0.1], [0.01, 0.0]], dtype=torch.float64)
    sc = 1e-2 + 1e-2 * torch.tensor([[3.0, 2.0], [0.0, 0.0]], dtype=torch.float64)
    per_sample = (e / sc).square().mean(1).sqrt()
    assert error_norm(e, y0, y1, 1e-2, 1e-2, "max") == pytest.approx(per_sample.max().item())
    assert error_norm(e, y0, y1, 1e-2, 1e-2, "rms") == pytest.approx((e / sc).square().mean().sqrt().item())
    assert error_norm(e[0], y0[0], y1[0], 1e-2, 1e-2, "max") == pytest.approx(per_sample[0].item())
    assert error_norm(e * math.nan, y0, y1, 1e-2, 1e-2) == math.inf


def test_initial_step_is_hairers_starting_algorithm():
    lam = -3.0
    x0 = torch.tensor([2.0], dtype=torch.float64)
    tol = Tolerances(1e-6, 1e-6)
    h = initial_step(lambda dh, x: lam * x, x0, lam * x0, tol, 4, 10.0)
    sc = 1e-6 + 1e-6 * 2.0
    d0, d1 = 2.0 / sc, 6.0 / sc
    h0 = 0.01 * d0 / d1
    d2 = abs(lam * (2.0 + h0 * lam * 2.0) - lam * 2.0) / sc / h0
    assert h == pytest.approx(min(100 * h0, (0.01 / max(d1, d2)) ** (1 / 5)))
    assert initial_step(lambda dh, x: lam * x, x0, lam * x0, tol, 4, 1e-4) <= 1e-4


# --------------------------------------------------------------------------- positions and break points
@pytest.mark.parametrize("name", sorted(PAIRS))
def test_every_stage_position_with_break_points(name):
    """x' = 1 + (piece index): every stage's (t, x) recorded, as for the fixed-step schemes.  Steps never cross
    k/3, end exactly on them, each stage reads its own step's interval (exact rational position, left limit
    only at its right end), a fresh first stage follows every break point, and FSAL saves one evaluation a step."""
    pair = get_scheme(name)
    seen = []

    def f(pos: AdaptivePosition, x):
        seen.append((pos, x.item()))
        return torch.full_like(x, 1.0 + pos.piece)

    sol = integrate_adaptive_positions(f, torch.zeros(1, dtype=torch.float64), name, (0.0, 2.0), rtol=1e-9, atol=1e-9,
                                       breakpoints=(F(1, 3), F(2, 3)))
    bps = (F(0), F(1, 3), F(2, 3), F(1))
    grid = sol.stats.t
    assert grid[0] == 0.0 and grid[-1] == 2.0
    for b in (2.0 / 3, 4.0 / 3):
        assert b in grid  # a step ends exactly on each break point (its float, not an accumulated sum)
    assert sol.x.item() == pytest.approx(2 / 3 * (1 + 2 + 3), abs=1e-12)
    for pos, x in seen:
        lo, hi = bps[pos.piece], bps[pos.piece + 1]
        assert lo <= pos.tau <= hi and pos.side == (-1 if pos.tau == hi else 1)
        assert piece_index(pos.tau, 3, pos.side) == pos.piece  # the piece, read exactly
        assert pos.t == pytest.approx(2.0 * float(pos.tau), abs=1e-15)
    steps = {}
    for pos, x in seen:
        if pos.stage >= 0:  # -1: the first-step algorithm's trial evaluation
            steps.setdefault(pos.step, []).append((pos, x))
    c = [float(v) for v in pair.c]
    for stages in steps.values():  # each attempt's stages lie on x = x_n + (t − t_n)(1 + piece) at t_n + c_i h
        (p1, x1), (pl, _) = next(s for s in stages if s[0].stage == 1), stages[-1]
        assert pl.stage == pair.stages - 1 and c[pl.stage] == 1
        h = (pl.t - p1.t) / (1 - c[1])
        t_n, x_n = pl.t - h, x1 - c[1] * h * (1 + p1.piece)
        for pos, x in stages:
            assert pos.t == pytest.approx(t_n + c[pos.stage] * h, abs=1e-13)
            assert x == pytest.approx(x_n + c[pos.stage] * h * (1 + pos.piece), abs=1e-12)
    assert [pos.stage for pos, _ in seen].count(-1) == 1  # the first-step algorithm's one trial evaluation
    n_first = sum(1 for pos, _ in seen if pos.stage == 0)
    assert n_first == 3  # one fresh first stage per interval; FSAL gives every other step's first stage
    attempts = sol.stats.n_accepted + sol.stats.n_rejected
    assert sol.stats.nfe == len(seen) == 1 + n_first + (pair.stages - 1) * attempts


def test_block_of_piecewise_constant_theta_never_crosses_a_break_point():
    """x' = θ(t) x with θ jumping at k/4: a step that crossed k/4 would lose the order; with break points
    the solution matches the exact product of exponentials to the tolerance."""
    thetas = [0.5, -1.0, 2.0, 0.25]
    f = lambda pos, x: thetas[pos.piece] * x
    x0 = torch.ones(1, dtype=torch.float64)
    exact = math.exp(sum(thetas) / 4)
    sol = integrate_adaptive_positions(f, x0, "dopri5", rtol=1e-10, atol=1e-10, breakpoints=[F(k, 4) for k in (1, 2, 3)])
    assert abs(sol.x.item() - exact) < 1e-9
    assert {0.25, 0.5, 0.75} <= set(sol.stats.t)


# --------------------------------------------------------------------------- the batch norm
def test_one_hard_sample_in_a_batch():
    """Sixteen harmonic oscillators, one ten times faster than the others: the largest per-sample norm makes
    the hard sample meet the tolerance as if it were alone (the same steps); the RMS over the batch
    (torchdiffeq's) dilutes its error by about √16, takes fewer steps and leaves it several times less accurate."""
    w = torch.tensor([1.0] * 15 + [10.0], dtype=torch.float64)
    x0 = torch.zeros(16, 2, dtype=torch.float64)
    x0[:, 0] = 1.0
    f = lambda t, x: torch.stack([w * x[..., 1], -w * x[..., 0]], -1)
    exact = torch.stack([torch.cos(w), -torch.sin(w)], -1)
    out = {}
    for norm in ("max", "rms"):
        sol = integrate_adaptive(f, x0, "dopri5", rtol=1e-6, atol=1e-6, norm=norm)
        out[norm] = (sol.stats.nfe, torch.linalg.norm(sol.x[-1] - exact[-1]).item())
    assert out["max"][0] > out["rms"][0]
    assert out["max"][1] < out["rms"][1] / 3
    hard = lambda t, x: torch.stack([10.0 * x[..., 1], -10.0 * x[..., 0]], -1)
    alone = integrate_adaptive(hard, x0[-1:], "dopri5", rtol=1e-6, atol=1e-6)
    assert out["max"][0] == alone.stats.nfe  # the hard sample sets the steps, whatever else shares its batch
    # the numbers the page *Measurements* states ("224 rate evaluations (37 steps) ... 4.4e-6 ... 170 (28 steps) ...
    # 1.9e-5"): deterministic float64 numerics, the same on every CPU up to rounding
    assert (out["max"][0], out["rms"][0]) == (224, 170) and (sol.stats.n_accepted, alone.stats.n_accepted) == (28, 37)
    assert out["max"][1] == pytest.approx(4.4e-6, rel=0.02) and out["rms"][1] == pytest.approx(1.9e-5, rel=0.03)


# --------------------------------------------------------------------------- against trusted solvers
def _pendulum(t, x):
    return true_rate(x)


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_agrees_with_torchdiffeq_and_converges_to_the_exact_pendulum(name):
    """Same rtol = atol on the pendulum over [0, 5]: our solution and torchdiffeq's lie within a
    tolerance-sized bound of each other, with NFE within 1.3×; against the exact elliptic solution the error
    falls as the tolerance tightens (fitted slope between 0.6 and 1.2 in log-log)."""
    x0 = torch.tensor(exact_solution(0.0), dtype=torch.float64)
    t1 = 5.0
    exact = torch.tensor(exact_solution(t1), dtype=torch.float64)
    tols = [1e-5, 1e-7, 1e-9] if name == "dopri5" else [1e-3, 1e-4, 1e-5]
    errors = []
    for tol in tols:
        sol = integrate_adaptive(_pendulum, x0, name, (0.0, t1), rtol=tol, atol=tol)
        count = [0]
        theirs = torchdiffeq.odeint(lambda t, x: (count.__setitem__(0, count[0] + 1), true_rate(x))[1], x0,
                                    torch.tensor([0.0, t1], dtype=torch.float64), method=name, rtol=tol, atol=tol,
                                    options=dict(step_t=[t1]))[-1]
        err = torch.linalg.norm(sol.x - exact).item()
        errors.append(err)
        bound = 1000 * tol  # a global error over 5 s (1.5 periods): the local tolerance times a growth factor
        assert err < bound and torch.linalg.norm(theirs - exact).item() < bound
        assert torch.linalg.norm(sol.x - theirs).item() < bound
        assert 1 / 1.3 <= sol.stats.nfe / count[0] <= 1.3, (sol.stats.nfe, count[0])
    assert 0.6 <= fitted_slope(tols, errors) <= 1.2, errors


# --------------------------------------------------------------------------- limits, gradients, bad input
@pytest.mark.parametrize("pair, method", [("dopri5", "RK45"), ("bosh3", "RK23")])
@pytest.mark.parametrize("tol", [1e-3, 1e-6, 1e-9])
def test_the_controller_takes_scipys_steps(pair, method, tol):
    """The controller is a plain I-controller, SciPy's (``RK45``, ``RK23``), not DOPRI5's stabilised one: with the
    same pair, error norm and starting step, the solve accepts SciPy's steps one for one and evaluates the rate as
    often (the pendulum over [0, 10], float64)."""
    from scipy.integrate import solve_ivp

    x0 = torch.tensor(exact_solution(0.0), dtype=torch.float64)
    ours = integrate_adaptive(lambda t, x: true_rate(x), x0, pair, (0.0, 10.0), rtol=tol, atol=tol)
    ref = solve_ivp(lambda t, y: true_rate(torch.tensor(y)).numpy(), (0.0, 10.0), x0.numpy(), method=method,
                    rtol=tol, atol=tol)
    assert ref.success and len(ours.stats.t) == len(ref.t), "the same number of accepted steps"
    np.testing.assert_allclose(np.array(ours.stats.t, dtype=float), ref.t, rtol=0, atol=1e-8)
    assert ours.stats.nfe == ref.nfev, "the same evaluations of the rate, rejected steps included"
    np.testing.assert_allclose(ours.x.numpy(), ref.y[:, -1], rtol=0, atol=1e-11)


def test_max_steps_says_what_to_do():
    with pytest.raises(MaxStepsError, match=r"max_steps = 5 .*raise rtol or atol.*raise max_steps"):
        integrate_adaptive(_pendulum, torch.tensor([2.0, 0.0], dtype=torch.float64), "dopri5", (0.0, 10.0),
                           rtol=1e-10, atol=1e-10, max_steps=5)


def test_gradient_flows_through_the_accepted_steps():
    """For x' = λ x each accepted step multiplies by the stability polynomial: d x(1) / d x0 = x(1) / x0."""
    x0 = torch.tensor([1.5], dtype=torch.float64, requires_grad=True)
    sol = integrate_adaptive(lambda t, x: -2.0 * x, x0, "dopri5", rtol=1e-6, atol=1e-6)
    sol.x.sum().backward()
    assert x0.grad.item() == pytest.approx((sol.x / x0).item(), rel=1e-12)


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(rtol=-1e-3, atol=1e-3), ValueError, "rtol must be a finite number >= 0"),
    (dict(rtol=0.0, atol=0.0), ValueError, "both 0"),
    (dict(rtol=1e-3, atol=1e-3, norm="l2"), ValueError, "norm must be one of max, rms"),
    (dict(rtol=1e-3, atol=1e-3, max_steps=0), ValueError, "max_steps must be an integer >= 1"),
    (dict(rtol=1e-3, atol=1e-3, pair="rk4_classic"), ValueError, "fixed-step scheme: give it n_steps"),
    (dict(rtol=1e-3, atol=1e-3, t_span=(1.0, 0.0)), ValueError, "t1 > t0"),
    (dict(rtol=1e-3, atol=1e-3, breakpoints=(2.0,)), ValueError, "outside the span"),
])
def test_bad_input(kwargs, error, match):
    kwargs = {"pair": "dopri5", "t_span": (0.0, 1.0), **kwargs}
    pair, span = kwargs.pop("pair"), kwargs.pop("t_span")
    with pytest.raises(error, match=match):
        integrate_adaptive(lambda t, x: -x, torch.ones(1), pair, span, **kwargs)
