"""The study of the chapter *ContinuousNet* (cnet_lib.studies.continuousnet): θ(t) by basis, how far training moved
it, where the stages of a manifestation read it, the ResNet manifestation, a batch through the stitches, the
BatchNorm statistics per piece, the skip gains; its tables (each test builds a case whose numbers are known and
checks the printed cells, so that a table printing a wrong number, column or row fails) and figures; and the
chapter's prose: every number it states is glued from the cell that computes it, and what it says of the numbers
holds in the published run.  Tiny models, no data, except the last test (the shipped models)."""
from __future__ import annotations

import copy
import re
from types import SimpleNamespace

import pytest
import torch
from glued_prose import cells_ending_in_glue, code, glued_names, markdown, typed_numbers
from text_tables import cells, row_of, tiny

from cnet_lib.images.runs.theta_record import THETA_PARAM, theta_curve
from cnet_lib.core.models import ContinuousNet
from cnet_lib.core.odeblock import coefficient_key
from cnet_lib.runtime.rich_text import SERIES_COLORS
from cnet_lib.studies import continuousnet as CN

CHAPTER = "continuousnet"


def images(n=4, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 3, 8, 8, generator=g)


# ----------------------------------------------------------------------------- θ(t) and its bases
def test_theta_curves_and_bases():
    t, v = theta_curve([1.0, 3.0], "piecewise_constant")
    assert t == [0.0, 0.5, 0.5, 1.0] and v == [1.0, 1.0, 3.0, 3.0], "jumps drawn with both one-sided limits"
    t, v = theta_curve([0.0, 2.0], "piecewise_linear")
    assert v == [0.0, 2.0]
    curves = CN.theta_by_basis(tiny("rk4_classic", n_basis=3), block=1)
    assert set(curves) == {"piecewise_constant", "piecewise_linear", "legendre"}
    assert all(set(c) == {"untrained", "trained"} and len(c["trained"]) == 4 for c in curves.values())
    fig = CN.fig_theta_bases(curves)
    assert len(fig.data) == 2 + 3 * 4 * 2 and len(fig.layout.sliders[0].steps) == 3  # + 2 legend entries: solid, dashed
    shown = [t.name for t in fig.data if t.visible and t.showlegend is not False]
    assert shown == ["solid: trained", "dashed: untrained", "θ(0, 0, 1, 1)", "θ(0, 1, 1, 1)", "θ(1, 0, 1, 1)", "θ(1, 1, 1, 1)"], \
        "one legend entry per weight, and one per line style"

    fig = CN.fig_basis_functions(3)
    assert [s.label for s in fig.layout.sliders[0].steps] == ["piecewise constant", "piecewise linear (hats)",
                                                              "Legendre polynomials"]
    assert [list(t.y) for t in fig.data[:3]] == [[1, 1, 0, 0, 0, 0], [0, 0, 1, 1, 0, 0], [0, 0, 0, 0, 1, 1]]


def test_change_from_initial_per_piece():
    initial = tiny(n_basis=1, gain=0.0)
    trained = copy.deepcopy(initial).refine()  # M: 1 -> 2, θ(t) unchanged
    with torch.no_grad():
        trained.blocks[0].coeffs[coefficient_key(THETA_PARAM)][0].mul_(1.5)  # piece 1 moves by half its size
    rows = CN.change_from_initial(trained, initial, block=0)
    assert [r["piece"] for r in rows] == [1, 2] and [r["t"] for r in rows] == [0.25, 0.75]
    assert rows[0]["relative_change"] == pytest.approx(0.5, rel=1e-6) and rows[1]["relative_change"] == 0.0
    text = CN.change_from_initial_table(rows)
    assert text.splitlines()[0] == "OdeBlock 1: M = 1 at the start, M = 2 after training"
    assert row_of(text, "1") == ["1", "0.250", "0.500"] and row_of(text, "2") == ["2", "0.750", "0.000"]
    assert CN.facts(change=rows) == {"change_lo": "0.00", "change_hi": "0.50"}


# ----------------------------------------------------------------------------- manifestations
def test_manifestation_reads_and_stage_table():
    rows = CN.manifestation_reads([("euler", 8), ("rk4_classic", 1), ("rk4_38", 1), ("midpoint", 2)], 4)
    assert [(r["units"], r["pieces"]) for r in rows] == [(8, [0, 1, 2, 3]), (4, [0, 2, 3]), (4, [0, 1, 2, 3]), (4, [0, 1, 2, 3])]
    text = CN.manifestation_reads_table(rows)
    assert row_of(text, "rk4_classic") == ["rk4_classic", "1", "4", "1, 3, 4"]
    stages = CN.stage_table(CN.stage_rows("rk4_classic", 2, 4))
    lines = cells(stages)[2:]
    assert [ln[-1] for ln in lines] == ["θ̂_1", "θ̂_2", "θ̂_2", "θ̂_2", "θ̂_3", "θ̂_4", "θ̂_4", "θ̂_4"]
    assert [ln[2] for ln in lines] == ["0.000", "0.250", "0.250", "0.500", "0.500", "0.750", "0.750", "1.000"]
    hats = CN.stage_table(CN.stage_rows("midpoint", 1, 3, "piecewise_linear"))  # t = 1/2: halfway between nodes 0 and 2
    assert cells(hats)[-1][-1] == "θ̂_2" and cells(hats)[2][-1] == "θ̂_1"
    assert cells(CN.stage_table(CN.stage_rows("midpoint", 1, 2, "piecewise_linear")))[-1][-1] == "0.5 θ̂_1 + 0.5 θ̂_2"


def test_stage_rows_read_exact_pieces():
    rows = CN.stage_rows("rk4_classic", 1, 2)
    assert [r["pieces"][0][0] for r in rows] == [0, 1, 1, 1]  # t = 0, 1/2, 1/2, 1 (right limits; last: left of 1)
    rows = CN.stage_rows("euler", 3, 3)
    assert [r["pieces"] for r in rows] == [((0, 1.0),), ((1, 1.0),), ((2, 1.0),)]


def test_fig_manifestations():
    fig = CN.fig_manifestations(2, [("euler", 2), ("rk4_classic", 1)])
    assert [len(t.x) for t in fig.data] == [2, 4, 1, 1]  # + one legend entry per piece
    assert [t.name for t in fig.data if t.showlegend is not False] == ["θ̂_1", "θ̂_2"]
    assert [c for c in fig.data[1].marker.color] == [SERIES_COLORS[b] for b in (0, 1, 1, 1)]


def test_the_chapter_s_claims_on_evaluations_and_pieces():
    """"classic RK4 with N_t = M/2 costs twice the evaluations of the ResNet graph and reads every piece; with N_t = 1
    it skips pieces; the 3/8 rule ... touches every piece even at N_t = 1" (the same in every preset: M = 4)."""
    assert "costs twice\nthe evaluations of the ResNet graph" in markdown(CHAPTER)
    rows = {(r["scheme"], r["n_steps"]): r for r in CN.manifestation_reads(
        [("euler", 4), ("rk4_classic", 2), ("rk4_classic", 1), ("rk4_38", 1)], 4)}
    assert rows[("rk4_classic", 2)]["units"] == 2 * rows[("euler", 4)]["units"]
    assert sorted(rows[("rk4_classic", 2)]["pieces"]) == [0, 1, 2, 3]
    assert len(set(rows[("rk4_classic", 1)]["pieces"])) < 4 and sorted(set(rows[("rk4_38", 1)]["pieces"])) == [0, 1, 2, 3]


def test_resnet_manifestation():
    x = images()
    euler = tiny("euler", n_basis=2)
    res = CN.resnet_manifestation(euler, x)
    assert res["identical"] and res["max_difference"] == 0.0 and res["max_logit_change"] == 0.0
    assert res["units_per_stage"] == [2, 2, 2] and res["steps"] == [0.5, 0.5, 0.5] and res["n_images"] == 4
    text = CN.word_resnet_manifestation(res, "Euler run")
    assert "identical logits on 4 held-out images: True (largest difference 0)" in text
    assert "own graph against" not in text, "the Euler, N_t = M graph is the model's own: nothing to compare"
    assert CN.facts(resnet_euler=res) == {"n_images": "4", "euler_agreement": "the same logits, bit for bit"}

    rk4 = tiny("rk4_classic", n_basis=2, gain=2.0)
    res = CN.resnet_manifestation(rk4, x)
    with torch.no_grad():
        own = rk4(x)
        with rk4.manifested("euler", 2):
            other = rk4(x)
    assert res["identical"] and rk4.manifestation == [("rk4_classic", 2)] * 3, "the model is left on its own graph"
    assert res["max_logit_change"] == pytest.approx((own - other).abs().max().item()) and res["max_logit_change"] > 0
    assert res["same_class"] == pytest.approx((own.argmax(1) == other.argmax(1)).double().mean().item())
    text = CN.word_resnet_manifestation(res, "RK4 run")
    assert f"largest logit change {res['max_logit_change']:.3f}; same predicted class on {100 * res['same_class']:.1f}% of the 4 images" in text
    said = CN.facts(resnet_rk4=res)
    assert said == {"rk4_logit_change": f"{res['max_logit_change']:.2f}", "rk4_same_class": f"{100 * res['same_class']:.1f}%"}


# ----------------------------------------------------------------------------- a batch through the model
def test_feature_shapes():
    model = tiny("midpoint", n_basis=2, epsilon_stitch=0.5)
    rows = CN.feature_shapes(model, images(n=3))
    assert [(r["layer"], r["shape"]) for r in rows] == [
        ("input", (3, 3, 8, 8)), ("stem", (3, 2, 8, 8)), ("OdeBlock 1", (3, 2, 8, 8)), ("stitch 1", (3, 4, 4, 4)),
        ("OdeBlock 2", (3, 4, 4, 4)), ("stitch 2", (3, 4, 2, 2)), ("OdeBlock 3", (3, 4, 2, 2))]
    text = CN.feature_shapes_table(rows)
    assert row_of(text, "stitch 2") == ["stitch 2", "(3, 4, 2, 2)", "ε_stitch = 0.5"]
    assert row_of(text, "OdeBlock 1") == ["OdeBlock 1", "(3, 2, 8, 8)", "midpoint, N_t = 2"]


def test_bn_statistics_per_piece():
    block = tiny(n_basis=2).blocks[1]  # 4 channels
    with torch.no_grad():
        block.running_stats("bn1.running_mean").copy_(torch.tensor([[0.0, 1.0, 2.0, 3.0], [-1.0, -1.0, -1.0, -2.0]]))
        block.running_stats("bn2.running_var").copy_(torch.tensor([[2.0] * 4, [0.5] * 4]))
    rows = CN.bn_statistics(block)
    assert [r["piece"] for r in rows] == [1, 2] and rows[0]["channels"] == 4
    assert rows[0]["bn1.running_mean"] == 1.5 and rows[1]["bn1.running_mean"] == -1.25
    assert rows[1]["bn2.running_var"] == 0.5 and rows[0]["bn1.running_var"] == 1.0
    text = CN.bn_statistics_table(rows)
    assert cells(text)[0] == ["piece", "bn1 running mean", "bn1 running var", "bn2 running mean", "bn2 running var"]
    assert row_of(text, "1") == ["1", "+1.5000", "1.0000", "+0.0000", "2.0000"]
    assert row_of(text, "2") == ["2", "-1.2500", "1.0000", "+0.0000", "0.5000"]
    assert text.splitlines()[-1] == "(averages over the 4 channels; each statistic is 2 pieces × 4 channels)"


def test_skip_gains_and_identity_blocks():
    x = images()
    fresh = tiny(n_basis=2, gain=0.0)
    assert CN.blocks_are_identity(fresh, x) == [True, True, True]
    model = tiny(n_basis=2, gain=0.0, epsilon=0.5)
    with torch.no_grad():
        model.blocks[1].skip_gain.copy_(torch.tensor([0.25, -0.5]))
    assert CN.blocks_are_identity(model, x) == [True, False, True]
    rows = CN.skip_gains(model)
    assert [r["gains"] for r in rows] == [[0.0, 0.0], [0.125, -0.25], [0.0, 0.0]], "ε s(t), not s(t)"
    text = CN.skip_gains_table(rows, CN.blocks_are_identity(fresh, x))
    assert text.splitlines()[0] == "untrained model: each OdeBlock's output equals its input exactly: [True, True, True]"
    assert row_of(text, "2") == ["2", "2", "+0.1250, -0.2500"]
    no_init = ContinuousNet(channels=(2, 4, 4), n_basis=1, skip_init=False)
    assert CN.skip_gains_table(CN.skip_gains(no_init)).splitlines()[-1].split()[-1] == "-"
    said = CN.facts(gains=rows)
    assert said["gains_2"] == "−0.25 to 0.12" and said["gains_1"] == "0.00 to 0.00"
    assert said["gains"] == ("0.00 to 0.00 in the first block, −0.25 to 0.12 in the second block and 0.00 to 0.00 in "
                             "the third block")


# ----------------------------------------------------------------------------- the chapter: numbers glued
def _fake_runs(shipped: bool) -> dict:
    """Two runs as the chapter's cells see them: a model, a history, a configuration, no folder."""
    def run(name, acc, model):
        cfg = SimpleNamespace(seed=0, preset="gpu", run_name=name)
        return SimpleNamespace(name=name, model=model, history=[{"test_acc": 0.5, "train_seconds": 30.0}] * 3
                               + [{"test_acc": acc, "train_seconds": 36.0}], config=cfg, out_dir="/nonexistent",
                               shipped=shipped, final_accuracy=acc)
    return {"rk4_refined": run("rk4_refined", 0.8228, tiny("rk4_classic")), "euler_fixed": run("euler_fixed", 0.8192, tiny())}


def test_model_numbers_and_their_words():
    runs = _fake_runs(shipped=False)
    numbers = CN.model_numbers(runs)
    assert numbers["parameters"]["rk4_refined"] == runs["rk4_refined"].model.n_parameters()
    assert numbers["epochs"] == {"rk4_refined": 4, "euler_fixed": 4}
    said = CN.facts(models=numbers)
    assert said["acc_rk4"] == "82.3%" and said["acc_euler"] == "81.9%" and said["epochs"] == "4"
    assert said["params"] == f"{runs['euler_fixed'].model.n_parameters():,}", "one count when the two share it"
    assert said["trained_where"] == ("The two models were trained in this session, on this machine, in 2.1 min (RK4) "
                                     "and 2.1 min (Euler), on this session's data (training seed 0).")
    numbers["parameters"]["euler_fixed"] += 1
    assert " (RK4) and " in CN.facts(models=numbers)["params"]


def test_the_prose_types_no_result_and_glues_what_it_quotes():
    """Every number the prose states is glued from a cell ({glue:md}`name`) or is a setting; the names it quotes are
    the ones the study's facts give, and no cell ends with the dict glue_all returns."""
    assert not typed_numbers(CHAPTER), f"numbers typed in the prose, not glued: {typed_numbers(CHAPTER)}"
    assert "glue_all(continuousnet.facts(" in code(CHAPTER) and "book's run" not in markdown(CHAPTER)
    assert not cells_ending_in_glue(CHAPTER)
    x = images()
    given = CN.facts(models=CN.model_numbers(_fake_runs(shipped=False)),
                     change=CN.change_from_initial(tiny(n_basis=2), tiny(n_basis=1), block=0),
                     resnet_euler=CN.resnet_manifestation(tiny(), x),
                     resnet_rk4=CN.resnet_manifestation(tiny("rk4_classic"), x), gains=CN.skip_gains(tiny()))
    quoted = glued_names(CHAPTER)
    assert quoted and quoted <= set(given), f"glued nowhere: {sorted(quoted - set(given))}"
    assert all(isinstance(v, str) and v for v in given.values())
    with pytest.raises(TypeError, match="knows"):
        CN.facts(gain=[])


@pytest.mark.slow
def test_what_the_prose_says_holds_in_the_published_run(tmp_path):
    """The prose's words on the published book's models hold for their numbers, computed as the chapter computes them
    from the models that ship with the book: training moved θ(t) farther than its own size, the Euler graph is the
    ResNet bit for bit, the RK4 model's blocks grew far from the identity (every gain at least 1 in size), and the
    margin says where they were trained."""
    from cnet_lib import images as IM
    from cnet_lib.book.project import PUBLISHED_PRESET
    from smoke_data import smoke_settings

    settings = smoke_settings(preset=PUBLISHED_PRESET, runs_dir=tmp_path)
    runs = IM.trained_runs(settings, verbose=False)
    rk4, euler = runs["rk4_refined"], runs["euler_fixed"]
    change = CN.change_from_initial(rk4.model, rk4.initial_model(), block=0)
    assert min(r["relative_change"] for r in change) > 1, "far from where it started: farther than its own size"
    x = IM.sample_batch(euler.config, settings, n=16)
    assert CN.resnet_manifestation(euler.model, x)["identical"]
    gains = [g for r in CN.skip_gains(rk4.model) for g in r["gains"]]
    assert min(abs(g) for g in gains) >= 1, "grew far from the identity"
    said = CN.facts(models=CN.model_numbers(runs))
    assert said["trained_where"].startswith("The two models ship with the book: they were trained on an NVIDIA H100")
    text = re.sub(r"\s+", " ", markdown(CHAPTER))
    for words in ("far from where it started", "They do:", "grew far from the identity"):
        assert words in text, words
