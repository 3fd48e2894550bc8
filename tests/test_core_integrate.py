"""integrate(): convergence orders (fitted slopes), agreement with torchdiffeq, gradients, bad input."""
import math

import numpy as np
import pytest
import torch
import torchdiffeq

from cnet_lib import get_scheme, integrate, scheme_names, stage_positions, step_times

ORDERS = {n: get_scheme(n).order for n in ("euler", "midpoint", "heun", "ralston", "rk3", "rk4_classic", "rk4_38")}
N_GRID = [16, 32, 64, 128, 256]


def fitted_slope(ns, errors):
    """Least-squares slope of log(error) against log(h) = -log(N_t)."""
    return np.polyfit(-np.log(ns), np.log(errors), 1)[0]


# a non-autonomous linear ODE with a closed-form solution
def nonautonomous(t, y):
    return (-1.0 + 0.5 * math.sin(4.0 * t)) * y


def nonautonomous_exact(t, y0):
    return y0 * math.exp(-t + (1.0 - math.cos(4.0 * t)) / 8.0)


# a 2-D nonlinear system: a limit cycle, r' = r (1 - r^2), angle' = 1
def limit_cycle(t, z):
    x, y = z[..., 0], z[..., 1]
    r2 = x * x + y * y
    return torch.stack([x * (1 - r2) - y, y * (1 - r2) + x], dim=-1)


def limit_cycle_exact(t, r0, a0):
    r = 1.0 / math.sqrt(1.0 + (1.0 / r0**2 - 1.0) * math.exp(-2.0 * t))
    return torch.tensor([r * math.cos(a0 + t), r * math.sin(a0 + t)], dtype=torch.float64)


@pytest.mark.parametrize("scheme", sorted(ORDERS))
def test_convergence_order_nonautonomous(scheme):
    # t1 = 1: at some later final times the leading error constant of rk3/rk4 nearly
    # cancels, and N_t = 16..256 is then pre-asymptotic (slopes off by 0.2-0.5)
    y0 = torch.tensor([1.5], dtype=torch.float64)
    t1 = 1.0
    errs = [abs(integrate(nonautonomous, y0, scheme, n, (0.0, t1)).item() - nonautonomous_exact(t1, 1.5)) for n in N_GRID]
    assert abs(fitted_slope(N_GRID, errs) - ORDERS[scheme]) <= 0.15, errs


@pytest.mark.parametrize("scheme", sorted(ORDERS))
def test_convergence_order_nonlinear_2d(scheme):
    r0, a0, t1 = 0.5, 0.4, 1.0  # inside the limit cycle, spiralling out
    z0 = torch.tensor([r0 * math.cos(a0), r0 * math.sin(a0)], dtype=torch.float64)
    exact = limit_cycle_exact(t1, r0, a0)
    errs = [torch.linalg.norm(integrate(limit_cycle, z0, scheme, n, (0.0, t1)) - exact).item() for n in N_GRID]
    assert abs(fitted_slope(N_GRID, errs) - ORDERS[scheme]) <= 0.15, errs


@pytest.mark.parametrize("ours,theirs", [("euler", "euler"), ("midpoint", "midpoint"), ("rk4_38", "rk4")])
def test_matches_torchdiffeq_fixed_grid(ours, theirs):
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 3).double()
    f = lambda t, x: torch.tanh(lin(x)) * (1.0 + t)  # non-autonomous
    x0 = torch.randn(5, 3, dtype=torch.float64)
    n, t_span = 7, (0.2, 1.7)
    grid = torch.tensor(step_times(n, t_span), dtype=torch.float64)
    ref = torchdiffeq.odeint(f, x0, grid, method=theirs)
    path = integrate(f, x0, ours, n, t_span, return_path=True)
    assert path.shape == (n + 1, 5, 3)
    assert torch.allclose(path, ref, atol=1e-12, rtol=0)


def test_classic_rk4_is_not_torchdiffeq_rk4():
    f = lambda t, x: -x * x + t
    x0 = torch.tensor([1.0], dtype=torch.float64)
    grid = torch.tensor(step_times(3), dtype=torch.float64)
    theirs = torchdiffeq.odeint(f, x0, grid, method="rk4")[-1]
    assert torch.allclose(integrate(f, x0, "rk4_38", 3), theirs, atol=1e-14)
    assert not torch.allclose(integrate(f, x0, "rk4_classic", 3), theirs, atol=1e-10)


def test_step_times_are_not_accumulated():
    n, t_span = 10, (0.0, 0.3)
    times = step_times(n, t_span)
    assert times == [0.3 * k / n for k in range(n + 1)]
    assert times[-1] == 0.3
    positions = list(stage_positions("rk4_classic", n, t_span))
    assert len(positions) == 4 * n
    assert positions[-1].t == 0.3 and positions[-1].k == n - 1


def test_integrate_records_every_stage_time():
    """Every stage's (t, state) as torchode's tests do: midpoint on x' = 1 makes x = t."""
    seen = []
    f = lambda t, x: (seen.append((t, x.item())), torch.ones_like(x))[1]
    out = integrate(f, torch.zeros(1, dtype=torch.float64), "midpoint", 4, (1.0, 2.0))
    assert seen == [(1 + k / 4 + c / 4, k / 4 + c / 4) for k in range(4) for c in (0.0, 0.5)]
    assert out.item() == 1.0


def test_gradcheck_through_integrate():
    w = torch.randn(3, 3, dtype=torch.float64, requires_grad=True)
    x0 = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    for scheme in ("euler", "rk3", "rk4_classic"):
        fn = lambda w, x0: integrate(lambda t, x: torch.tanh(x @ w) * math.cos(t), x0, scheme, 3)
        assert torch.autograd.gradcheck(fn, (w, x0))


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, None])
def test_bad_n_steps(bad):
    with pytest.raises((ValueError, TypeError), match="n_steps"):
        integrate(lambda t, x: x, torch.zeros(1), "euler", bad)


def test_bad_scheme_and_span():
    with pytest.raises(ValueError, match="ambiguous"):
        integrate(lambda t, x: x, torch.zeros(1), "rk4", 2)
    with pytest.raises(ValueError, match="unknown scheme"):
        integrate(lambda t, x: x, torch.zeros(1), "rk5", 2)
    with pytest.raises(ValueError, match="t_span"):
        integrate(lambda t, x: x, torch.zeros(1), "euler", 2, (1.0, 1.0))


def test_all_registered_names_integrate():
    for name in scheme_names():
        assert torch.isfinite(integrate(nonautonomous, torch.ones(1), name, 3)).all()
