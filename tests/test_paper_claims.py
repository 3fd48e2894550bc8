"""The paper's sentences the book tests (issue 41): the pendulum at large steps, the smoothness of θ(t), and the
book's comparisons made the paper's way.  Exact or synthetic inputs, so each outcome is known in advance."""
from __future__ import annotations

import math

import pytest
import torch

from cnet_lib.book import paper_claims as PC
from cnet_lib.images.studies.theta import theta_roughness
from cnet_lib.images.training.train_config import TrainConfig, build_model
from cnet_lib.pendulum import large_steps as LS


def _rows(own, other, base):
    """Rows of one model trained with midpoint: its own error, with RK4, and the baseline, per h."""
    rows = []
    for h, a, b, c in zip((10.0, 20.0, 25.0), own, other, base):
        rows += [{"trained": "midpoint", "evaluated": "midpoint", "h": h, "dt": 0.01 * h, "error": a},
                 {"trained": "midpoint", "evaluated": "rk4_38", "h": h, "dt": 0.01 * h, "error": b},
                 {"trained": None, "evaluated": "midpoint", "h": h, "dt": 0.01 * h, "error": c}]
    return rows


def test_the_interchange_ratio_and_the_slopes_at_large_steps():
    # own error ∝ Δt³ (a midpoint model at large steps), the baseline ∝ Δt², RK4 a hundred times smaller
    own = [1e-3 * h ** 3 for h in (10, 20, 25)]
    rows = _rows(own, [e / 100 for e in own], [1e-2 * h ** 2 for h in (10, 20, 25)])
    ratios = LS.interchange_at_large_steps(rows)
    assert [r["h"] for r in ratios] == [10.0, 20.0, 25.0] and all(r["ratio"] == pytest.approx(0.01) for r in ratios)
    slope = LS.large_step_slopes(rows)[0]
    assert slope["slope"] == pytest.approx(3.0) and slope["baseline"] == pytest.approx(2.0)
    assert slope["difference"] == pytest.approx(1.0) and slope["h"] == [10.0, 20.0, 25.0]
    assert LS.large_step_slopes(rows, h_values=(10.0, 20.0))[0]["h"] == [10.0, 20.0]


def test_every_large_step_is_a_whole_number_of_steps_over_the_data_window():
    from cnet_lib.pendulum.pendulum_presets import config_for
    cfg = config_for("gpu")
    for h in LS.LARGE_H:
        n = cfg.T_data / (h * cfg.dt_data)
        assert h > 2 and abs(n - round(n)) < 1e-9
    assert set(LS.SLOPE_H) <= set(LS.LARGE_H) and min(LS.SLOPE_H) >= 10


def test_theta_roughness_is_zero_for_copies_and_near_root_two_for_independent_pieces():
    torch.manual_seed(0)
    model = build_model(TrainConfig(channels=(4, 8, 8), n_basis=4, scheme="euler"))
    fresh = theta_roughness(model)
    assert [r["block"] for r in fresh] == [1, 2, 3] and all(r["n_basis"] == 4 for r in fresh)
    assert all(abs(r["roughness"] - math.sqrt(2)) < 0.1 for r in fresh), "independent draws of equal norm"
    refined = build_model(TrainConfig(channels=(4, 8, 8), n_basis=1, scheme="euler"))
    refined.refine()
    refined.refine()  # M = 4: every piece a copy of one
    assert all(r["roughness"] == 0.0 and r["largest"] == 0.0 for r in theta_roughness(refined))
    one = build_model(TrainConfig(channels=(4, 8, 8), n_basis=1, scheme="euler"))
    assert all(r["roughness"] is None for r in theta_roughness(one))


def _sweep(own, graphs, scheme="rk4_classic"):
    rows = [{"kind": "trained", "scheme": scheme, "n_steps": 4, "n_basis": 4, "accuracy": own}]
    rows += [{"kind": "manifestation", "scheme": s, "n_steps": n, "n_basis": 4, "accuracy": a} for (s, n), a in graphs.items()]
    rows += [{"kind": "compressed", "scheme": "rk4_classic", "n_steps": 2, "n_basis": 2, "accuracy": own - 0.01},
             {"kind": "identity", "accuracy": 0.2}]
    return rows


def test_the_paper_s_cheaper_graphs_are_measured_from_its_best_instance_and_ours_from_each_model():
    sweeps = {0: {"rk4_refined": _sweep(0.80, {("rk4_38", 2): 0.78, ("rk4_classic", 2): 0.79, ("euler", 4): 0.76})},
              1: {"rk4_refined": _sweep(0.82, {("rk4_38", 2): 0.81, ("rk4_classic", 2): 0.80, ("euler", 4): 0.80})}}
    rows = {(r["source"], r["graph"]): r for r in PC.cheaper_graphs(sweeps)}
    best = next(r for r in PC.PAPER_TABLE1 if r["key"] == "rk4_best")["accuracy"]
    eleven = next(r for r in PC.PAPER_TABLE1 if r["key"] == "same_11")["accuracy"]
    assert rows[("paper", "rk4_38 11-11-11")]["delta"]["mean"] == pytest.approx(eleven - best)
    assert rows[("here", "rk4_38 2-2-2")]["delta"]["mean"] == pytest.approx(-1.5)
    assert rows[("here", "rk4_classic 2-2-2")]["delta"] == {"n": 2, "mean": pytest.approx(-1.5), "min": pytest.approx(-2.0),
                                                             "max": pytest.approx(-1.0)}
    assert "this book's addition" in rows[("here", "rk4_classic 2-2-2, M = 2")]["operation"]
    assert "best RK4 instance" in str(PC.cheaper_graphs_table(sweeps))
    claims = PC.invariance_claims({s: {**sw, "euler_fixed": _sweep(0.8, {("euler", 8): 0.79}, "euler")}
                                   for s, sw in sweeps.items()})
    rk4_as_euler = [r for r in claims if r["claim"] == "rk4_as_euler"]
    assert [r["n_steps"] for r in rk4_as_euler] == [4] and rk4_as_euler[0]["loss"]["mean"] == pytest.approx(3.0)
    assert "just as accurate when the integrator is interchanged" in str(PC.invariance_claims_table(sweeps))


@pytest.mark.slow
def test_the_claims_page_on_what_ships():
    """The page *The paper's claims, checked* (issue 41): every claim has a verdict in the page's words, every rule
    a claim, and on the shipped models the verdicts are what their numbers say (a change of the models or of a rule
    changes this test)."""
    from cnet_lib.book import claims_page as CP
    rows = CP.claim_rows()
    words = {"holds", "holds in part", "not shown at this scale", "does not hold here", "tested here", "not tested"}
    assert {r["verdict"] for r in rows} <= words
    assert len([r for r in rows if r["verdict"] == "not tested"]) == 5 and all(r["finding"] for r in rows)
    def verdict(start):
        return next(r["verdict"] for r in rows if r["claim"].startswith(start))

    assert verdict("an Euler-trained ODE-Net gets worse") == "holds"
    assert verdict("an RK4-trained, refined ContinuousNet keeps") == "not shown at this scale"
    assert verdict("refinement \u201cimproves model quality") == "not shown at this scale"
    assert sum(r["verdict"] == "holds in part" for r in rows) >= 2
    assert len(CP.RULES) == len(rows) - 5 - 1, "one rule per tested claim (the adaptive one is future work)"
    table = CP.paper_claims_table()
    assert "the paper says" in table and "verdict" in table and "Figure 8" in table
    # issue 53: on a phone a block per claim, the verdict and the finding marked as what the table exists for
    assert "cnet-cards" in table.html and '<th class="cnet-key">verdict</th>' in table.html


def test_the_tables_a_phone_must_read_put_their_key_columns_first():
    """Issue 53: the introduction's results table and the manifestation tables (35 rows of 8 columns) put their
    accuracies right after the first columns and mark them (the browser test checks a phone shows them unswiped)."""
    from cnet_lib.book.paper_comparison import paper_comparison_table
    from cnet_lib.report.sweep_report import sweep_table, table1_table

    intro = paper_comparison_table()
    assert intro.text.splitlines()[0].split()[:4] == ["source", "model", "accuracy", "(%)"]
    assert 'cnet-key">accuracy (%)</th>' in intro.html
    rows = [dict(kind="manifestation", scheme="euler", n_steps=2, n_basis=2, units=6, n_parameters=10, accuracy=0.5,
                 ms_per_image=0.1, model="m", speedup=1.0, delta_points=-1.0)]
    assert str(sweep_table(rows)).split()[:4] == ["kind", "scheme", "N_t", "accuracy"]
    assert 'cnet-key">accuracy</th>' in sweep_table(rows).html
    assert 'cnet-key">Δ points</th>' in table1_table(rows).html


def test_chapters_attribute_to_the_paper_only_what_it_says():
    """Issue 41, item 5: phrases that attributed to the paper what it does not say are gone from every page, and every
    page that describes the `paper` preset describes it the same way."""
    from pathlib import Path

    from cnet_lib.book.notebook_cells import cell_source, read_notebook

    root = Path(__file__).resolve().parents[1]
    texts = {}
    for path in sorted((root / "book").glob("*.ipynb")):
        texts[path.name] = "\n".join(cell_source(c) for c in read_notebook(path)["cells"])
    for path in sorted((root / "book").glob("*.md")) + [root / "README.md"]:
        texts[path.name] = path.read_text(encoding="utf-8")
    wrong = ["what the paper calls", "seed paper's exact schedules", "paper's schedules", "the paper's time window",
             "the paper's data spacing", "As in the paper, $g = 9.81$", "The data are the paper's",
             "the paper's whole window", "compressed ... rk4_38 11-11-11", "loses 0.13 points",
             "ResNets generally lack it, ContinuousNets have it"]
    found = [(name, w) for name, text in texts.items() for w in wrong if w in " ".join(text.split())]
    assert not found, f"attributed to the paper, and not the paper's: {found}"
    preset_lines = [(name, line) for name, text in texts.items() for line in text.splitlines()
                    if "`paper`" in line and "preset" in line and ("schedule" in line or "runs" in line)]
    assert preset_lines, "some page describes the paper preset"
    for name, line in preset_lines:
        assert "paper's schedule" not in line, (name, line)


def test_the_one_number_check_finds_an_unexplained_figure_and_accepts_an_explained_one():
    """The check of the built book (tests/test_book_build.py) on pages made for it: a sentence and a table row that
    quote a model with another accuracy fail unless the sentence or the table's note says why ("as trained: ...")."""
    from cnet_lib.report.run_report import as_trained_note  # noqa: F401  (the words the pages use)
    from cnet_lib.runtime.rows import format_table
    from one_number import own_accuracy_mentions, trained_accuracies, unexplained

    runs_table = format_table([{"what": "held-out accuracy", "a": 0.823, "b": 0.819}],
                              [("", "what", "{}"), ("RK4-trained (refined)", "a", "{}"),
                               ("Euler-trained (fixed depth)", "b", "{}")]).html
    trained = trained_accuracies(runs_table)
    assert trained == {"rk4_refined": pytest.approx(82.3), "euler_fixed": pytest.approx(81.9)}
    bare = "<p>Both models: RK4-trained (refined) 82.4% clean, Euler-trained (fixed depth) 81.9% clean.</p>"
    said = "<p>RK4-trained (refined) 82.4% clean (as trained: 82.3% (bf16 autocast); here float32).</p>"
    rows = [{"m": "Euler-trained (fixed depth)", "g": "own: Euler N_t = 4", "acc": 0.824}]
    cols = [("model", "m", "{}"), ("graph", "g", "{}"), ("accuracy", "acc", "{:.4f}")]
    table = format_table(rows, cols).html
    noted = format_table(rows, cols, note="2,000 images; as trained: 81.9%").html
    assert [m.run for m in unexplained(own_accuracy_mentions(bare), trained)] == ["rk4_refined"]
    assert unexplained(own_accuracy_mentions(said), trained) == []
    assert [m.percent for m in unexplained(own_accuracy_mentions(table), trained)] == [pytest.approx(82.4)]
    assert unexplained(own_accuracy_mentions(noted), trained) == []


def test_the_claims_page_names_each_page_by_its_title():
    """The claims table's page column (claims_page.PAGES) says each chapter's title as its heading says it."""
    from pathlib import Path

    from cnet_lib.book.claims_page import PAGES
    from cnet_lib.book.notebook_cells import cell_source, read_notebook

    book = Path(__file__).resolve().parents[1] / "book"
    for name, title in PAGES.items():
        if name == "paper_claims":
            continue
        path = book / f"{name}.ipynb"
        first = (cell_source(read_notebook(path)["cells"][0]) if path.is_file()
                 else (book / f"{name}.md").read_text(encoding="utf-8"))
        assert first.splitlines()[0] == f"# {title}", (name, first.splitlines()[0])
