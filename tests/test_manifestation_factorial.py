"""The planned manifestation factorial (cnet_lib/studies/manifestation_factorial): its plan is code, its runs resume,
its analysis refuses an incomplete design and computes the plan's test, and the shipped record (once the study has
run) is what the analysis reads."""
from __future__ import annotations

import json
import math
import random
import re

import pytest

from cnet_lib.studies.stats import welch
from cnet_lib.studies import manifestation_factorial as MF
from smoke_data import SHARED_DATA


def test_the_plans_graphs_are_valid_for_every_cell_and_never_a_models_own():
    from cnet_lib.core.schemes import get_scheme

    for cell in MF.CELLS.values():
        trained = (cell["scheme"], 4)
        for scheme, n in MF.PRIMARY_GRAPHS:
            assert (scheme, n) != trained and (scheme, n) in MF.GRAPHS
            assert get_scheme(scheme).order >= get_scheme(cell["scheme"]).order and n % 4 == 0 and n >= 4
    assert [c for c, _ in MF.schedule()[:4]] == list(MF.PRIMARY), "the primary cells first, seed by seed"
    assert len(MF.PRIMARY_SEEDS) == 12 and len(MF.EXPLORATORY_SEEDS) == 8


def test_a_two_group_contrast_is_welchs_test():
    rng = random.Random(0)
    a, b = [rng.gauss(0, 1) for _ in range(7)], [rng.gauss(1, 3) for _ in range(9)]
    mine, ref = MF.contrast_test([b, a], [1, -1]), welch(a, b)
    assert math.isclose(mine["estimate"], ref["diff"], rel_tol=1e-12) and math.isclose(mine["p"], ref["p"], rel_tol=1e-9)
    assert math.isclose(mine["df"], ref["df"], rel_tol=1e-12)
    assert all(math.isclose(x, y, rel_tol=1e-9) for x, y in zip(mine["ci"], ref["ci95"]))


def _model(cell, seed, own, others):
    acc = {f"{s}@{n}": others for s, n in MF.GRAPHS}
    trained = f"{MF.CELLS[cell]['scheme']}@4"
    acc[trained] = own
    return {"cell": cell, "seed": seed, "trained_graph": trained, "accuracy": acc, "final_accuracy": own}


def test_the_analysis_refuses_an_incomplete_design_and_follows_its_rule():
    rng = random.Random(1)
    models = [_model(c, s, 0.7, 0.7 - (0.05 if c.startswith("euler") else 0.0) + rng.gauss(0, 0.004))
              for c in MF.PRIMARY for s in MF.PRIMARY_SEEDS]
    with pytest.raises(ValueError, match="incomplete"):
        MF.analyse({"models": models[:-1]})
    out = MF.analyse({"models": models})
    integ, refine = out["primary"]["integrator"], out["primary"]["refinement"]
    assert 4 < integ["estimate"] < 6 and integ["verdict"] == "holds" and integ["p_holm"] < 0.05
    assert refine["verdict"].startswith("not shown") and refine["p_holm"] >= refine["p"]
    same = [_model(c, s, 0.7, 0.7 + rng.gauss(0, 0.001)) for c in MF.PRIMARY for s in MF.PRIMARY_SEEDS]
    assert MF.analyse({"models": same})["primary"]["integrator"]["verdict"] == \
        "not shown, and no difference as large as 2 points"


def test_the_report_shows_the_plans_test_first_and_the_exploratory_analyses_labelled():
    """The chapter reports the study as the plan demands: the primary test (both hypotheses, Holm's p, the verdict by
    the plan's rule) before the exploratory analyses, which are labelled so; without a record it says that the study
    has not finished and shows no number."""
    rng = random.Random(2)
    models = [_model(c, s, 0.7 + rng.gauss(0, 0.01), 0.7 - (0.05 if c.startswith("euler") else 0.0) + rng.gauss(0, 0.004))
              for c in MF.CELLS for s in (MF.PRIMARY_SEEDS if c in MF.PRIMARY else MF.EXPLORATORY_SEEDS)]
    record = {"models": models}
    analysis = MF.analyse(record)
    shown = str(MF.report(record, analysis))
    first, rest = shown.split("Exploratory analyses (not part of the plan's test; p values unadjusted)")
    assert first.startswith("The plan's test") and "H_I" in first and "H_R" in first and "p, Holm" in first
    assert "12 models a cell" in first, "the plan's test counts the primary cells' models, not the exploratory ones"
    p_holm = analysis["primary"]["integrator"]["p_holm"]
    assert analysis["primary"]["integrator"]["verdict"] in first and ("< 0.001" if p_holm < 0.001 else f"{p_holm:.2g}") in first
    assert "interaction" in rest and "midpoint_fixed - euler_fixed" in rest and "H_I" not in rest
    assert "(exploratory)" in rest and "RK4-classic, refined" in rest, "every cell's mean loss, exploratory cells labelled"
    facts = MF.facts(analysis)
    assert facts["planned_integrator_verdict"] == analysis["primary"]["integrator"]["verdict"]
    assert facts["planned_euler_fixed_n"] == str(len(MF.PRIMARY_SEEDS))
    fig = MF.fig_losses(analysis)
    dots = [t for t in fig.data if t.mode == "markers" and len(t.x) > 1]
    assert [len(t.x) for t in dots] == [len(analysis["cells"][c]["loss"]) for c in MF.CELLS], "one dot a model"
    assert sorted(dots[0].x) == sorted(analysis["cells"]["euler_fixed"]["loss"])
    empty = MF.report(None)
    assert str(empty) == MF.NOT_FINISHED and "has not finished" in str(empty) and not any(ch.isdigit() for ch in str(empty))


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="needs the offline CIFAR-10 copy in ../shared/data")
def test_runs_train_evaluate_and_resume(tmp_path, monkeypatch):
    monkeypatch.setattr(MF, "RECIPE", {**MF.RECIPE, "n_train": 64, "epochs": 4, "channels": (2, 2, 2),
                                       "batch_size": 32, "lr_milestones": (3,)})
    runs = [("euler_fixed", 0), ("rk4_refined", 0)]
    done = MF.train_and_evaluate(tmp_path, SHARED_DATA, runs)
    assert [p.name for p in done] == ["euler_fixed-seed0", "rk4_refined-seed0"]
    first = (done[0] / MF.EVALUATION).read_text()
    again = MF.train_and_evaluate(tmp_path, SHARED_DATA, runs)
    assert again == done and (done[0] / MF.EVALUATION).read_text() == first, "a finished run is kept as it is"
    record = MF.collect(tmp_path)
    assert [m["cell"] for m in record["models"]] == ["euler_fixed", "rk4_refined"]
    model = record["models"][1]
    assert model["trained_graph"] == "rk4_classic@4" and set(model["accuracy"]) == {f"{s}@{n}" for s, n in MF.GRAPHS}
    assert model["n_images"] == 1000 and model["checkpoint_sha256"]
    assert math.isclose(model["accuracy"]["rk4_classic@4"], model["final_accuracy"], abs_tol=1e-9)
    assert model["skip_gain"] > 0, "a trained skip gain has left zero"
    json.dumps(record)
    # the skip gains, read again from the checkpoints the record names; a checkpoint that is not the record's is refused
    assert MF.add_skip_gains(record, tmp_path) == record
    (done[1] / "checkpoint.pt").write_bytes((done[0] / "checkpoint.pt").read_bytes())
    with pytest.raises(ValueError, match="not the checkpoint the record holds"):
        MF.add_skip_gains(record, tmp_path)


def test_skip_gain_is_the_mean_of_abs_s_over_depth_time_and_blocks():
    import torch

    state = {"blocks.0.skip_gain": torch.tensor([0.0, -1.0, 1.0, 2.0]), "blocks.1.skip_gain": torch.tensor([0.5]),
             "blocks.0.conv.weight": torch.ones(3)}
    assert MF.skip_gain(state) == (1.0 + 0.5) / 2
    assert MF.skip_gain({"blocks.0.conv.weight": torch.ones(3)}) is None


def test_the_shipped_record_is_the_plans():
    record = MF.shipped_record()
    if record is None:
        pytest.skip("the study has not shipped its record yet")
    import hashlib

    assert record["plan_sha256"] == hashlib.sha256(MF.fixed_plan()).hexdigest(), \
        "the plan above its Deviations section changed after the study ran: record the change as a deviation"
    MF.analyse(record)


def test_the_power_the_chapter_quotes_is_the_plans_table():
    """The power the chapter glues (MF.POWER) is the plan's simulated power for a 2-point effect, row by row."""
    import re

    plan = MF.fixed_plan().decode("utf-8")
    rows = dict(re.findall(r"^\| (\d+) \| [\d.]+ \| \**([\d.]+)\** \|", plan, flags=re.M))
    assert {int(n): float(p) for n, p in rows.items()} == MF.POWER
    assert MF.POWER[len(MF.PRIMARY_SEEDS)] >= 0.8, "the plan's seeds give at least 80% power"


def test_post_hoc_analyses_are_apart_from_the_plans_and_labelled():
    rng = random.Random(3)
    models = [dict(_model(c, s, 0.7, 0.7 - (0.01 if c == "euler_refined" else 0.0) + rng.gauss(0, 0.002)),
                   identity_accuracy=0.69 if c.endswith("fixed") else 0.5)
              for c in MF.PRIMARY for s in MF.PRIMARY_SEEDS]
    record = {"models": [dict(m, n_images=5000) for m in models], "recipe": MF.RECIPE}
    analysis = MF.analyse(record)
    later = MF.post_hoc(record, analysis)
    assert later["blocks_worth"]["euler_fixed"]["mean"] == pytest.approx(1.0)
    assert later["blocks_worth"]["rk4_refined"]["mean"] == pytest.approx(20.0)
    assert 0.5 < later["euler_minus_rk4_refined"]["diff"] < 1.5
    shown = str(MF.report(record, analysis, later))
    assert shown.index("The plan's test") < shown.index("Exploratory") < shown.index("Post hoc (chosen after")
    assert "Post hoc" not in str(MF.report(record, analysis, later, part="test"))
    facts = MF.facts(analysis, later, record)
    assert facts["planned_n_primary"] == "48" and facts["planned_n_images"] == "5,000"
    assert facts["planned_worth_euler_fixed"] == "1.0" and facts["planned_midpoint_fixed"] == "—"
    assert not [v for v in facts.values() if re.search(r"(?<![\w-])-\d", v)], "prose takes a real minus sign"
    with pytest.raises(ValueError, match="part"):
        MF.report(record, analysis, part="everything")


def test_the_chapters_words_on_the_planned_study_follow_its_record():
    """Manifestation invariance words the shipped result (which hypothesis holds, which way, an effect below the plan's
    smallest effect that matters, the one cell that loses, blocks that learned little at fixed depth): each word is held
    here to the record's numbers, so a different record fails this test before it can contradict the page."""
    record = MF.shipped_record()
    if record is None:
        pytest.skip("the study has not shipped its record yet")
    a = MF.analyse(record)
    later = MF.post_hoc(record, a)
    integ, refine = a["primary"]["integrator"], a["primary"]["refinement"]
    assert integ["verdict"] == "holds" and 0 < integ["ci"][0] and integ["ci"][1] < MF.DELTA, "'there and small'"
    assert refine["verdict"] == "the opposite holds", "'Refinement works the other way'"
    loss = {c: v["mean"] for c, v in a["exploratory"]["cell_loss"].items()}
    primary = {c: loss[c] for c in MF.PRIMARY}
    assert max(primary, key=primary.get) == "euler_refined" and all(loss[c] < 0.2 for c in ("euler_fixed", "rk4_fixed",
                                                                                            "rk4_refined"))
    worth = {c: v["mean"] for c, v in later["blocks_worth"].items()}
    assert worth["euler_fixed"] < 10 and worth["rk4_fixed"] < 10 < min(worth["euler_refined"], worth["rk4_refined"])
    gain = {c: v["mean"] for c, v in later["skip_gain"].items()}
    assert max(gain["euler_fixed"], gain["rk4_fixed"]) < min(gain["euler_refined"], gain["rk4_refined"]), \
        "'Their skip gains say the same'"
    assert "euler_fixed_noskip" not in gain, "a model without skip-init has no gain to quote"
    ph = later["euler_minus_rk4_refined"]
    assert 0 < ph["ci95"][0] and ph["diff"] < 1, "'in its direction, but under a point'"
    from pathlib import Path

    chapter = Path(__file__).resolve().parents[1] / "book" / "manifestation_invariance.ipynb"
    text = "".join("".join(c["source"]) for c in json.loads(chapter.read_text(encoding="utf-8"))["cells"])
    assert worth["midpoint_fixed"] < 10 < worth["euler_fixed_noskip"], "'it shares the confound'"
    assert max(loss, key=loss.get) == "euler_fixed_noskip" and loss["euler_fixed_noskip"] > 0, "'the most of any cell'"
    for words in ("there and small", "Refinement works the other way", "only the refined models' blocks learned",
                  "but under a point", "it shares the confound", "the most of any cell", "skip gains say the same"):
        assert words in " ".join(text.split()), words
