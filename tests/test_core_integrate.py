"""integrate(): convergence orders (fitted slopes), agreement with torchdiffeq, gradients, bad input."""
import math

import numpy as np
import pytest
import torch
import torchdiffeq

from cnet_lib import get_scheme, integrate, integrate_adaptive, scheme_names, stage_positions, step_times
from cnet_lib.core.integrate import combination

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


# ----------------------------------------------------------------------------- torchdiffeq's conventions (issue 52)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_t_is_a_0_dim_tensor_in_the_state_dtype(dtype):
    """torchdiffeq passes t as a tensor: torch.sin(t) works, and t sits on x0's device in its dtype."""
    seen = []

    def f(t, x):
        seen.append(t)
        return torch.sin(t) * x

    x1 = integrate(f, torch.ones(2, dtype=dtype), "rk4_classic", 4)
    assert all(torch.is_tensor(t) and t.dim() == 0 and t.dtype == dtype for t in seen)
    assert [float(t) for t in seen[:4]] == [0.0, 0.125, 0.125, 0.25]
    expected = math.exp(1 - math.cos(1.0))  # x' = sin(t) x
    assert x1.dtype == dtype and abs(x1[0].item() - expected) < 1e-4
    with torch.no_grad():
        sol = integrate_adaptive(f, torch.ones(2, dtype=dtype), "dopri5", rtol=1e-8, atol=1e-10)
    assert torch.is_tensor(seen[-1]) and seen[-1].dim() == 0 and abs(sol.x[0].item() - expected) < 1e-5


def test_t_eval_on_the_step_grid_equals_the_path():
    x0 = torch.tensor([1.0, 0.5], dtype=torch.float64)
    path = integrate(nonautonomous, x0, "rk4_38", 8, (0.0, 2.0), return_path=True)
    out = integrate(nonautonomous, x0, "rk4_38", 8, (0.0, 2.0), t_eval=[1.0, 0.25, 2.0, 0.0])
    assert out.shape == (4, 2)
    assert torch.equal(out, path[[4, 1, 8, 0]])
    same = integrate(nonautonomous, x0, "rk4_38", 8, (0.0, 2.0), t_eval=torch.tensor([1.0, 0.25, 2.0, 0.0]))
    assert torch.equal(same, out)
    from fractions import Fraction
    assert torch.equal(integrate(nonautonomous, x0, "rk4_38", 3, t_eval=[Fraction(1, 3)])[0],
                       integrate(nonautonomous, x0, "rk4_38", 3, return_path=True)[1])
    # 0.1 * 3 is 0.30000000000000004: a float a rounding away from a grid time is that time
    assert torch.equal(integrate(nonautonomous, x0, "euler", 10, t_eval=[0.1 * 3])[0],
                       integrate(nonautonomous, x0, "euler", 10, return_path=True)[3])


@pytest.mark.parametrize("t_eval, match", [([0.3], "not a time of the step grid"), ([1.5], "not a time of the step grid"),
                                            ([], "empty"), (0.5, "sequence")])
def test_t_eval_off_the_grid_is_refused_with_the_grid(t_eval, match):
    with pytest.raises((ValueError, TypeError), match=match) as err:
        integrate(nonautonomous, torch.ones(1), "euler", 4, t_eval=t_eval)
    if "grid" in match:
        assert "h = 0.25" in str(err.value) and "n_steps" in str(err.value)
    with pytest.raises(ValueError, match="not both"):
        integrate(nonautonomous, torch.ones(1), "euler", 4, return_path=True, t_eval=[0.5])


def test_adaptive_t_eval_ends_steps_on_the_chosen_times():
    x0 = torch.tensor([1.0], dtype=torch.float64)
    sol = integrate_adaptive(nonautonomous, x0, "dopri5", (0.0, 2.0), rtol=1e-10, atol=1e-12, t_eval=[0.3, 1.7, 0.0])
    assert sol.x_eval.shape == (3, 1) and torch.equal(sol.x_eval[2], x0)
    for t, x in zip((0.3, 1.7), sol.x_eval[:2]):
        assert t in sol.stats.t  # a step ends exactly there
        assert abs(x.item() - nonautonomous_exact(t, 1.0)) < 1e-9
    assert integrate_adaptive(nonautonomous, x0, "dopri5", rtol=1e-6, atol=1e-6).x_eval is None
    with pytest.raises(ValueError, match="outside the span"):
        integrate_adaptive(nonautonomous, x0, "dopri5", rtol=1e-6, atol=1e-6, t_eval=[1.5])


def _graph_nodes(out: torch.Tensor) -> int:
    """The autograd nodes behind ``out`` (each is a kernel forward and one backward)."""
    seen, todo = set(), [out.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        todo.extend(nxt for nxt, _ in node.next_functions)
    return len(seen)


@pytest.mark.parametrize("scheme, method", [("euler", "euler"), ("midpoint", "midpoint"), ("heun", "heun2"),
                                            ("rk4_38", "rk4")])
def test_no_more_graph_nodes_than_torchdiffeq(scheme, method):
    """What made the 3/8 rule slower than torchdiffeq's (issue 52: 0.78 of its speed): a multiplication for every
    coefficient, 1 and -1 included, and each of the equal weights applied alone.  The same field and grid, counted
    in autograd nodes (the time of a small field's pass is their count): cnet_lib builds no more than torchdiffeq,
    and the rows of the 3/8 rule are those one writes by hand."""
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 4))
    x0 = torch.randn(3, 4)
    ours = _graph_nodes(integrate(lambda t, x: mlp(x), x0, scheme, 4))
    theirs = _graph_nodes(torchdiffeq.odeint(lambda t, x: mlp(x), x0, torch.linspace(0, 1, 5), method=method)[-1])
    assert ours <= theirs, (ours, theirs)
    from fractions import Fraction
    rows, b = combination(get_scheme("rk4_38"))
    assert rows[3] == (1.0, ((1.0, (0, 2)), (-1.0, (1,))))  # x + h (k1 + k3 - k2)
    assert b == (0.125, ((1.0, (0, 3)), (3.0, (1, 2))))  # x + h/8 (k1 + k4 + 3 (k2 + k3))
    assert combination(get_scheme("euler")) == ((None,), (1.0, ((1.0, (0,)),)))  # x + h k, the ResNet update
    assert Fraction(b[0]) == Fraction(1, 8)
