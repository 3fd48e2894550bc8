"""Every sentence of the chapters that compares numbers agrees with the numbers it sits beside.

Two kinds (book/CONTRIBUTING.md, item 9):

* sentences whose numbers are the same in every preset (forward Euler at Δt = 0.01, the units of a
  manifestation): checked here against the library's numbers;
* sentences whose numbers depend on the preset or on training (fitted slopes over the preset's step sizes,
  the dip, the floor, the interchange, the speed-up of refinement, the verdicts): worded by the library
  from the numbers a chapter has just computed
  (:mod:`cnet_lib.report.pendulum_claims_report`, :func:`cnet_lib.report.refinement_report.word_speedup`, the verdict modules),
  so they cannot disagree with them; here each wording is checked to say what its numbers say, on both
  sides of its threshold, and the chapters are checked to display them.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from cnet_lib import pendulum
from cnet_lib.book.notebook_cells import cell_source, read_notebook
from cnet_lib.core.schemes import get_scheme
from cnet_lib.images.studies import theta
from cnet_lib.report import pendulum_claims_report as PC

ROOT = Path(__file__).resolve().parents[1]
SCHEMES = ["euler", "midpoint", "rk4_classic", "rk4_38"]


def _markdown(name: str) -> str:
    return "\n".join(cell_source(c) for c in read_notebook(ROOT / "book" / f"{name}.ipynb")["cells"]
                     if c["cell_type"] == "markdown")


def _code(name: str) -> str:
    return "\n".join(cell_source(c) for c in read_notebook(ROOT / "book" / f"{name}.ipynb")["cells"]
                     if c["cell_type"] == "code")


# --------------------------------------------------------------------------- numbers that need no training
def test_integrator_claims_are_worded_from_the_numbers():
    """The fitted slopes and the long window of *Numerical integrators* are worded from the chapter's own
    numbers in every preset (its step sizes differ by preset), not typed as "1, 2, 4, 4"."""
    code, text = _code("pendulum_integrators"), _markdown("pendulum_integrators")
    assert "report.word_orders(slopes)" in code and "report.word_long_window(rows_long, slopes_long)" in code
    assert "1, 2, 4, 4" not in text and "slopes 1, 2, 4 and 4" not in text
    slopes = [dict(scheme=s, slope=v) for s, v in zip(SCHEMES, (1.004, 1.988, 3.981, 3.975))]
    assert "Each rounds to its scheme's order (1, 2, 4, 4)" in PC.word_orders(slopes)
    assert "Not every slope rounds" in PC.word_orders([dict(slopes[0], slope=1.6), *slopes[1:]])
    rows = [dict(scheme=s, error=e) for s, e in (("euler", 5.0), ("euler", 47.0), ("midpoint", 0.13), ("rk4_38", 2.9e-4))]
    long = [dict(scheme=s, slope=v) for s, v in zip(SCHEMES, (0.83, 3.16, 4.35, 4.05))]
    said = PC.word_long_window(rows, long)
    assert "of order one at every one" in said and "still small" in said
    assert "Midpoint 3.16 (order 2)" in said and "RK4 (classic) 4.35" in said and "Still their order (within 0.15): RK4 (3/8 rule)" in said
    assert "not of order one" in PC.word_long_window([dict(rows[0], error=0.5), *rows[1:]], long)


def test_forward_euler_goes_over_the_top():
    """"Euler's pendulum gains energy at every step until it swings over the top" (Δt = 0.01 over [0, 10])."""
    assert "swings over the top" in _markdown("pendulum_integrators")
    r = pendulum.true_rate_rollout("euler", dt=0.01, t_final=10.0)
    assert r["over_the_top"] and r["energy_end"] > r["energy_start"]


def test_units_claims_of_the_continuousnet_chapter():
    """"classic RK4 with N_t = M/2 costs twice the evaluations of the ResNet graph and reads every piece; with N_t = 1
    it skips pieces; the 3/8 rule ... touches every piece even at N_t = 1"."""
    assert "costs twice the evaluations of the ResNet graph" in _markdown("continuousnet")
    rows = {(r["scheme"], r["n_steps"]): r for r in theta.manifestation_reads(
        [("euler", 4), ("rk4_classic", 2), ("rk4_classic", 1), ("rk4_38", 1)], 4)}
    assert rows[("rk4_classic", 2)]["units"] == 2 * rows[("euler", 4)]["units"]
    assert sorted(rows[("rk4_classic", 2)]["pieces"]) == [0, 1, 2, 3]
    assert len(set(rows[("rk4_classic", 1)]["pieces"])) < 4 and sorted(set(rows[("rk4_38", 1)]["pieces"])) == [0, 1, 2, 3]


# --------------------------------------------------------------------------- sentences worded from the numbers
def test_trained_model_claims_are_worded_from_the_numbers():
    """The chapter about ODE-Nets displays each worded claim beside its table, and its prose no longer states
    an outcome that depends on training ("with the default preset ...")."""
    code, text = _code("resnet_euler"), _markdown("resnet_euler")
    for fn in ("word_fit", "word_dip", "word_rate_distances", "word_odenet_curves", "word_error_floor",
               "word_interchange", "word_control", "word_energy"):
        assert f"report.{fn}(" in code, fn
    assert "With the default preset the Euler-trained" not in text and "the table of periods shows (with the default" not in text
    assert "report.word_speedup" in Path(ROOT / "book" / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert "report.refinement_cost_table(timing" in _code("refinement_training")
    assert "Expect the measured speed-up to fall short" not in _markdown("refinement_training")


def test_no_chapter_prints_a_table():
    """Tables and verdicts are displayed (HTML that wraps to the page), never printed."""
    printed = re.compile(r"print\(\s*\"?\\?n?\"?\s*\+?\s*(?:\"\\n\"\.join\()?\s*(report|pendulum|demos)\.(format_\w+|\w+_text|"
                         r"\w+_table|word_\w+)\(")
    for nb in sorted((ROOT / "book").glob("*.ipynb")):
        hits = printed.findall(_code(nb.stem))
        assert not hits, f"{nb.name} prints a table or verdict: display it instead ({hits})"


def _dip(euler, others=(1.0, 0.95)):
    return [dict(trained="euler", ratio=euler)] + [dict(trained=s, ratio=r) for s, r in zip(("midpoint", "rk4_38"), others)]


def test_word_dip_and_fit():
    assert "falls apart" in PC.word_dip(_dip(40.0)) and "That is the dip." in PC.word_dip(_dip(40.0))
    assert "does not fall apart" in PC.word_dip(_dip(1.5)) and "does not show the dip" in PC.word_dip(_dip(1.5))
    assert "worse" in PC.word_dip(_dip(40.0, (1.5, 1.0))) and "does not show the dip" in PC.word_dip(_dip(40.0, (1.5, 1.0)))
    fit = [dict(final_loss=v) for v in (1e-7, 3e-7, 5e-7)]
    assert "about equally well" in PC.word_fit(fit)
    assert "do not fit the data equally well" in PC.word_fit(fit + [dict(final_loss=1e-4)])


def test_ratios_are_said_without_false_precision_or_empty_ranges():
    """Issue 30: "715 to 715 times its own error", "230027 times", "the same (within a factor 1.25)" for two equal
    numbers."""
    assert [PC.times(x) for x in (0.81, 20.3, 714.6, 1541.01, 80466, 230027)] == ["0.81", "20.3", "715", "1,540",
                                                                                 "80,500", "230,000"]
    assert PC.span(714.6, 715.2) == "715" and PC.span(0.93, 1.07) == "0.93 to 1.07"
    m = [dict(trained=a, evaluated=b, ratio_to_own=r) for a, b, r in (
        ("euler", "euler", 1.0), ("euler", "midpoint", 714.6), ("euler", "rk4_38", 715.2))]
    assert "run with any other scheme: 715 times its own error" in PC.word_interchange(m)
    floor = [dict(trained="rk4_38", error_own=5.08e-3, error_flow=5.08e-3, error_numerical=6.3e-8)]
    said = PC.word_error_floor(floor)
    assert "the same to three digits" in said and "within a factor" not in said and "about 80,600 times" in said


def test_word_rates_floor_and_interchange():
    good = [dict(trained="euler", closer_to="the modified rate", factor=5.0),
            dict(trained="midpoint", closer_to="f", factor=3.0), dict(trained="rk4_38", closer_to="f", factor=4.0)]
    assert "As the argument predicts" in PC.word_rate_distances(good)
    assert "Not as the argument predicts" in PC.word_rate_distances([dict(good[0], factor=1.5), *good[1:]])
    floor = [dict(trained="rk4_38", error_own=1.45e-2, error_flow=1.45e-2, error_numerical=6.3e-8)]
    said = PC.word_error_floor(floor)
    assert "the floor" in said and "orders of magnitude" in said
    assert "not the same" in PC.word_error_floor([dict(floor[0], error_flow=5e-2)])
    m = [dict(trained=a, evaluated=b, ratio_to_own=r) for a, b, r in (
        ("euler", "euler", 1.0), ("euler", "midpoint", 714.6), ("euler", "rk4_38", 714.6),
        ("midpoint", "euler", 416.3), ("midpoint", "midpoint", 1.0), ("midpoint", "rk4_38", 0.93),
        ("rk4_38", "euler", 416.7), ("rk4_38", "midpoint", 1.07), ("rk4_38", "rk4_38", 1.0))]
    said = PC.word_interchange(m)
    assert "it breaks" in said and "a small cost" in said and "0.93 to 1.07" in said
    assert "visible cost" in PC.word_interchange([dict(r, ratio_to_own=3.0) if r["trained"] == "midpoint" and
                                                  r["evaluated"] == "rk4_38" else r for r in m])


def test_word_curves_control_and_energy():
    def curve(a, errors):
        return [dict(trained=a, h=h, error=e) for h, e in zip((0.25, 0.5, 1.0, 2.0, 4.0), errors)]

    said = PC.word_odenet_curves(curve("euler", (5.3, 3.7, 9.2e-3, 5.7, 14)) + curve("midpoint", (1.4e-2, 1.4e-2, 1.5e-2,
                                 2e-2, 5.6e-2)) + curve("rk4_38", (1.5e-2,) * 5))
    assert "a V with its tip" in said and "flat for Δt ≤ Δt_data" in said and "rising beyond" in said
    assert said.count("over every step, flat (within a factor 1.00)") == 1
    assert "a factor 3.06 apart: not flat within 3" in PC.word_odenet_curves(curve("rk4_38", (1.5e-2,) * 4 + (4.9e-3,)))
    assert "no V" in PC.word_odenet_curves(curve("euler", (5.3, 3.7, 9.2, 5.7, 14)))
    ctl = [dict(dt_data=d, ratio_to_own=o, ratio_to_numerical=n) for d, o, n in
           ((0.01, 0.9, 7.3), (0.01, 1.1, 8.4), (0.1, 28.4, 0.18), (0.1, 98.7, 0.16))]
    said = PC.word_control(ctl)
    assert "as good as their own-scheme versions" in said and "(many times)" in said and "closer to the exact state" in said
    assert "already costs accuracy" in PC.word_control([dict(r, ratio_to_own=3.0) for r in ctl])
    gained = [dict(rate="the true f", energy_gained=0.924), dict(rate="ODE-Net(RK4 (3/8 rule))", energy_gained=1.036)]
    periods = [dict(rate="the true f", change=0.075), dict(rate="ODE-Net(RK4 (3/8 rule))", change=0.040)]
    said = PC.word_energy(gained, periods)
    assert "the same rate" in said and "more slowly than the true one" in said
    assert "at least as fast as" in PC.word_energy(gained, [periods[0], dict(periods[1], change=0.09)])
