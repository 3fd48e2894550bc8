"""Tests of the pendulum module and the smoke preset of the pendulum study (issue 5)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from cnet_lib import integrate
from cnet_lib.pendulum import (
    G,
    RHO0,
    ODENet,
    energy,
    exact_solution,
    global_error,
    make_data,
    one_step,
    period,
    rollout,
    train_odenet,
    true_rate,
)
from cnet_lib.pendulum.odenet import TORCHDIFFEQ_METHODS
from cnet_lib.pendulum.pendulum_presets import config_for


def _net(seed=0, hidden=50):
    torch.manual_seed(seed)
    return ODENet(hidden).double()


# --------------------------------------------------------------------------- exact solution
@pytest.mark.parametrize("rho0", [RHO0, 1.0, -2.5, 0.1])
def test_exact_solution_matches_high_precision_solve(rho0):
    from scipy.integrate import solve_ivp

    t = np.linspace(0.0, 10.0, 1001)
    sol = solve_ivp(lambda _, x: [x[1], -G * math.sin(x[0])], (0.0, 10.0), [rho0, 0.0],
                    method="DOP853", rtol=1e-13, atol=1e-13, t_eval=t)
    assert sol.success
    err = np.abs(sol.y.T - exact_solution(t, rho0)).max()
    assert err < 1e-9, err


def test_exact_solution_shape_initial_state_and_period():
    t = np.linspace(0, 10, 7)
    x = exact_solution(t)
    assert x.shape == (7, 2) and x.dtype == np.float64
    assert exact_solution(0.0).shape == (2,)
    np.testing.assert_allclose(exact_solution(0.0), [RHO0, 0.0], atol=1e-15)
    np.testing.assert_allclose(exact_solution(period()), [RHO0, 0.0], atol=1e-12)
    # half a period later the pendulum is at the other turning point
    np.testing.assert_allclose(exact_solution(period() / 2), [-RHO0, 0.0], atol=1e-12)


def test_energy_is_conserved_by_the_exact_solution():
    x = exact_solution(np.linspace(0, 10, 5001))
    e = energy(x)
    assert np.abs(e - e[0]).max() < 1e-12
    assert math.isclose(e[0], -G * math.cos(RHO0))


def test_true_rate_numpy_and_torch_agree_and_match_the_derivative():
    t = np.linspace(0, 3, 31)
    x = exact_solution(t)
    f_np = true_rate(x)
    f_t = true_rate(torch.tensor(x)).numpy()
    np.testing.assert_allclose(f_np, f_t, rtol=0, atol=1e-15)
    h = 1e-5
    fd = (exact_solution(t + h) - exact_solution(t - h)) / (2 * h)
    np.testing.assert_allclose(fd, f_np, atol=1e-7)


def test_amplitude_must_be_below_pi():
    with pytest.raises(ValueError, match="π"):
        exact_solution([0.0], rho0=math.pi)


def test_make_data():
    d = make_data(0.01, 10.0)
    assert d.x.shape == (1001, 2) and d.n_pairs == 1000
    xi, xo = d.pairs()
    assert xi.dtype == torch.float64 and xi.shape == (1000, 2)
    assert torch.equal(xi[1:], xo[:-1])
    with pytest.raises(ValueError, match="integer"):
        make_data(0.03, 10.0)


# --------------------------------------------------------------------------- steps: torchdiffeq == cnet_lib
@pytest.mark.parametrize("scheme", sorted(TORCHDIFFEQ_METHODS))
def test_torchdiffeq_step_equals_cnet_step(scheme):
    net = _net()
    x = torch.tensor(make_data(0.01, 1.0).x, dtype=torch.float64)
    a = one_step(net, x, scheme, 0.01, backend="torchdiffeq")
    b = one_step(net, x, scheme, 0.01, backend="cnet")
    assert torch.allclose(a, b, rtol=0, atol=1e-14), (a - b).abs().max()
    # and the gradients of the one-step loss agree too
    ga = torch.autograd.grad((a - x).pow(2).sum(), list(net.parameters()))
    gb = torch.autograd.grad((b - x).pow(2).sum(), list(net.parameters()))
    for u, v in zip(ga, gb):
        assert torch.allclose(u, v, rtol=1e-12, atol=1e-13)


def test_torchdiffeq_rk4_is_the_38_rule_not_classic_rk4():
    x = torch.tensor([[RHO0, 0.0]], dtype=torch.float64)
    td = one_step(true_rate, x, "rk4_38", 0.1, backend="torchdiffeq")
    assert torch.allclose(td, one_step(true_rate, x, "rk4_38", 0.1, backend="cnet"), atol=1e-15)
    assert not torch.allclose(td, one_step(true_rate, x, "rk4_classic", 0.1, backend="cnet"), atol=1e-9)
    with pytest.raises(ValueError, match="torchdiffeq has no"):
        one_step(true_rate, x, "rk4_classic", 0.1, backend="torchdiffeq")
    # 'auto' falls back to cnet_lib where torchdiffeq lacks the tableau
    cl = one_step(true_rate, x, "rk4_classic", 0.1)
    assert torch.equal(cl, integrate(lambda t, y: true_rate(y), x, "rk4_classic", 1, (0.0, 0.1)))


def test_rollout_backends_agree_and_global_error():
    net = _net(1)
    x0 = torch.tensor(exact_solution(0.0))
    a = rollout(net, x0, "midpoint", 0.02, 50, backend="torchdiffeq")
    b = rollout(net, x0, "midpoint", 0.02, 50, backend="cnet")
    assert a.shape == (51, 2)
    assert torch.allclose(a, b, atol=1e-12)
    p = rollout(true_rate, x0, "rk4_classic", 0.01, 100)
    assert global_error(p, 1.0) < 1e-7
    assert global_error(torch.full((3, 2), float("nan")), 1.0) == math.inf


def test_stacked_rate_equals_the_individual_models():
    from cnet_lib.pendulum import StackedRate

    nets = [_net(s) for s in range(3)]
    x = torch.randn(3, 2, dtype=torch.float64)
    y = StackedRate(nets)(x)
    for i, n in enumerate(nets):
        assert torch.allclose(y[i], n(x[i]), atol=1e-14)


# --------------------------------------------------------------------------- training
def test_training_reduces_the_loss_is_seeded_resumable_and_restores_threads():
    d = make_data(0.05, 5.0)
    before = torch.get_num_threads()
    r1 = train_odenet(d, "midpoint", 150, lr=1e-2, seed=3, progress=False)
    assert torch.get_num_threads() == before
    assert r1.n_iters == 150 and r1.backend == "torchdiffeq"
    assert r1.final_loss < r1.losses[0] / 10
    r2 = train_odenet(d, "midpoint", 150, lr=1e-2, seed=3, progress=False)
    assert r1.losses == r2.losses  # seeded
    r3 = train_odenet(d, "midpoint", 100, lr=1e-3, lr_final=1e-4, resume=r1, progress=False)
    assert r3.n_iters == 250 and r3.losses[:150] == r1.losses
    assert r3.final_loss < r1.final_loss
    assert r1.n_iters == 150  # the resumed-from result is untouched
    with pytest.raises(ValueError, match="cannot resume"):
        train_odenet(d, "euler", 10, resume=r1, progress=False)


def test_training_with_a_scheme_torchdiffeq_lacks_uses_cnet():
    d = make_data(0.1, 2.0)
    r = train_odenet(d, "rk4_classic", 20, progress=False)
    assert r.backend == "cnet" and r.final_loss < r.losses[0]


# --------------------------------------------------------------------------- studies
def test_fit_slope_and_integrator_orders():
    from cnet_lib.pendulum import fit_slope, fit_slopes, integrator_convergence

    dts = [0.1, 0.05, 0.025]
    assert math.isclose(fit_slope(dts, [3 * d**2 for d in dts]), 2.0)
    rows = integrator_convergence(h_values=(1 / 8, 1 / 4, 1 / 2, 1.0), t_final=1.0)
    slopes = {r["scheme"]: r["slope"] for r in fit_slopes(rows, (1 / 8, 1.0))}
    for s, p in {"euler": 1, "midpoint": 2, "rk4_classic": 4, "rk4_38": 4}.items():
        assert abs(slopes[s] - p) <= 0.2, (s, slopes[s])


def test_exercise_checks_accept_the_reference_and_reject_mistakes(capsys):
    from cnet_lib.book.exercises.pendulum_exercises import check_global_error, check_rk_step
    from cnet_lib.teacher.pendulum_key import reference_global_error, reference_rk_step

    assert not check_rk_step(reference_rk_step), "the reference is not an answer"
    assert "reference_rk_step" in capsys.readouterr().out

    def no_c(f, t, x, h, tab):  # forgets the nodes c_i
        ks = []
        for i in range(tab.stages):
            xi = x + h * sum(float(tab.a[i][j]) * ks[j] for j in range(i)) if i else x
            ks.append(f(t, xi))
        return x + h * sum(float(b) * k for b, k in zip(tab.b, ks))

    assert not check_rk_step(no_c)

    def stub(*args):
        raise NotImplementedError("write it")

    assert not check_rk_step(stub)

    def rk(f, t, x, h, tab):  # a right answer
        ks = []
        for i in range(tab.stages):
            xi = x + h * sum(float(tab.a[i][j]) * ks[j] for j in range(i)) if i else x
            ks.append(f(t + float(tab.c[i]) * h, xi))
        return x + h * sum(float(b) * k for b, k in zip(tab.b, ks))

    assert check_rk_step(rk)
    assert not check_global_error(reference_global_error), "the reference is not an answer"
    assert not check_global_error(lambda G, s, dt, T: reference_global_error(G, s, dt, T) ** 0.5)
    out = capsys.readouterr().out
    assert "✅" in out and "❌" in out


def test_presets_are_complete():
    from cnet_lib.pendulum.pendulum_presets import PENDULUM_PRESETS, config_for
    from cnet_lib.runtime.preset_names import PRESETS

    assert set(PENDULUM_PRESETS) == set(PRESETS)
    for name in PRESETS:
        cfg = config_for(name)
        assert cfg.dt_data == 0.01 and cfg.T_data == 10.0  # the paper's data in every preset
        assert 1.0 in cfg.h_values and 0.5 in cfg.h_values and 1.0 in cfg.interchange_h
    assert config_for("smoke", n_iters=5).n_iters == 5


@pytest.fixture(scope="module")
def smoke_study():
    from cnet_lib import pendulum as ps

    cfg = config_for("smoke")
    models = ps.train_models(cfg, progress=False)
    rows = ps.rollout_rows(models, cfg.eval_schemes, (0.5, 1.0), cfg, keep_paths=True)
    return cfg, models, rows


def test_smoke_study_dip(smoke_study):
    """Paper Fig. 2: ODE-Net(Euler) is far worse at Δt_data/2; midpoint and RK4 are not."""
    from cnet_lib.pendulum import dip_rows

    dip = {r["trained"]: r for r in dip_rows(smoke_study[2])}
    assert dip["euler"]["ratio"] >= 20, dip["euler"]
    for a in ("midpoint", "rk4_38"):
        assert dip[a]["ratio"] <= 2, dip[a]


def test_smoke_study_interchange(smoke_study):
    """Paper Fig. 3b: the Euler-trained G breaks in other schemes; midpoint and RK4 swap."""
    from cnet_lib.pendulum import interchange_matrix

    m = {(r["trained"], r["evaluated"]): r["ratio_to_own"] for r in interchange_matrix(smoke_study[2], 1.0)}
    for b in ("midpoint", "rk4_classic", "rk4_38"):
        assert m["euler", b] >= 20, (b, m["euler", b])
    assert m["midpoint", "rk4_38"] <= 3 and m["rk4_38", "midpoint"] <= 3, m
    assert m["midpoint", "rk4_classic"] <= 3 and m["rk4_38", "rk4_classic"] <= 3, m


def test_smoke_study_tables_and_figures(smoke_study):
    from cnet_lib import draw as pf
    from cnet_lib import pendulum as ps

    cfg, models, rows = smoke_study
    floor = {r["trained"]: r for r in ps.error_floor_rows(models, rows, cfg)}
    # the RK4-trained model's error is its flow's error, far above RK4's truncation error on f
    assert floor["rk4_38"]["error_flow"] > 100 * floor["rk4_38"]["error_numerical"]
    assert abs(floor["rk4_38"]["error_own"] / floor["rk4_38"]["error_flow"] - 1) < 0.1
    summ = ps.summary(rows)
    assert summ["dip_euler"] >= 20 and "swap_euler_to_midpoint" in summ
    figs = [
        pf.fig_trajectories(rows, cfg),
        pf.fig_interchange(rows),
        pf.fig_rollout_explorer(rows, cfg),
        pf.fig_convergence(ps.integrator_convergence(h_values=(0.5, 1.0)), ps.odenet_convergence(rows), dt_data=cfg.dt_data),
    ]
    for f in figs:
        assert len(f.data) > 0
        f.to_json()
    app = pf.live_rollout_app(models, cfg, static_fallback_fig=figs[2])
    assert set(app.controls) == {"h", "scheme", "trained"}
    assert "text/html" in app._repr_mimebundle_()


def test_dt_data_control_rows(smoke_study):
    from dataclasses import replace

    from cnet_lib import pendulum as ps

    cfg, models, _ = smoke_study
    tiny = replace(cfg, control_dt_data=(0.1,), control_iters=30)
    rows = ps.dt_data_control(tiny, models, progress=False)
    assert [r["dt_data"] for r in rows] == [0.01, 0.01, 0.1, 0.1]
    for r in rows:
        assert r["error_numerical"] == max(r["error_numerical_trained"], r["error_numerical_evaluated"])
        assert math.isclose(r["ratio_to_own"], r["error_swapped"] / r["error_own"])


# --------------------------------------------------------------------------- the chapters' other measurements and figures
def test_modified_rate_is_f_plus_half_dt_times_the_jacobian_times_f():
    from cnet_lib.pendulum import modified_rate

    x = torch.tensor(make_data(0.1, 3.0).x, dtype=torch.float64)
    jac = torch.func.vmap(torch.func.jacrev(true_rate))(x)  # f'(x), shape (N, 2, 2)
    expected = true_rate(x) + 0.05 / 2 * torch.einsum("nij,nj->ni", jac, true_rate(x))
    torch.testing.assert_close(modified_rate(x, 0.05), expected, rtol=1e-12, atol=1e-12)
    # one Euler step with the modified rate is second-order closer to the exact step than with f
    data = make_data(0.01, 1.0)
    x0, x1 = data.pairs()
    err_f = (x0 + 0.01 * true_rate(x0) - x1).norm(dim=-1).max()
    err_mod = (x0 + 0.01 * modified_rate(x0, 0.01) - x1).norm(dim=-1).max()
    assert err_mod < err_f / 20


def test_smoke_study_summaries(smoke_study):
    from cnet_lib.pendulum import modified_rate, odenet_label
    from cnet_lib import pendulum as ps

    cfg, models, _ = smoke_study
    summary = ps.training_summary(models)
    assert [r["trained"] for r in summary] == list(cfg.train_schemes)
    for r in summary:
        fit = models[r["trained"]]
        assert (r["final_loss"], r["one_step_rms"], r["n_iters"], r["seconds"]) == (fit.final_loss, fit.one_step_rms(), fit.n_iters, fit.seconds)
    x, _ = cfg.data().pairs()
    rms = lambda z: z.pow(2).sum(-1).mean().sqrt().item()  # noqa: E731
    assert ps.euler_correction_rms(cfg) == pytest.approx(rms(modified_rate(x, cfg.dt_data) - true_rate(x)))
    for r in ps.rate_distances(models, cfg):
        with torch.no_grad():
            g = models[r["trained"]].model(x)
        assert r["rms_to_f"] == pytest.approx(rms(g - true_rate(x)))
        assert r["rms_to_modified"] == pytest.approx(rms(g - modified_rate(x, cfg.dt_data)))
        assert r["closer_to"] == ("f" if r["rms_to_f"] < r["rms_to_modified"] else "the modified rate")
        assert r["factor"] == max(r["rms_to_f"], r["rms_to_modified"]) / min(r["rms_to_f"], r["rms_to_modified"]) >= 1
    assert odenet_label("rk4_38") == "ODE-Net(RK4 (3/8 rule))"


def test_energy_gained_and_flow_periods():
    from cnet_lib import pendulum as ps

    cfg = config_for("smoke")
    rates = {"f": true_rate, "f again": lambda x: true_rate(x)}
    rows = ps.energy_gained(rates, "midpoint", 0.05, cfg)
    path = rollout(true_rate, torch.tensor(exact_solution(0.0)), "midpoint", 0.05, 200).numpy()
    for r in rows:
        assert (r["scheme"], r["dt"], r["n_steps"], r["t_final"]) == ("midpoint", 0.05, 200, cfg.T_data)
        assert r["energy_start"] == pytest.approx(energy(exact_solution(0.0))) and r["energy_end"] == pytest.approx(energy(path[-1]))
        assert r["energy_gained"] == r["energy_end"] - r["energy_start"] > 0  # midpoint pumps energy in, as Euler does
        assert r["error"] == pytest.approx(np.linalg.norm(path[-1] - exact_solution(cfg.T_data)))
    e0 = rows[0]["energy_start"]
    periods = ps.flow_periods({"f": true_rate}, (e0, rows[0]["energy_end"]))
    p = periods[0]
    assert p["period_from"] == pytest.approx(period(), rel=1e-4)  # the flow of f from the energy of ρ0 = 3π/4
    assert p["period_to"] > p["period_from"] and p["change"] == pytest.approx(p["period_to"] / p["period_from"] - 1)


def test_figures_use_the_vocabularys_colours(smoke_study):
    from cnet_lib import draw as pf
    from cnet_lib.pendulum import odenet_label
    from cnet_lib import pendulum as ps
    from cnet_lib.runtime.vocabulary import SCHEME_COLORS, scheme_color

    cfg, models, rows = smoke_study
    loss = pf.fig_training_loss(models)
    assert [t.line.color for t in loss.data] == [scheme_color(a) for a in models]
    traj = pf.fig_trajectories(rows, cfg)
    for t in traj.data:
        if t.name == "exact":
            assert t.line.color == SCHEME_COLORS["exact"]
        elif t.showlegend is False:  # a model's rollout: its own scheme's colour
            assert t.line.color == scheme_color(next(a for a in models if t.name.startswith(odenet_label(a) + ",")))
        else:  # the legend's line styles, in grey
            assert t.line.color not in SCHEME_COLORS.values()
    explorer = pf.fig_rollout_explorer(rows, cfg)
    names = [t.name for t in explorer.data[1:]]
    assert all("<br>E = " in n for n in names) and max(len(n.split("<br>")[0]) for n in names) <= 24
    report = ps.true_rate_rollout("midpoint", 0.1, 10.0)
    against = pf.fig_against_exact(report)
    assert against.data[1].line.color == scheme_color("midpoint") and list(against.data[1].y) == list(report["x"][:, 0])
    explore = pf.fig_scheme_explorer(ps.true_rate_rollouts(["euler", "rk4_38"], [0.05, 0.1], 10.0), active_dt=0.1)
    # one trace per Δt (the slider shows one), whose data and colour the scheme menu rewrites (issue 53)
    assert explore.layout.sliders[0].active == 1 and len(explore.data) == 3
    assert {t.line.color for t in explore.data[1:]} == {scheme_color("euler")}
    menu = explore.layout.updatemenus[0].buttons
    assert len(menu) == 2
    assert scheme_color("rk4_38") in str(menu[1].args)
    assert len(pf.fig_exact_motion(10.0).data) == 2


def test_the_training_cache_is_keyed_on_the_whole_frozen_config(monkeypatch):
    """A model is reused only for the very config it was trained from: every field counts, a field added
    to the config later too (the key comes from dataclasses.asdict), and dt_data / n_iters given to
    train_models are part of the config they replace."""
    import dataclasses

    from cnet_lib.pendulum import trained_models as TM
    from cnet_lib.pendulum.pendulum_presets import PendulumConfig

    cfg = config_for("smoke", n_iters=3)
    key = TM.training_key(cfg, "euler")
    assert key == TM.training_key(dataclasses.replace(cfg), "euler") and key[0] == "euler"
    def another(value):
        if isinstance(value, tuple):
            return value[:-1] if len(value) > 1 else value + value
        if isinstance(value, str):
            return value + "x"
        return value / 2 if isinstance(value, float) else value + 1

    for field in dataclasses.fields(cfg):
        changed = dataclasses.replace(cfg, **{field.name: another(getattr(cfg, field.name))})
        assert TM.training_key(changed, "euler") != key, field.name
    Extended = dataclasses.make_dataclass("Extended", [("new_field", int, 0)], bases=(PendulumConfig,), frozen=True)
    assert TM.training_key(Extended(**dataclasses.asdict(cfg), new_field=1), "euler") != \
        TM.training_key(Extended(**dataclasses.asdict(cfg), new_field=2), "euler"), "a new field changes the key"

    calls = []  # the iteration counts of each batched training: the study's models (3) and its controls (500)
    real = TM.train_batched
    monkeypatch.setattr(TM, "_TRAINED", {})
    monkeypatch.setattr(TM, "train_batched", lambda jobs, **k: calls.append(sorted({j.n_iters for j in jobs})) or real(jobs, **k))
    first = TM.train_models(cfg, ("euler",), progress=False)
    assert TM.train_models(cfg, ("euler",), progress=False)["euler"] is first["euler"] and calls == [[3, 500]]
    TM.train_models(cfg, ("euler",), n_iters=4, progress=False)
    TM.train_models(dataclasses.replace(cfg, hidden=8), ("euler",), progress=False)
    assert calls == [[3, 500], [4, 500], [3, 500]], "another n_iters or another hidden size trains again"
    assert TM.train_models(cfg, ("euler",), dt_data=cfg.dt_data, n_iters=3, progress=False)["euler"] is first["euler"]
    control = TM.train_models(cfg, cfg.control_schemes, dt_data=cfg.control_dt_data[0], n_iters=cfg.control_iters,
                              progress=False)
    assert len(calls) == 3 and control["midpoint"].trained_with == 5, "the controls came with the study"
