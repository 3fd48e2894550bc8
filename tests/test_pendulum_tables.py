"""The pendulum chapters' tables (cnet_lib.report.pendulum_report) print the numbers of the rows they
are given, each in its place, and the study functions behind the chapter "Numerical integrators"
measure what they say.

Every table is parsed back (``table_reading``) and each printed number is checked against the value
in the rows: it must be that value rounded to the printed digits.
"""
from __future__ import annotations

import math
import random

import numpy as np
import pytest
import torch
from table_reading import assert_printed, by_first_column, parse_table, printed_as

from cnet_lib.pendulum import G, RHO0, energy, exact_solution, period
from cnet_lib import pendulum as ps
from cnet_lib.report import pendulum_report as pt
from cnet_lib.pendulum.odenet import odenet_label
from cnet_lib.pendulum.pendulum_presets import config_for
from cnet_lib.runtime.vocabulary import scheme_label


# --------------------------------------------------------------------------- the exact pendulum and the integrators on f
def test_swing_facts_and_table():
    facts = ps.swing_facts(10.0)
    assert facts["g"] == G and facts["rho0"] == RHO0
    assert math.isclose(facts["period"], period()) and math.isclose(facts["small_angle_period"], 2 * math.pi / math.sqrt(G))
    assert math.isclose(facts["longer_percent"], 100 * (period() / (2 * math.pi / math.sqrt(G)) - 1))
    assert math.isclose(facts["energy"], -G * math.cos(RHO0), rel_tol=1e-12) and facts["energy_drift"] < 1e-12
    cells = {q: row["value"] for q, row in by_first_column(pt.swing_table(facts)).items()}
    for quantity, key in (("g", "g"), ("ρ(0)", "rho0"), ("period of this swing, 4K(m)/√g", "period"),
                          ("period of a tiny swing, 2π/√g", "small_angle_period"), ("this swing takes longer by", "longer_percent"),
                          ("energy v²/2 − g cos ρ", "energy"), ("its largest change along the exact solution", "energy_drift")):
        assert_printed(cells[quantity], facts[key])


def test_true_rate_rollout_report_and_table():
    report = ps.true_rate_rollout("euler", 0.01, 10.0)
    assert report["n_steps"] == 1000 and len(report["t"]) == 1001 and report["x"].shape == (1001, 2)
    assert math.isclose(report["error"], np.linalg.norm(report["x"][-1] - exact_solution(10.0)))
    # forward Euler pumps energy into the pendulum until it goes over the top (the chapter's point)
    assert report["energy_end"] > report["energy_start"] and report["over_the_top"]
    assert math.isclose(report["energy_start"], energy(exact_solution(0.0)))
    assert report["max_abs_rho"] == pytest.approx(np.abs(report["x"][:, 0]).max())
    cells = {q: row["value"] for q, row in by_first_column(pt.rollout_table(report)).items()}
    assert cells["scheme"] == "Euler" and cells["N_t"] == "1000" and cells["over the top (energy above g = 9.81)?"] == "True"
    assert_printed(cells["error at t = 10: ‖x_N − x(10)‖"], report["error"])
    assert_printed(cells["energy at t = 10"], report["energy_end"])
    assert_printed(cells["largest |ρ| (rad)"], report["max_abs_rho"])
    # thinned paths keep the last state; the numbers do not depend on the thinning
    thin = ps.true_rate_rollout("euler", 0.01, 10.0, max_points=100)
    assert len(thin["t"]) <= 102 and thin["t"][-1] == pytest.approx(10.0)
    np.testing.assert_array_equal(thin["x"][-1], report["x"][-1])
    assert thin["error"] == report["error"] and thin["max_abs_rho"] == report["max_abs_rho"]
    rows = ps.true_rate_rollouts(["euler", "rk4_classic"], [0.05, 0.1], 10.0)
    assert [(r["scheme"], r["dt"], r["n_steps"]) for r in rows] == [("euler", 0.05, 200), ("euler", 0.1, 100),
                                                                     ("rk4_classic", 0.05, 200), ("rk4_classic", 0.1, 100)]


def test_local_errors_slopes_and_table():
    schemes, dts = ["euler", "midpoint", "rk4_classic"], [0.02, 0.01, 0.005]
    rows = ps.local_errors(schemes, dts, t_start=1.0)
    x1 = exact_solution(1.0)
    euler = next(r for r in rows if r["scheme"] == "euler" and r["dt"] == 0.01)
    step = x1 + 0.01 * np.array([x1[1], -G * math.sin(x1[0])])  # one Euler step by hand
    assert euler["error"] == pytest.approx(np.linalg.norm(step - exact_solution(1.01)), rel=1e-12)
    slopes = ps.local_slopes(rows)
    for s in slopes:
        assert abs(s["slope"] - s["expected"]) < 0.2, s  # local error O(Δt^(r+1))
    table = by_first_column(pt.local_error_table(rows, slopes))
    random.Random(0).shuffle(rows)  # the table is found by key, not by position
    for r in rows:
        assert_printed(table[scheme_label(r["scheme"])][f"Δt={r['dt']:g}"], r["error"])
    for s in slopes:
        assert_printed(table[scheme_label(s["scheme"])]["slope"], s["slope"])
        assert table[scheme_label(s["scheme"])]["r+1"] == str(s["expected"])


def test_convergence_slopes_and_halving_tables():
    rows = ps.integrator_convergence(("euler", "midpoint", "rk4_38"), (1 / 4, 1 / 2, 1.0), 0.01, 1.0)
    table = by_first_column(pt.convergence_table(rows))  # a line per Δt, a column per scheme
    for r in rows:
        assert_printed(table[f"{r['dt']:g}"][scheme_label(r["scheme"])], r["error"])
    slopes = ps.fit_slopes(rows, (1 / 4, 1.0))
    with_range = by_first_column(pt.slopes_table(slopes, rows))
    for s in slopes:
        line = with_range[scheme_label(s["scheme"])]
        assert_printed(line["fitted slope"], s["slope"])
        assert line["points"] == str(s["n_points"]) and line["order"] == {"euler": "1", "midpoint": "2", "rk4_38": "4"}[s["scheme"]]
        errors = [r["error"] for r in rows if r["scheme"] == s["scheme"]]
        assert_printed(line["E from"], min(errors)) and assert_printed(line["E to"], max(errors))
    assert "E from" not in parse_table(pt.slopes_table(slopes))[0]
    ratios = ps.halving_ratios(rows, h=1.0)
    for q in ratios:
        e = {r["h"]: r["error"] for r in rows if r["scheme"] == q["scheme"]}
        assert q["ratio"] == e[1.0] / e[0.5] and q["expected"] == 2 ** {"euler": 1, "midpoint": 2, "rk4_38": 4}[q["scheme"]]
    halving = by_first_column(pt.halving_table(ratios))
    for q in ratios:
        assert_printed(halving[scheme_label(q["scheme"])]["E(Δt) / E(Δt/2)"], q["ratio"])
        assert halving[scheme_label(q["scheme"])]["2^r"] == str(q["expected"])


def test_setup_and_backend_tables():
    cfg = config_for("smoke")
    facts = ps.setup_facts(cfg)
    assert facts["n_pairs"] == 1000 and facts["n_parameters"] == 2 * 50 + 50 + 50 * 2
    cells = {q: row["value"] for q, row in by_first_column(pt.setup_table(facts)).items()}
    assert cells["preset"] == "smoke" and cells["training pairs (x_k, x_k+1)"] == "1000"
    assert cells["full-batch Adam iterations, float64"] == str(cfg.n_iters)
    assert cells["learning rate"] == f"{cfg.lr:g} → {cfg.lr_final:g}" and cells["parameters of G (50 hidden units)"] == "250"
    state = torch.random.get_rng_state()
    rows = ps.backend_agreement(cfg)
    assert torch.equal(state, torch.random.get_rng_state()), "the global random state must be left alone"
    assert [r["scheme"] for r in rows] == list(cfg.train_schemes) and all(r["max_difference"] < 1e-14 for r in rows)
    table = by_first_column(pt.backend_table(rows))
    for r in rows:
        assert_printed(table[scheme_label(r["scheme"])]["largest |torchdiffeq step − cnet_lib step|"], r["max_difference"])


# --------------------------------------------------------------------------- the ODE-Net chapter's tables, on rows made up here
SCHEMES = ("euler", "midpoint", "rk4_38")


def test_training_dip_and_distance_tables():
    training = [dict(trained=a, final_loss=0.03 + i / 100, one_step_rms=1.9e-3 * (i + 1), n_iters=1000, seconds=2.4 + i,
                     trained_with=9, device="cpu") for i, a in enumerate(SCHEMES)]
    table = by_first_column(pt.training_table(training))
    for r in training:
        line = table[odenet_label(r["trained"])]
        assert_printed(line["final loss"], r["final_loss"]) and assert_printed(line["seconds"], r["seconds"])
        assert_printed(line["RMS one-step residual ‖F(x_k) − x_k+1‖"], r["one_step_rms"]) and line["iterations"] == "1000"
        assert line["trained at once"] == "9 on cpu"
    dip = [dict(trained=a, error_dt_data=0.1 * (i + 1), error_half=0.3 / (i + 1), ratio=3 / (i + 1) ** 2) for i, a in enumerate(SCHEMES)]
    table = by_first_column(pt.dip_table(dip))
    for r in dip:
        line = table[odenet_label(r["trained"])]
        assert_printed(line["E(Δt_data)"], r["error_dt_data"]) and assert_printed(line["E(Δt_data/2)"], r["error_half"])
        assert_printed(line["E(Δt_data/2) / E(Δt_data)"], r["ratio"])
    dist = [dict(trained="euler", rms_to_f=0.227, rms_to_modified=0.187, closer_to="the modified rate", factor=0.227 / 0.187),
            dict(trained="midpoint", rms_to_f=0.193, rms_to_modified=0.230, closer_to="f", factor=0.230 / 0.193)]
    table = by_first_column(pt.rate_distance_table(dist))
    for r in dist:
        line = table[odenet_label(r["trained"])]
        assert line["closer to"] == r["closer_to"] and assert_printed(line["by"], r["factor"])
        assert_printed(line["RMS ‖G − f‖"], r["rms_to_f"]) and assert_printed(line["RMS ‖G − (f + (Δt_data/2) f'f)‖"], r["rms_to_modified"])


def test_odenet_convergence_table_pairs_each_model_with_its_scheme_on_f():
    hs = (0.5, 1.0, 2.0)
    odenet = [dict(trained=a, scheme=a, h=h, dt=0.01 * h, error=(i + 1) * h / 10) for i, a in enumerate(SCHEMES) for h in hs]
    numerical = [dict(scheme=a, h=h, dt=0.01 * h, error=10.0 ** (-2 * i) * h) for i, a in enumerate(SCHEMES) for h in hs]
    slopes = [dict(trained="euler", slope=math.nan), dict(trained="midpoint", slope=0.063), dict(trained="rk4_38", slope=-0.001)]
    text = pt.odenet_convergence_table(odenet, list(reversed(numerical)), slopes, (1.0, 2.0))
    header, rows = parse_table(text)  # a line per h, a column per model: the narrow way round
    assert header[1:] == [name for a in SCHEMES for name in (odenet_label(a), f"{scheme_label(a)} on f")]
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
             for i, a in enumerate(SCHEMES)]
    text = pt.error_floor_table(floor, 0.25)
    assert text.startswith("E at T_data; 'flow of G' = G integrated with classic RK4 at Δt = 0.25·Δt_data")
    table = by_first_column(text)
    for r in floor:
        line = table[odenet_label(r["trained"])]
        for header, key in (("one-step RMS", "one_step_rms"), ("E own scheme", "error_own"), ("E flow of G", "error_flow"),
                            ("scheme on f", "error_numerical")):
            assert_printed(line[header], r[key])
    evaluated = ("euler", "midpoint", "rk4_classic", "rk4_38")
    inter = [dict(trained=a, evaluated=b, h=1.0, error=1.0, ratio_to_own=1.0 if a == b else 10.0 * (i + 1) + j / 100)
             for j, b in enumerate(evaluated) for i, a in enumerate(SCHEMES)]
    header, rows = parse_table(pt.interchange_table(inter))
    assert header[1:] == [scheme_label(b) for b in evaluated] and [r[0] for r in rows] == [odenet_label(a) for a in SCHEMES]
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
    header, cells = parse_table(pt.control_table(rows))
    assert header == ["Δt_data", "A → B", "E(A→B)", "E(A→A)", "Midpoint on f", "E(A→B)/E(A→A)", "E(A→B)/Midpoint on f"]
    for r, line in zip(rows, cells):
        assert line[0] == f"{r['dt_data']:g}" and line[1] == f"{scheme_label(r['trained'])} → {scheme_label(r['evaluated'])}"
        for cell, key in zip(line[2:], ("error_swapped", "error_own", "error_numerical", "ratio_to_own", "ratio_to_numerical")):
            assert_printed(cell, r[key])
    mixed = [dict(rows[0], error_numerical_evaluated=1.0, error_numerical=1.0)] + rows[1:]  # RK4 worse here
    assert "less accurate scheme on f" in parse_table(pt.control_table(mixed))[0]


def test_energy_and_period_tables():
    gained = [dict(rate="the true f", scheme="midpoint", dt=0.05, n_steps=200, t_final=10.0, energy_start=6.9367,
                   energy_end=7.0915, energy_gained=0.1548, error=0.248),
              dict(rate="ODE-Net(RK4 (3/8 rule))", scheme="midpoint", dt=0.05, n_steps=200, t_final=10.0, energy_start=6.9367,
                   energy_end=9.4394, energy_gained=2.5027, error=1.05)]
    table = by_first_column(pt.energy_gained_table(gained))
    for r in gained:
        line = table[r["rate"]]
        assert line["run with"] == "Midpoint" and line["Δt"] == "0.05" and line["energy gained"].startswith("+")
        for header, key in (("energy at t = 0", "energy_start"), ("energy at t = 10", "energy_end"),
                            ("energy gained", "energy_gained"), ("E at t = 10", "error")):
            assert_printed(line[header], r[key])
    periods = [dict(rate="the true f", energy_from=6.9367, energy_to=7.0915, period_from=3.0652, period_to=3.0984, change=0.01083),
               dict(rate="G", energy_from=6.9367, energy_to=7.0915, period_from=3.0590, period_to=3.0781, change=0.00624)]
    header, rows = parse_table(pt.flow_period_table(periods))
    assert header == ["flow of", "period at energy 6.94", "period at energy 7.09", "change"]
    for r, line in zip(periods, rows):
        assert_printed(line[1], r["period_from"]) and assert_printed(line[2], r["period_to"])
        assert_printed(line[3], 100 * r["change"])


def test_the_table_reader_tells_wrong_numbers():
    assert printed_as("1.06e-01", 0.1059) and not printed_as("1.06e-01", 0.1049)
    assert printed_as("+1.1%", 1.149) and not printed_as("+1.1%", 1.16)
    assert printed_as("-0.00", -0.001) and printed_as("56.07", 56.0749) and not printed_as("56.07", 56.08)
