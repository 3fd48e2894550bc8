"""Integrator x refinement (issue 40, item 4): the control runs complete a balanced 2 x 2, and the factorial study
separates the integrator's effect from refinement's.  Synthetic sweeps: each effect is known in advance."""
from __future__ import annotations

import pytest

from cnet_lib.images.runs.image_presets import CONTROLS, IMAGE_PRESETS, image_runs
from cnet_lib.images.studies import factorial as F
from cnet_lib.report import factorial_report as FR


@pytest.mark.parametrize("preset", list(IMAGE_PRESETS))
def test_every_preset_has_a_balanced_two_by_two(preset):
    runs = image_runs(preset, controls=True)
    assert set(CONTROLS) <= set(runs) and set(CONTROLS).isdisjoint(image_runs(preset)), "controls only when asked"
    assert set(F.CELLS.values()) <= set(runs)
    cells = {run: runs[run] for run in F.CELLS.values()}
    # the same data, recipe and widths everywhere; the same final M and N_t; the refined cells on the same schedule
    same = {"dataset", "n_train", "n_test", "channels", "batch_size", "lr", "lr_schedule", "lr_milestones", "epochs",
            "weight_decay", "momentum", "basis", "epsilon", "seed"}
    for field in same:
        assert len({repr(getattr(c, field)) for c in cells.values()}) == 1, field
    assert len({c.final_n_steps() for c in cells.values()}) == 1
    assert cells["euler_refined"].refine_at == cells["rk4_refined"].refine_at and cells["rk4_refined"].refine_at
    assert cells["rk4_fixed"].refine_at == cells["euler_fixed"].refine_at == ()
    for (scheme, _), run in F.CELLS.items():
        assert cells[run].scheme == scheme


def _sweep(own: float, valid_loss: float, scheme: str, identity: float = 0.2) -> list:
    """A model trained at N_t = M = 4 that loses ``valid_loss`` on rk4_38 at N_t = 8 (a valid graph for both
    integrators) and 0.3 more across θ's jumps (rk4_classic at N_t = 6)."""
    return [{"kind": "trained", "scheme": scheme, "n_steps": 4, "n_basis": 4, "accuracy": own},
            {"kind": "manifestation", "scheme": "rk4_38", "n_steps": 8, "n_basis": 4, "accuracy": own - valid_loss},
            {"kind": "manifestation", "scheme": "rk4_classic", "n_steps": 6, "n_basis": 4,
             "accuracy": own - valid_loss - 0.3},
            {"kind": "identity", "accuracy": identity}]


def _seed(loss: dict) -> dict:
    return {run: _sweep(0.8, loss[run], "euler" if run.startswith("euler") else "rk4_classic") for run in loss}


def test_the_effects_add_up_to_the_main_contrast():
    # integrator effect 0.05 everywhere, refinement effect 0.02 for Euler and 0.00 for RK4
    loss = {"rk4_refined": 0.00, "rk4_fixed": 0.00, "euler_refined": 0.05, "euler_fixed": 0.07}
    fx = F.factorial_over_seeds({0: _seed(loss)}, preset="cpu")
    assert fx.complete and fx.seeds == [0]
    e = {k: v["values"][0] for k, v in fx.effects.items()}
    assert e["integrator, refined"] == pytest.approx(5.0) and e["integrator, fixed depth"] == pytest.approx(7.0)
    assert e["refinement, Euler"] == pytest.approx(2.0) and e["refinement, RK4"] == pytest.approx(0.0)
    assert e["main runs' contrast"] == pytest.approx(e["integrator, refined"] + e["refinement, Euler"])
    assert fx.cells["euler_fixed"]["straddles"] == pytest.approx([37.0])
    words = str(FR.word_factorial(fx))
    assert "the integrator carries more of the contrast" in words and "exploratory" in words
    assert all(v["test"] is None for v in fx.effects.values()), "no test with one seed per cell"
    table = str(FR.factorial_table(fx))
    assert "1 training seed per cell (seed 0)" in table and "Euler" in table and "fixed depth" in table


def test_refinement_can_carry_it_and_seeds_give_intervals():
    seeds = {s: _seed({"rk4_refined": 0.002 * s, "rk4_fixed": 0.06 + d, "euler_refined": 0.01 + 0.003 * s,
                       "euler_fixed": 0.07 + d})
             for s, d in enumerate((0.0, 0.01, -0.01))}
    fx = F.factorial_over_seeds(seeds, preset="cpu")
    assert fx.seeds == [0, 1, 2] and fx.effects["refinement, RK4"]["test"]["ci95"][0] > 0
    words = str(FR.word_factorial(fx))
    assert "refinement carries more of the contrast" in words and "95% interval" in words
    tests = {name: e["test"] for name, e in fx.effects.items() if name != "main runs' contrast"}
    assert all(t["p_holm"] >= t["p"] for t in tests.values()) and "p_holm" not in fx.effects["main runs' contrast"]["test"]
    held = [name for name, t in tests.items() if t["p_holm"] < 0.05]
    assert held and f"at the 5% level: {'; '.join(held)}." in words


def test_holm_over_the_four_effects_with_two_seeds_per_cell():
    """Two seeds per cell: one effect's interval excludes zero (p 0.037, the cpu preset's case), corrected over the
    four effects it does not hold, and the words say both."""
    seeds = {0: _seed({"rk4_refined": 0.0, "rk4_fixed": 0.0005, "euler_refined": 0.023, "euler_fixed": 0.068}),
             1: _seed({"rk4_refined": 0.0245, "rk4_fixed": 0.010, "euler_refined": 0.027, "euler_fixed": 0.053})}
    fx = F.factorial_over_seeds(seeds, preset="cpu")
    t = fx.effects["integrator, fixed depth"]["test"]
    assert t["ci95"][0] > 0 and t["p"] < 0.05 < t["p_holm"]
    ps = [fx.effects[n]["test"]["p"] for n in F.EFFECTS if n != "main runs' contrast"]
    assert t["p_holm"] == pytest.approx(min(1.0, 4 * min(ps)))
    words = str(FR.word_factorial(fx))
    assert "none holds at the 5% level (the smallest, integrator, fixed depth" in words and "exploratory" not in words


def test_missing_cells_are_said_and_no_effect_is_computed():
    fx = F.factorial_over_seeds({0: _seed({"rk4_refined": 0.0, "euler_fixed": 0.05})}, preset="gpu")
    assert not fx.complete and fx.missing == ["rk4_fixed", "euler_refined"] and fx.effects == {}
    assert "cannot be told apart" in str(FR.word_factorial(fx))
    assert "-" in str(FR.factorial_table(fx))
    with pytest.raises(ValueError, match="sweeps_by_seed is empty"):
        F.factorial_over_seeds({})
    with pytest.raises(ValueError, match="unknown preset"):
        F.shipped_factorial("huge")


def test_a_cell_that_ships_no_folder_is_read_from_the_seeds_file(monkeypatch):
    """A preset may ship the main runs' folders only and keep the controls' seed-0 sweeps in the seeds file:
    shipped_factorial reads each cell of seed 0 from its shipped sweep, else from that file."""
    loss = {"rk4_refined": 0.00, "rk4_fixed": 0.01, "euler_refined": 0.03, "euler_fixed": 0.07}
    seed0, seed1 = _seed(loss), _seed({k: v + 0.01 for k, v in loss.items()})
    monkeypatch.setattr(F, "shipped_sweep_file", lambda preset, run: {"rows": seed0[run], "n_test": 100}
                        if run in ("rk4_refined", "euler_fixed") else None)
    monkeypatch.setattr(F, "shipped_seeds", lambda preset: [{"seed": 0, "sweeps": seed0}, {"seed": 1, "sweeps": seed1}])
    fx = F.shipped_factorial("gpu", fallback=None)
    assert fx.complete and fx.seeds == [0, 1] and fx.n_images == 100
    assert fx.effects["integrator, fixed depth"]["values"] == pytest.approx([6.0, 6.0])
