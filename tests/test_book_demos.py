"""The worked example of the chapter "How this book works" (cnet_lib.book.demos): its runs are the
integrator's, its tables print their numbers, its figures draw them in the schemes' colours, and its
live app comes with the static view it is given."""
from __future__ import annotations

import math
import random

import pytest
import torch
from table_reading import assert_printed, by_first_column, parse_table

from cnet_lib.runtime.rich_text import SCHEME_COLORS, scheme_color, scheme_label, sci
from cnet_lib.book import demos
from cnet_lib import integrate

SCHEMES = ["euler", "midpoint", "rk4_classic"]
T_END = 2.0


def rate(t, y):
    return (-1.0 + 0.5 * math.sin(4.0 * t)) * y


def exact(t):
    return math.exp(-t + (1.0 - math.cos(4.0 * t)) / 8.0)


@pytest.fixture(scope="module")
def runs():
    return demos.convergence_runs(rate, exact, SCHEMES, [4, 8, 16, 32, 64], T_END)


def test_runs_are_the_integrators(runs):
    assert [(r["scheme"], r["n_steps"]) for r in runs[:2]] == [("euler", 4), ("euler", 8)] and len(runs) == 15
    for r in runs:
        path = integrate(rate, torch.ones(1, dtype=torch.float64), r["scheme"], r["n_steps"], t_span=(0.0, T_END), return_path=True)
        assert r["y"] == path[:, 0].tolist() and r["dt"] == T_END / r["n_steps"]
        assert len(r["t"]) == r["n_steps"] + 1 and r["t"][0] == 0.0 and r["t"][-1] == T_END
        assert r["error"] == abs(r["y"][-1] - exact(T_END))
    # the chapter's first number: Euler with 4 steps
    assert f"{runs[0]['error']:.3e}" == "1.076e-01"


def test_dts_errors_and_orders(runs):
    shuffled = list(runs)
    random.Random(1).shuffle(shuffled)
    dts, errors = demos.dts_and_errors(shuffled, "midpoint")
    assert dts == [T_END / n for n in (4, 8, 16, 32, 64)]  # finest last, whatever the order of the runs
    assert errors == [next(r["error"] for r in runs if r["scheme"] == "midpoint" and r["n_steps"] == n) for n in (4, 8, 16, 32, 64)]
    orders = demos.two_point_orders(runs)
    assert [(o["scheme"], o["order"]) for o in orders] == [("euler", 1), ("midpoint", 2), ("rk4_classic", 4)]
    for o in orders:
        dts, errors = demos.dts_and_errors(runs, o["scheme"])
        assert o["slope"] == pytest.approx(math.log(errors[-2] / errors[-1]) / math.log(dts[-2] / dts[-1]))
        assert abs(o["slope"] - o["order"]) < 0.15


def test_tables_print_the_runs(runs):
    header, rows = parse_table(demos.error_table(runs))
    assert header == ["N_t", "Δt"] + [scheme_label(s) for s in SCHEMES]
    assert [r[0] for r in rows] == ["4", "8", "16", "32", "64"]
    table = {r[0]: dict(zip(header, r)) for r in rows}
    for r in runs:
        assert_printed(table[str(r["n_steps"])][scheme_label(r["scheme"])], r["error"])
        assert float(table[str(r["n_steps"])]["Δt"]) == r["dt"]
    orders = demos.two_point_orders(runs)
    table = by_first_column(demos.order_table(orders))
    for o in orders:
        assert table[scheme_label(o["scheme"])]["order r"] == str(o["order"])
        assert_printed(table[scheme_label(o["scheme"])]["slope of the two finest runs"], o["slope"])


def test_figures_draw_the_runs_in_the_schemes_colours(runs):
    fig = demos.fig_solutions(runs, exact)
    exact_trace, *traces = fig.data
    assert exact_trace.name == "exact" and exact_trace.line.color == SCHEME_COLORS["exact"]
    steps = sorted({r["n_steps"] for r in runs})
    assert len(traces) == len(steps) and fig.layout.updatemenus and fig.layout.sliders  # one trace per N_t
    first = runs[0]["scheme"]
    for tr, n in zip(traces, steps):  # drawn with the first scheme; the menu restyles them with another's
        r = next(r for r in runs if r["scheme"] == first and r["n_steps"] == n)
        assert tr.line.color == scheme_color(first) and list(tr.y) == pytest.approx(r["y"], rel=1e-6)
    for button, s in zip(fig.layout.updatemenus[0].buttons, dict.fromkeys(r["scheme"] for r in runs)):
        changes, _ = button.args
        mine = [next(r for r in runs if r["scheme"] == s and r["n_steps"] == n) for n in steps]
        assert changes["line.color"] == [scheme_color(s)] * len(steps)
        assert all(y == pytest.approx(r["y"], rel=1e-6) for y, r in zip(changes["y"], mine))
    conv = demos.fig_error_convergence(runs)
    for s in SCHEMES:
        tr = next(t for t in conv.data if t.name == scheme_label(s))
        assert tr.line.color == scheme_color(s) and list(tr.y) == demos.dts_and_errors(runs, s)[1]
    assert conv.layout.xaxis.type == "log" and {t.name for t in conv.data} >= {"slope 1", "slope 2", "slope 4"}
    together = demos.fig_schemes_together(runs, exact, n_steps=16)
    assert len(together.layout.sliders[0].steps) == 5 and len(together.data) == 1 + len(runs)
    assert together.layout.sliders[0].active == 2 and demos.fig_schemes_together(runs, exact).layout.sliders[0].active == 0
    shown = [t for t in together.data[1:] if t.visible]
    assert [list(t.y) for t in shown] == [next(r["y"] for r in runs if r["scheme"] == s and r["n_steps"] == 16) for s in SCHEMES]
    assert {t.line.color for t in together.data[1:]} == {scheme_color(s) for s in SCHEMES}


def test_live_app_shows_its_static_view(runs):
    pytest.importorskip("ipywidgets")
    static = demos.fig_schemes_together(runs, exact)
    app = demos.live_solver_app(rate, exact, SCHEMES, T_END, static_fallback_fig=static, max_steps=64)
    assert app.static_fig is static and app.controls == ["scheme", "n_steps"]
    scheme, n_steps = app.widget._cnet_controls.values()
    assert scheme.value == "euler" and (n_steps.min, n_steps.max, n_steps.value) == (1, 64, 4)
    assert "cnet-live-app-static" in app._repr_mimebundle_()["text/html"]


def test_the_chapter_glues_the_numbers_its_prose_states(runs):
    """*How this book works* quotes its slopes and errors from the cell that computes them ({glue:md}`name`): no result
    typed in its prose, every name it quotes given by demos.facts, and each slope the prose calls "close to its
    scheme's order" within 0.2 of it in every preset's grid."""
    from glued_prose import cells_ending_in_glue, glued_names, typed_numbers

    said = demos.facts(runs)
    assert said["n_finest"] == "64" and said["n_second"] == "32"
    assert said["slope_euler"] == f"{demos.two_point_orders(runs)[0]['slope']:.2f}"
    assert said["error_rk4_classic"] == sci(demos.dts_and_errors(runs, 'rk4_classic')[1][-1])
    assert not typed_numbers("how_to_use") and not cells_ending_in_glue("how_to_use")
    assert glued_names("how_to_use") <= set(said) and glued_names("how_to_use")
    for steps in ([4, 8, 16, 32, 64], [4, 8, 16, 32, 64, 128, 256, 512]):
        for row in demos.two_point_orders(demos.convergence_runs(rate, exact, SCHEMES, steps, T_END)):
            assert abs(row["slope"] - row["order"]) < 0.2, row
