"""The pendulum (cnet_lib.pendulum: the exact solution, the ODE-Net, its training) and the pendulum study of the
chapters *Numerical integrators* and *Is a ResNet a forward-Euler integrator?* (cnet_lib.studies.pendulum): its
numbers on the true rate and on the smoke preset's trained ODE-Nets, its tables (each printed number parsed back and
checked against its row), the words that judge its numbers on both sides of their thresholds, its figures and live
app, and the chapters' prose: every number it states is glued from the cell that computes it, and what it says of
those numbers holds for the numbers of the published book.
"""
from __future__ import annotations

import dataclasses
import math
import random
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from smoke_data import smoke_settings
from table_reading import assert_printed, by_first_column, parse_table, printed_as

from cnet_lib.book.chapter_cards import without_card
from cnet_lib.book.notebook_cells import cell_source, read_notebook
from cnet_lib.book.project import PUBLISHED_PRESET
from cnet_lib.pendulum.odenet import TORCHDIFFEQ_METHODS
from cnet_lib.runtime.rich_text import find_row, scheme_label
from cnet_lib.studies.pendulum import show as SH, study as S
from cnet_lib.pendulum import (G, ODENet, RHO0, config_for, energy, exact_solution, global_error, make_data,
    modified_rate, odenet_label, one_step, period, rollout, train_models, train_odenet, true_rate)
from cnet_lib import integrate

ROOT = Path(__file__).resolve().parents[1]
SCHEMES = ["euler", "midpoint", "rk4_classic", "rk4_38"]


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


# --------------------------------------------------------------------------- the study: the integrators on f, the smoke preset's ODE-Nets
def test_fit_slope_and_integrator_orders():
    dts = [0.1, 0.05, 0.025]
    assert math.isclose(S.fit_slope(dts, [3 * d**2 for d in dts]), 2.0)
    rows = S.integrator_convergence(h_values=(1 / 8, 1 / 4, 1 / 2, 1.0), t_final=1.0)
    slopes = {r["scheme"]: r["slope"] for r in S.fit_slopes(rows, (1 / 8, 1.0))}
    for s, p in {"euler": 1, "midpoint": 2, "rk4_classic": 4, "rk4_38": 4}.items():
        assert abs(slopes[s] - p) <= 0.2, (s, slopes[s])


def test_exercise_checks_accept_the_reference_and_reject_mistakes(capsys):
    from cnet_lib.book.exercises.pendulum_exercises import check_global_error, check_rk_step
    from cnet_lib.teacher.keys import reference_global_error, reference_rk_step

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
    from cnet_lib.pendulum import PENDULUM_PRESETS
    from cnet_lib.runtime.settings import PRESETS

    assert set(PENDULUM_PRESETS) == set(PRESETS)
    for name in PRESETS:
        cfg = config_for(name)
        assert cfg.dt_data == 0.01 and cfg.T_data == 10.0  # the paper's data in every preset
        assert 1.0 in cfg.h_values and 0.5 in cfg.h_values and 1.0 in cfg.interchange_h
    assert config_for("smoke", n_iters=5).n_iters == 5


@pytest.fixture(scope="module")
def smoke_study():
    cfg = config_for("smoke")
    models = train_models(cfg, progress=False)
    rows = S.rollout_rows(models, cfg.eval_schemes, (0.5, 1.0), cfg, keep_paths=True)
    return cfg, models, rows


def test_smoke_study_dip(smoke_study):
    """Paper Fig. 2: ODE-Net(Euler) is far worse at Δt_data/2; midpoint and RK4 are not."""
    dip = {r["trained"]: r for r in S.dip_rows(smoke_study[2])}
    assert dip["euler"]["ratio"] >= 20, dip["euler"]
    for a in ("midpoint", "rk4_38"):
        assert dip[a]["ratio"] <= 2, dip[a]


def test_smoke_study_interchange(smoke_study):
    """Paper Fig. 3b: the Euler-trained G breaks in other schemes; midpoint and RK4 swap."""
    m = {(r["trained"], r["evaluated"]): r["ratio_to_own"] for r in S.interchange_matrix(smoke_study[2], 1.0)}
    for b in ("midpoint", "rk4_classic", "rk4_38"):
        assert m["euler", b] >= 20, (b, m["euler", b])
    assert m["midpoint", "rk4_38"] <= 3 and m["rk4_38", "midpoint"] <= 3, m
    assert m["midpoint", "rk4_classic"] <= 3 and m["rk4_38", "rk4_classic"] <= 3, m


def test_smoke_study_tables_and_figures(smoke_study):
    cfg, models, rows = smoke_study
    floor = {r["trained"]: r for r in S.error_floor_rows(models, rows, cfg)}
    # the RK4-trained model's error is its flow's error, far above RK4's truncation error on f
    assert floor["rk4_38"]["error_flow"] > 100 * floor["rk4_38"]["error_numerical"]
    assert abs(floor["rk4_38"]["error_own"] / floor["rk4_38"]["error_flow"] - 1) < 0.1
    said = SH.facts(dip=S.dip_rows(rows), matrix=S.interchange_matrix(rows, 1.0))
    assert set(said) == {"dip_euler", "dip_midpoint", "dip_rk4_38", "swap_euler", "swap_others"}
    figs = [
        SH.fig_trajectories(rows, cfg),
        SH.fig_interchange(rows),
        SH.fig_rollout_explorer(rows, cfg),
        SH.fig_convergence(S.integrator_convergence(h_values=(0.5, 1.0)), S.odenet_convergence(rows), dt_data=cfg.dt_data),
    ]
    for f in figs:
        assert len(f.data) > 0
        f.to_json()
    app = SH.live_rollout_app(models, cfg, static_fallback_fig=figs[2])
    assert set(app.controls) == {"h", "scheme", "trained"}
    assert "text/html" in app._repr_mimebundle_()


def test_dt_data_control_rows(smoke_study):
    cfg, models, _ = smoke_study
    tiny = dataclasses.replace(cfg, control_dt_data=(0.1,), control_iters=30)
    rows = S.dt_data_control(tiny, models, progress=False)
    assert [r["dt_data"] for r in rows] == [0.01, 0.01, 0.1, 0.1]
    for r in rows:
        assert r["error_numerical"] == max(r["error_numerical_trained"], r["error_numerical_evaluated"])
        assert math.isclose(r["ratio_to_own"], r["error_swapped"] / r["error_own"])


# --------------------------------------------------------------------------- the chapters' other measurements and figures
def test_modified_rate_is_f_plus_half_dt_times_the_jacobian_times_f():
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
    cfg, models, _ = smoke_study
    summary = S.training_summary(models)
    assert [r["trained"] for r in summary] == list(cfg.train_schemes)
    for r in summary:
        fit = models[r["trained"]]
        assert (r["final_loss"], r["one_step_rms"], r["n_iters"], r["seconds"]) == (fit.final_loss, fit.one_step_rms(), fit.n_iters, fit.seconds)
    x, _ = cfg.data().pairs()
    rms = lambda z: z.pow(2).sum(-1).mean().sqrt().item()  # noqa: E731
    assert S.euler_correction_rms(cfg) == pytest.approx(rms(modified_rate(x, cfg.dt_data) - true_rate(x)))
    for r in S.rate_distances(models, cfg):
        with torch.no_grad():
            g = models[r["trained"]].model(x)
        assert r["rms_to_f"] == pytest.approx(rms(g - true_rate(x)))
        assert r["rms_to_modified"] == pytest.approx(rms(g - modified_rate(x, cfg.dt_data)))
        assert r["closer_to"] == ("f" if r["rms_to_f"] < r["rms_to_modified"] else "the modified rate")
        assert r["factor"] == max(r["rms_to_f"], r["rms_to_modified"]) / min(r["rms_to_f"], r["rms_to_modified"]) >= 1
    assert odenet_label("rk4_38") == "ODE-Net(RK4 (3/8 rule))"


def test_energy_gained_and_flow_periods():
    cfg = config_for("smoke")
    rates = {"f": true_rate, "f again": lambda x: true_rate(x)}
    rows = S.energy_gained(rates, "midpoint", 0.05, cfg)
    path = rollout(true_rate, torch.tensor(exact_solution(0.0)), "midpoint", 0.05, 200).numpy()
    for r in rows:
        assert (r["scheme"], r["dt"], r["n_steps"], r["t_final"]) == ("midpoint", 0.05, 200, cfg.T_data)
        assert r["energy_start"] == pytest.approx(energy(exact_solution(0.0))) and r["energy_end"] == pytest.approx(energy(path[-1]))
        assert r["energy_gained"] == r["energy_end"] - r["energy_start"] > 0  # midpoint pumps energy in, as Euler does
        assert r["error"] == pytest.approx(np.linalg.norm(path[-1] - exact_solution(cfg.T_data)))
    e0 = rows[0]["energy_start"]
    periods = S.flow_periods({"f": true_rate}, (e0, rows[0]["energy_end"]))
    p = periods[0]
    assert p["period_from"] == pytest.approx(period(), rel=1e-4)  # the flow of f from the energy of ρ0 = 3π/4
    assert p["period_to"] > p["period_from"] and p["change"] == pytest.approx(p["period_to"] / p["period_from"] - 1)


def test_figures_use_the_vocabularys_colours(smoke_study):
    from cnet_lib.runtime.rich_text import SCHEME_COLORS, scheme_color

    cfg, models, rows = smoke_study
    loss = SH.fig_training_loss(models)
    assert [t.line.color for t in loss.data] == [scheme_color(a) for a in models]
    traj = SH.fig_trajectories(rows, cfg)
    for t in traj.data:
        if t.name == "exact":
            assert t.line.color == SCHEME_COLORS["exact"]
        elif t.showlegend is False:  # a model's rollout: its own scheme's colour
            assert t.line.color == scheme_color(next(a for a in models if t.name.startswith(odenet_label(a) + ",")))
        else:  # the legend's line styles, in grey
            assert t.line.color not in SCHEME_COLORS.values()
    explorer = SH.fig_rollout_explorer(rows, cfg)
    names = [t.name for t in explorer.data[1:]]
    assert all("<br>E = " in n for n in names) and max(len(n.split("<br>")[0]) for n in names) <= 24
    report = S.true_rate_rollout("midpoint", 0.1, 10.0)
    against = SH.fig_against_exact(report)
    assert against.data[1].line.color == scheme_color("midpoint") and list(against.data[1].y) == list(report["x"][:, 0])
    explore = SH.fig_scheme_explorer(S.true_rate_rollouts(["euler", "rk4_38"], [0.05, 0.1], 10.0), active_dt=0.1)
    # one trace per Δt (the slider shows one), whose data and colour the scheme menu rewrites (issue 53)
    assert explore.layout.sliders[0].active == 1 and len(explore.data) == 3
    assert {t.line.color for t in explore.data[1:]} == {scheme_color("euler")}
    menu = explore.layout.updatemenus[0].buttons
    assert len(menu) == 2
    assert scheme_color("rk4_38") in str(menu[1].args)
    assert len(SH.fig_exact_motion(10.0).data) == 2


def test_the_training_cache_is_keyed_on_the_whole_frozen_config(monkeypatch):
    """A model is reused only for the very config it was trained from: every field counts, a field added
    to the config later too (the key comes from dataclasses.asdict), and dt_data / n_iters given to
    train_models are part of the config they replace."""
    from cnet_lib.pendulum import PendulumConfig
    from cnet_lib.pendulum import trained_models as TM

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


# --------------------------------------------------------------------------- tables: the exact pendulum and the integrators on f
def test_swing_facts_and_table():
    facts = S.swing_facts(10.0)
    assert facts["g"] == G and facts["rho0"] == RHO0
    assert math.isclose(facts["period"], period()) and math.isclose(facts["small_angle_period"], 2 * math.pi / math.sqrt(G))
    assert math.isclose(facts["longer_percent"], 100 * (period() / (2 * math.pi / math.sqrt(G)) - 1))
    assert math.isclose(facts["energy"], -G * math.cos(RHO0), rel_tol=1e-12) and facts["energy_drift"] < 1e-12
    cells = {q: row["value"] for q, row in by_first_column(SH.swing_table(facts)).items()}
    for quantity, key in (("g", "g"), ("ρ(0)", "rho0"), ("period of this swing, 4K(m)/√g", "period"),
                          ("period of a tiny swing, 2π/√g", "small_angle_period"), ("this swing takes longer by", "longer_percent"),
                          ("energy v²/2 − g cos ρ", "energy"), ("its largest change along the exact solution", "energy_drift")):
        assert_printed(cells[quantity], facts[key])


def test_true_rate_rollout_report_and_table():
    report = S.true_rate_rollout("euler", 0.01, 10.0)
    assert report["n_steps"] == 1000 and len(report["t"]) == 1001 and report["x"].shape == (1001, 2)
    assert math.isclose(report["error"], np.linalg.norm(report["x"][-1] - exact_solution(10.0)))
    # forward Euler pumps energy into the pendulum until it goes over the top (the chapter's point)
    assert report["energy_end"] > report["energy_start"] and report["over_the_top"]
    assert math.isclose(report["energy_start"], energy(exact_solution(0.0)))
    assert report["max_abs_rho"] == pytest.approx(np.abs(report["x"][:, 0]).max())
    cells = {q: row["value"] for q, row in by_first_column(SH.rollout_table(report)).items()}
    assert cells["scheme"] == "Euler" and cells["N_t"] == "1000" and cells["over the top (energy above g = 9.81)?"] == "True"
    assert_printed(cells["error at t = 10: ‖x_N − x(10)‖"], report["error"])
    assert_printed(cells["energy at t = 10"], report["energy_end"])
    assert_printed(cells["largest |ρ| (rad)"], report["max_abs_rho"])
    # thinned paths keep the last state; the numbers do not depend on the thinning
    thin = S.true_rate_rollout("euler", 0.01, 10.0, max_points=100)
    assert len(thin["t"]) <= 102 and thin["t"][-1] == pytest.approx(10.0)
    np.testing.assert_array_equal(thin["x"][-1], report["x"][-1])
    assert thin["error"] == report["error"] and thin["max_abs_rho"] == report["max_abs_rho"]
    rows = S.true_rate_rollouts(["euler", "rk4_classic"], [0.05, 0.1], 10.0)
    assert [(r["scheme"], r["dt"], r["n_steps"]) for r in rows] == [("euler", 0.05, 200), ("euler", 0.1, 100),
                                                                     ("rk4_classic", 0.05, 200), ("rk4_classic", 0.1, 100)]


def test_local_errors_slopes_and_table():
    schemes, dts = ["euler", "midpoint", "rk4_classic"], [0.02, 0.01, 0.005]
    rows = S.local_errors(schemes, dts, t_start=1.0)
    x1 = exact_solution(1.0)
    euler = next(r for r in rows if r["scheme"] == "euler" and r["dt"] == 0.01)
    step = x1 + 0.01 * np.array([x1[1], -G * math.sin(x1[0])])  # one Euler step by hand
    assert euler["error"] == pytest.approx(np.linalg.norm(step - exact_solution(1.01)), rel=1e-12)
    slopes = S.local_slopes(rows)
    for s in slopes:
        assert abs(s["slope"] - s["expected"]) < 0.2, s  # local error O(Δt^(r+1))
    table = by_first_column(SH.local_error_table(rows, slopes))
    random.Random(0).shuffle(rows)  # the table is found by key, not by position
    for r in rows:
        assert_printed(table[scheme_label(r["scheme"])][f"Δt={r['dt']:g}"], r["error"])
    for s in slopes:
        assert_printed(table[scheme_label(s["scheme"])]["slope"], s["slope"])
        assert table[scheme_label(s["scheme"])]["r+1"] == str(s["expected"])


def test_convergence_slopes_and_halving_tables():
    rows = S.integrator_convergence(("euler", "midpoint", "rk4_38"), (1 / 4, 1 / 2, 1.0), 0.01, 1.0)
    table = by_first_column(SH.convergence_table(rows))  # a line per Δt, a column per scheme
    for r in rows:
        assert_printed(table[f"{r['dt']:g}"][scheme_label(r["scheme"])], r["error"])
    slopes = S.fit_slopes(rows, (1 / 4, 1.0))
    with_range = by_first_column(SH.slopes_table(slopes, rows))
    for s in slopes:
        line = with_range[scheme_label(s["scheme"])]
        assert_printed(line["fitted slope"], s["slope"])
        assert line["points"] == str(s["n_points"]) and line["order"] == {"euler": "1", "midpoint": "2", "rk4_38": "4"}[s["scheme"]]
        errors = [r["error"] for r in rows if r["scheme"] == s["scheme"]]
        assert_printed(line["E from"], min(errors)) and assert_printed(line["E to"], max(errors))
    assert "E from" not in parse_table(SH.slopes_table(slopes))[0]
    ratios = S.halving_ratios(rows, h=1.0)
    for q in ratios:
        e = {r["h"]: r["error"] for r in rows if r["scheme"] == q["scheme"]}
        assert q["ratio"] == e[1.0] / e[0.5] and q["expected"] == 2 ** {"euler": 1, "midpoint": 2, "rk4_38": 4}[q["scheme"]]
    halving = by_first_column(SH.halving_table(ratios))
    for q in ratios:
        assert_printed(halving[scheme_label(q["scheme"])]["E(Δt) / E(Δt/2)"], q["ratio"])
        assert halving[scheme_label(q["scheme"])]["2^r"] == str(q["expected"])


def test_setup_and_backend_tables():
    cfg = config_for("smoke")
    facts = S.setup_facts(cfg)
    assert facts["n_pairs"] == 1000 and facts["n_parameters"] == 2 * 50 + 50 + 50 * 2
    cells = {q: row["value"] for q, row in by_first_column(SH.setup_table(facts)).items()}
    assert cells["preset"] == "smoke" and cells["training pairs (x_k, x_k+1)"] == "1000"
    assert cells["full-batch Adam iterations, float64"] == str(cfg.n_iters)
    assert cells["learning rate"] == f"{cfg.lr:g} → {cfg.lr_final:g}" and cells["parameters of G (50 hidden units)"] == "250"
    state = torch.random.get_rng_state()
    rows = S.backend_agreement(cfg)
    assert torch.equal(state, torch.random.get_rng_state()), "the global random state must be left alone"
    assert [r["scheme"] for r in rows] == list(cfg.train_schemes) and all(r["max_difference"] < 1e-14 for r in rows)
    table = by_first_column(SH.backend_table(rows))
    for r in rows:
        assert_printed(table[scheme_label(r["scheme"])]["largest |torchdiffeq step − cnet_lib step|"], r["max_difference"])


# --------------------------------------------------------------------------- tables: the ODE-Net chapter's, on rows made up here
TRAINED = ("euler", "midpoint", "rk4_38")


def test_training_dip_and_distance_tables():
    training = [dict(trained=a, final_loss=0.03 + i / 100, one_step_rms=1.9e-3 * (i + 1), n_iters=1000, seconds=2.4 + i,
                     trained_with=9, device="cpu") for i, a in enumerate(TRAINED)]
    table = by_first_column(SH.training_table(training))
    for r in training:
        line = table[odenet_label(r["trained"])]
        assert_printed(line["final loss"], r["final_loss"]) and assert_printed(line["seconds"], r["seconds"])
        assert_printed(line["RMS one-step residual ‖F(x_k) − x_k+1‖"], r["one_step_rms"]) and line["iterations"] == "1000"
        assert line["trained at once"] == "9 on cpu"
    dip = [dict(trained=a, error_dt_data=0.1 * (i + 1), error_half=0.3 / (i + 1), ratio=3 / (i + 1) ** 2) for i, a in enumerate(TRAINED)]
    table = by_first_column(SH.dip_table(dip))
    for r in dip:
        line = table[odenet_label(r["trained"])]
        assert_printed(line["E(Δt_data)"], r["error_dt_data"]) and assert_printed(line["E(Δt_data/2)"], r["error_half"])
        assert_printed(line["E(Δt_data/2) / E(Δt_data)"], r["ratio"])
    dist = [dict(trained="euler", rms_to_f=0.227, rms_to_modified=0.187, closer_to="the modified rate", factor=0.227 / 0.187),
            dict(trained="midpoint", rms_to_f=0.193, rms_to_modified=0.230, closer_to="f", factor=0.230 / 0.193)]
    table = by_first_column(SH.rate_distance_table(dist))
    for r in dist:
        line = table[odenet_label(r["trained"])]
        assert line["closer to"] == r["closer_to"] and assert_printed(line["by"], r["factor"])
        assert_printed(line["RMS ‖G − f‖"], r["rms_to_f"]) and assert_printed(line["RMS ‖G − (f + (Δt_data/2) f'f)‖"], r["rms_to_modified"])


def test_odenet_convergence_table_pairs_each_model_with_its_scheme_on_f():
    hs = (0.5, 1.0, 2.0)
    odenet = [dict(trained=a, scheme=a, h=h, dt=0.01 * h, error=(i + 1) * h / 10) for i, a in enumerate(TRAINED) for h in hs]
    numerical = [dict(scheme=a, h=h, dt=0.01 * h, error=10.0 ** (-2 * i) * h) for i, a in enumerate(TRAINED) for h in hs]
    slopes = [dict(trained="euler", slope=math.nan), dict(trained="midpoint", slope=0.063), dict(trained="rk4_38", slope=-0.001)]
    text = SH.odenet_convergence_table(odenet, list(reversed(numerical)), slopes, (1.0, 2.0))
    header, rows = parse_table(text)  # a line per h, a column per model: the narrow way round
    assert header[1:] == [name for a in TRAINED for name in (odenet_label(a), f"{scheme_label(a)} on f")]
    table = {r[0]: dict(zip(header, r)) for r in rows}
    for r in odenet:
        assert_printed(table[f"{r['h']:g}"][odenet_label(r["trained"])], r["error"])
    for r in numerical:
        assert_printed(table[f"{r['h']:g}"][f"{scheme_label(r['scheme'])} on f"], r["error"])
    slope = table["fitted slope, h in [1, 2]"]
    assert slope[odenet_label("euler")] == "-" and slope["Euler on f"] == "-"  # NaN and no slope print as "-"
    assert_printed(slope[odenet_label("midpoint")], 0.063) and slope[odenet_label("rk4_38")] == "-0.00"


def test_error_floor_and_interchange_tables():
    floor = [dict(trained=a, one_step_rms=1.9e-3, error_own=0.11 + i, error_flow=6.3 / (i + 1), error_numerical=10.0 ** (1 - 4 * i))
             for i, a in enumerate(TRAINED)]
    text = SH.error_floor_table(floor, 0.25)
    assert text.startswith("E at T_data; 'flow of G' = G integrated with classic RK4 at Δt = 0.25·Δt_data")
    table = by_first_column(text)
    for r in floor:
        line = table[odenet_label(r["trained"])]
        for header, key in (("one-step RMS", "one_step_rms"), ("E own scheme", "error_own"), ("E flow of G", "error_flow"),
                            ("scheme on f", "error_numerical")):
            assert_printed(line[header], r[key])
    evaluated = ("euler", "midpoint", "rk4_classic", "rk4_38")
    inter = [dict(trained=a, evaluated=b, h=1.0, error=1.0, ratio_to_own=1.0 if a == b else 10.0 * (i + 1) + j / 100)
             for j, b in enumerate(evaluated) for i, a in enumerate(TRAINED)]
    header, rows = parse_table(SH.interchange_table(inter))
    assert header[1:] == [scheme_label(b) for b in evaluated] and [r[0] for r in rows] == [odenet_label(a) for a in TRAINED]
    table = {r[0]: dict(zip(header, r)) for r in rows}
    for r in inter:
        assert_printed(table[odenet_label(r["trained"])][scheme_label(r["evaluated"])], r["ratio_to_own"])


def test_control_table_names_the_less_accurate_scheme():
    rows = []
    for dtd, scale in ((0.01, 1.0), (0.05, 25.0)):
        for a, b in (("midpoint", "rk4_38"), ("rk4_38", "midpoint")):
            num = {"midpoint": 1.85e-3 * scale, "rk4_38": 6.3e-8 * scale**2}
            swapped, own = 0.106 * scale ** 0.5, 0.1 * scale ** 0.5
            rows.append(dict(dt_data=dtd, trained=a, evaluated=b, error_swapped=swapped, error_own=own,
                             error_numerical_trained=num[a], error_numerical_evaluated=num[b], error_numerical=max(num.values()),
                             ratio_to_own=swapped / own, ratio_to_numerical=swapped / max(num.values())))
    header, cells = parse_table(SH.control_table(rows))
    assert header == ["Δt_data", "A → B", "E(A→B)", "E(A→A)", "Midpoint on f", "E(A→B)/E(A→A)", "E(A→B)/Midpoint on f"]
    for r, line in zip(rows, cells):
        assert line[0] == f"{r['dt_data']:g}" and line[1] == f"{scheme_label(r['trained'])} → {scheme_label(r['evaluated'])}"
        for cell, key in zip(line[2:], ("error_swapped", "error_own", "error_numerical", "ratio_to_own", "ratio_to_numerical")):
            assert_printed(cell, r[key])
    mixed = [dict(rows[0], error_numerical_evaluated=1.0, error_numerical=1.0)] + rows[1:]  # RK4 worse here
    assert "less accurate scheme on f" in parse_table(SH.control_table(mixed))[0]


def test_energy_and_period_tables():
    gained = [dict(rate="the true f", scheme="midpoint", dt=0.05, n_steps=200, t_final=10.0, energy_start=6.9367,
                   energy_end=7.0915, energy_gained=0.1548, error=0.248),
              dict(rate="ODE-Net(RK4 (3/8 rule))", scheme="midpoint", dt=0.05, n_steps=200, t_final=10.0, energy_start=6.9367,
                   energy_end=9.4394, energy_gained=2.5027, error=1.05)]
    table = by_first_column(SH.energy_gained_table(gained))
    for r in gained:
        line = table[r["rate"]]
        assert line["run with"] == "Midpoint" and line["Δt"] == "0.05" and line["energy gained"].startswith("+")
        for header, key in (("energy at t = 0", "energy_start"), ("energy at t = 10", "energy_end"),
                            ("energy gained", "energy_gained"), ("E at t = 10", "error")):
            assert_printed(line[header], r[key])
    periods = [dict(rate="the true f", energy_from=6.9367, energy_to=7.0915, period_from=3.0652, period_to=3.0984, change=0.01083),
               dict(rate="G", energy_from=6.9367, energy_to=7.0915, period_from=3.0590, period_to=3.0781, change=0.00624)]
    header, rows = parse_table(SH.flow_period_table(periods))
    assert header == ["flow of", "period at energy 6.94", "period at energy 7.09", "change"]
    for r, line in zip(periods, rows):
        assert_printed(line[1], r["period_from"]) and assert_printed(line[2], r["period_to"])
        assert_printed(line[3], 100 * r["change"])


def test_the_table_reader_tells_wrong_numbers():
    assert printed_as("1.06e-01", 0.1059) and not printed_as("1.06e-01", 0.1049)
    assert printed_as("+1.1%", 1.149) and not printed_as("+1.1%", 1.16)
    assert printed_as("-0.00", -0.001) and printed_as("56.07", 56.0749) and not printed_as("56.07", 56.08)


# --------------------------------------------------------------------------- words: each on both sides of its threshold
def test_integrator_words_say_what_their_numbers_say():
    """The fitted slopes and the long window of *Numerical integrators* are worded from the chapter's own numbers in
    every preset (its step sizes differ by preset), beside their tables."""
    code = _code("pendulum_integrators")
    assert "pendulum.word_orders(slopes)" in code and "pendulum.word_long_window(rows_long, slopes_long)" in code
    slopes = [dict(scheme=s, slope=v) for s, v in zip(SCHEMES, (1.004, 1.988, 3.981, 3.975))]
    assert "Each rounds to its scheme's order (1, 2, 4, 4)" in SH.word_orders(slopes)
    assert "Not every slope rounds" in SH.word_orders([dict(slopes[0], slope=1.6), *slopes[1:]])
    rows = [dict(scheme=s, error=e) for s, e in (("euler", 5.0), ("euler", 47.0), ("midpoint", 0.13), ("rk4_38", 2.9e-4))]
    long = [dict(scheme=s, slope=v) for s, v in zip(SCHEMES, (0.83, 3.16, 4.35, 4.05))]
    said = SH.word_long_window(rows, long)
    assert "of order one at every one" in said and "still small" in said
    assert "Midpoint 3.16 (order 2)" in said and "RK4 (classic) 4.35" in said and "Still their order (within 0.15): RK4 (3/8 rule)" in said
    assert "not of order one" in SH.word_long_window([dict(rows[0], error=0.5), *rows[1:]], long)


def test_forward_euler_goes_over_the_top():
    """"Euler's pendulum gains energy at every step until it swings over the top" (Δt = 0.01 over [0, 10])."""
    assert "swings over the top" in _markdown("pendulum_integrators")
    r = S.true_rate_rollout("euler", dt=0.01, t_final=10.0)
    assert r["over_the_top"] and r["energy_end"] > r["energy_start"]


def test_the_odenet_chapter_shows_each_verdict_beside_its_table():
    code = _code("resnet_euler")
    for fn in ("word_fit", "word_dip", "word_rate_distances", "word_odenet_curves", "word_error_floor",
               "word_interchange", "word_control", "word_energy"):
        assert f"pendulum.{fn}(" in code, fn


def _dip(euler, others=(1.0, 0.95)):
    return [dict(trained="euler", ratio=euler)] + [dict(trained=s, ratio=r) for s, r in zip(("midpoint", "rk4_38"), others)]


def test_word_dip_and_fit():
    assert "falls apart" in SH.word_dip(_dip(40.0)) and "That is the dip." in SH.word_dip(_dip(40.0))
    assert "does not fall apart" in SH.word_dip(_dip(1.5)) and "does not show the dip" in SH.word_dip(_dip(1.5))
    assert "worse" in SH.word_dip(_dip(40.0, (1.5, 1.0))) and "does not show the dip" in SH.word_dip(_dip(40.0, (1.5, 1.0)))
    fit = [dict(final_loss=v) for v in (1e-7, 3e-7, 5e-7)]
    assert "about equally well" in SH.word_fit(fit)
    assert "do not fit the data equally well" in SH.word_fit(fit + [dict(final_loss=1e-4)])


def test_ratios_are_said_without_false_precision_or_empty_ranges():
    """Issue 30: "715 to 715 times its own error", "230027 times", "the same (within a factor 1.25)" for two equal
    numbers."""
    assert [SH.times(x) for x in (0.81, 20.3, 714.6, 1541.01, 80466, 230027)] == ["0.81", "20.3", "715", "1,540",
                                                                                 "80,500", "230,000"]
    assert SH.span(714.6, 715.2) == "715" and SH.span(0.93, 1.07) == "0.93 to 1.07"
    m = [dict(trained=a, evaluated=b, ratio_to_own=r) for a, b, r in (
        ("euler", "euler", 1.0), ("euler", "midpoint", 714.6), ("euler", "rk4_38", 715.2))]
    assert "run with any other scheme: 715 times its own error" in SH.word_interchange(m)
    floor = [dict(trained="rk4_38", error_own=5.08e-3, error_flow=5.08e-3, error_numerical=6.3e-8)]
    said = SH.word_error_floor(floor)
    assert "the same to three digits" in said and "within a factor" not in said and "about 80,600 times" in said


def test_word_rates_floor_and_interchange():
    good = [dict(trained="euler", closer_to="the modified rate", factor=5.0),
            dict(trained="midpoint", closer_to="f", factor=3.0), dict(trained="rk4_38", closer_to="f", factor=4.0)]
    assert "As the argument predicts" in SH.word_rate_distances(good)
    assert "Not as the argument predicts" in SH.word_rate_distances([dict(good[0], factor=1.5), *good[1:]])
    floor = [dict(trained="rk4_38", error_own=1.45e-2, error_flow=1.45e-2, error_numerical=6.3e-8)]
    said = SH.word_error_floor(floor)
    assert "the floor" in said and "orders of magnitude" in said
    assert "not the same" in SH.word_error_floor([dict(floor[0], error_flow=5e-2)])
    m = [dict(trained=a, evaluated=b, ratio_to_own=r) for a, b, r in (
        ("euler", "euler", 1.0), ("euler", "midpoint", 714.6), ("euler", "rk4_38", 714.6),
        ("midpoint", "euler", 416.3), ("midpoint", "midpoint", 1.0), ("midpoint", "rk4_38", 0.93),
        ("rk4_38", "euler", 416.7), ("rk4_38", "midpoint", 1.07), ("rk4_38", "rk4_38", 1.0))]
    said = SH.word_interchange(m)
    assert "it breaks" in said and "a small cost" in said and "0.93 to 1.07" in said
    assert "visible cost" in SH.word_interchange([dict(r, ratio_to_own=3.0) if r["trained"] == "midpoint" and
                                                  r["evaluated"] == "rk4_38" else r for r in m])


def test_word_curves_control_and_energy():
    def curve(a, errors):
        return [dict(trained=a, h=h, error=e) for h, e in zip((0.25, 0.5, 1.0, 2.0, 4.0), errors)]

    said = SH.word_odenet_curves(curve("euler", (5.3, 3.7, 9.2e-3, 5.7, 14)) + curve("midpoint", (1.4e-2, 1.4e-2, 1.5e-2,
                                 2e-2, 5.6e-2)) + curve("rk4_38", (1.5e-2,) * 5))
    assert "a V with its tip" in said and "flat for Δt ≤ Δt_data" in said and "rising beyond" in said
    assert said.count("over every step, flat (within a factor 1.00)") == 1
    assert "a factor 3.06 apart: not flat within 3" in SH.word_odenet_curves(curve("rk4_38", (1.5e-2,) * 4 + (4.9e-3,)))
    assert "no V" in SH.word_odenet_curves(curve("euler", (5.3, 3.7, 9.2, 5.7, 14)))
    ctl = [dict(dt_data=d, ratio_to_own=o, ratio_to_numerical=n) for d, o, n in
           ((0.01, 0.9, 7.3), (0.01, 1.1, 8.4), (0.1, 28.4, 0.18), (0.1, 98.7, 0.16))]
    said = SH.word_control(ctl)
    assert "as good as their own-scheme versions" in said and "(many times)" in said and "closer to the exact state" in said
    assert "already costs accuracy" in SH.word_control([dict(r, ratio_to_own=3.0) for r in ctl])
    gained = [dict(rate="the true f", energy_gained=0.924), dict(rate="ODE-Net(RK4 (3/8 rule))", energy_gained=1.036)]
    periods = [dict(rate="the true f", change=0.075), dict(rate="ODE-Net(RK4 (3/8 rule))", change=0.040)]
    said = SH.word_energy(gained, periods)
    assert "the same rate" in said and "more slowly than the true one" in said
    assert "at least as fast as" in SH.word_energy(gained, [periods[0], dict(periods[1], change=0.09)])


# --------------------------------------------------------------------------- the chapters: numbers glued, claims that hold
def _markdown(name: str) -> str:
    return "\n".join(cell_source(c) for c in read_notebook(ROOT / "book" / f"{name}.ipynb")["cells"]
                     if c["cell_type"] == "markdown")


def _code(name: str) -> str:
    return "\n".join(cell_source(c) for c in read_notebook(ROOT / "book" / f"{name}.ipynb")["cells"]
                     if c["cell_type"] == "code")


GLUED = re.compile(r"\{glue:md\}`([^`]+)`")
NUMBER = re.compile(r"(?<![\w.])[+−-]?(?:\d{1,3}(?:,\d{3})+|\d+\.\d+(?:e[+-]?\d+)?|\d+e[+-]\d+|\d+(?:\.\d+)?%)(?![\w])")
HIDDEN = re.compile(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`|\]\([^)]*\)|<!--.*?-->|(?:Secs?\.|Sections?|Figures?|Tables?) "
                    r"[A-Z]?\d+(?:\.\d+)*(?:\([a-z]\))?", re.S)
SETTINGS = {"pendulum_integrators": {"0.01"}, "resnet_euler": {"0.01"}}
"""The numbers a chapter's prose may type: settings and definitions (the data's spacing), not results."""


def integrator_results(cfg) -> dict:
    """What *Numerical integrators* computes and glues, in the preset of ``cfg``."""
    rows = S.integrator_convergence(SCHEMES, cfg.integrator_h, cfg.dt_data, cfg.integrator_t_final)
    h_long = [h for h in cfg.integrator_h if h >= 1 / 4]
    rows_long = S.integrator_convergence(SCHEMES, h_long, cfg.dt_data, 10.0)
    return dict(swing=S.swing_facts(10.0), slopes=S.fit_slopes(rows, cfg.fit_h_integrators), long_rows=rows_long,
                long_slopes=S.fit_slopes(rows_long, (min(h_long), max(h_long)), max_error=float("inf")))


def odenet_results(cfg, settings) -> dict:
    """What *Is a ResNet a forward-Euler integrator?* computes and glues, in the preset of ``cfg``."""
    models = train_models(cfg, settings=settings, progress=False)
    rows = S.rollout_rows(models, cfg.eval_schemes, cfg.h_values, cfg)
    dt_c = max(cfg.control_dt_data)
    coarse = train_models(cfg, cfg.control_schemes, dt_data=dt_c, n_iters=cfg.control_iters, settings=settings,
                          progress=False)
    rates = {"the true f": true_rate, odenet_label("rk4_38"): coarse["rk4_38"].model}
    gained = S.energy_gained(rates, "midpoint", dt_c, cfg)
    levels = (gained[0]["energy_start"], find_row(gained, rate="the true f")["energy_end"])
    return dict(training=S.training_summary(models), dip=S.dip_rows(rows), distances=S.rate_distances(models, cfg),
                curves=S.odenet_convergence(rows),
                numerical=S.integrator_convergence(cfg.train_schemes, cfg.h_values, cfg.dt_data, cfg.T_data),
                floor=S.error_floor_rows(models, rows, cfg), matrix=S.interchange_matrix(rows, 1.0),
                control=S.dt_data_control(cfg, models, settings=settings, progress=False), gained=gained,
                periods=S.flow_periods(rates, levels, cfg.g))


@pytest.mark.parametrize("chapter", sorted(SETTINGS))
def test_the_prose_types_no_result(chapter):
    """Every number the prose states is glued from a cell ({glue:md}`name`) or is a setting; no result is typed."""
    text = HIDDEN.sub(" ", without_card(_markdown(chapter)))
    typed = [m.group(0) for m in NUMBER.finditer(text) if m.group(0).lstrip("+−-") not in SETTINGS[chapter]]
    assert not typed, f"{chapter}: numbers typed in the prose, not glued: {typed}"
    assert "glue_all(pendulum.facts(" in _code(chapter) and "book's run" not in _markdown(chapter)
    cells = [cell_source(c).strip() for c in read_notebook(ROOT / "book" / f"{chapter}.ipynb")["cells"]
             if c["cell_type"] == "code"]
    assert not [c for c in cells if c.splitlines() and c.splitlines()[-1].startswith("glue_all(")], \
        "a cell that ends with glue_all(...) shows its dict on the page: glue before the cell's last line"


def test_every_glued_name_is_computed(smoke_study, tmp_path):
    """The names the prose quotes are the ones the study's facts give (in the smoke preset: every preset gives the
    same names), and the cells glue them."""
    cfg = smoke_study[0]
    given = {"pendulum_integrators": SH.facts(**integrator_results(cfg)),
             "resnet_euler": SH.facts(**odenet_results(cfg, smoke_settings(runs_dir=tmp_path)))}
    for chapter, said in given.items():
        quoted = set(GLUED.findall(_markdown(chapter)))
        assert quoted and quoted <= set(said), f"{chapter}: glued nowhere: {sorted(quoted - set(said))}"
        assert all(isinstance(v, str) and v for v in said.values())
    with pytest.raises(TypeError, match="together"):
        SH.facts(gained=[])
    with pytest.raises(TypeError, match="knows"):
        SH.facts(dips=[])


@pytest.mark.slow
def test_what_the_prose_says_holds_in_the_published_run(tmp_path):
    """The prose says what the published book's numbers show (the dip, the modified rate, the curves, the floor, the
    interchange, the control, the energy; the orders and the long window): each of those words is the verdict the
    study's own sentence gives for them (its thresholds), computed as the chapters compute them from the ODE-Nets
    that ship with the book."""
    cfg = config_for(PUBLISHED_PRESET)
    got = integrator_results(cfg)
    assert "Each rounds to its scheme's order" in SH.word_orders(got["slopes"])
    long = str(SH.word_long_window(got["long_rows"], got["long_slopes"]))
    assert "of order one at every one" in long and "still small" in long and "Still their order" not in long
    text = re.sub(r"\s+", " ", _markdown("pendulum_integrators"))
    assert "of order one" in text and "no longer 2 and 4" in text

    got = odenet_results(cfg, smoke_settings(preset=PUBLISHED_PRESET, runs_dir=tmp_path))
    said = " ".join(str(s) for s in (
        SH.word_fit(got["training"]), SH.word_dip(got["dip"]), SH.word_rate_distances(got["distances"]),
        SH.word_odenet_curves(got["curves"]), SH.word_error_floor(got["floor"]), SH.word_interchange(got["matrix"]),
        SH.word_control(got["control"]), SH.word_energy(got["gained"], got["periods"])))
    for verdict in ("about equally well", "That is the dip.", "As the argument predicts", "a V with its tip",
                    "flat for Δt ≤ Δt_data", "rising beyond", ": the floor.", "orders of magnitude", "it breaks",
                    "a small cost", "as good as their own-scheme versions", "(many times)",
                    "closer to the exact state than it", "the same rate", "more slowly than the true one"):
        assert verdict in said, verdict
    # the RK4-trained model: flat where RK4's truncation error on f is below it; at the largest step that error is
    # larger than the model's own, and the rollout's error smaller than either (the two partly cancel)
    rk4 = sorted((r for r in got["curves"] if r["trained"] == "rk4_38"), key=lambda r: r["h"])
    on_f = {r["h"]: r["error"] for r in got["numerical"] if r["scheme"] == "rk4_38"}
    below = [r["error"] for r in rk4[:-1]]
    assert max(below) / min(below) < SH.SAME_FLOOR and max(on_f[r["h"]] for r in rk4[:-1]) < min(below) / 10
    assert on_f[rk4[-1]["h"]] > max(below) and rk4[-1]["error"] < min(on_f[rk4[-1]["h"]], min(below))
    text = re.sub(r"\s+", " ", _markdown("resnet_euler"))
    for words in ("falls apart", "nothing to choose between the three models", "smaller than either",
                  "end up *closer* to the exact state"):
        assert words in text, words
