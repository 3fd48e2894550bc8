"""cnet_lib.report (run_report, theta_report) and the θ(t) reports of cnet_lib.images.studies.theta that the image chapters print:
each test builds a case whose numbers are known and checks the printed cells, so that a table
printing a wrong number, a wrong column or a wrong row fails.  Tiny models, no data: seconds."""
from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from cnet_lib.core.models import ContinuousNet
from cnet_lib.core.odeblock import coefficient_key
from cnet_lib.images.runs import study_run as SR
from cnet_lib.images.training import train_state as TS
from cnet_lib.report import run_report as RR
from cnet_lib.report import theta_report as TB
from cnet_lib.images.studies import theta as TH
from cnet_lib.images.runs.image_presets import image_runs


def cells(text: str) -> list[list[str]]:
    """The cells of each line of a text table (columns are separated by two or more spaces)."""
    import re

    return [[c for c in re.split(r"\s{2,}", line.strip())] for line in text.splitlines() if line.strip()]


def row_of(text: str, first: str) -> list[str]:
    """The cells of the table line whose first cell is ``first``."""
    found = [c for c in cells(text) if c[0] == first]
    assert len(found) == 1, f"no single line starting with {first!r} in:\n{text}"
    return found[0]


def tiny(scheme="euler", n_basis=2, gain=0.5, seed=0, **kw) -> ContinuousNet:
    torch.manual_seed(seed)
    m = ContinuousNet(channels=(2, 4, 4), n_basis=n_basis, scheme=scheme, **kw).eval()
    with torch.no_grad():
        for b in m.blocks:
            b.skip_gain.fill_(gain)
    return m


def images(n=4, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 3, 8, 8, generator=g)


def history(rows):
    """History rows as train() writes them, from (epoch, N_t = M, refined, seconds, loss, acc)."""
    return [{"epoch": e, "n_steps": [n] * 3, "n_basis": [n] * 3, "n_parameters": 100 * n, "lr": 0.1, "refined": r,
             "train_seconds": s, "train_loss": loss, "test_acc": acc} for e, n, r, s, loss, acc in rows]


def study_run(tmp_path: Path, name: str, label: str, hist, env=None, model=None, config=None):
    out = tmp_path / name
    out.mkdir()
    if env is not None:
        (out / TS.RESULTS).write_text(json.dumps({"environment": env, "epochs_done": len(hist), "history": hist}))
    return SimpleNamespace(name=name, label=label, history=hist, out_dir=out, model=model, config=config,
                           final_accuracy=hist[-1]["test_acc"])


# ----------------------------------------------------------------------------- runs and training
def test_format_configs_one_column_per_run():
    text = RR.configs_table(image_runs("smoke"))
    head = cells(text)[0]
    assert head == ["RK4-trained (refined)", "Euler-trained (fixed depth)"]
    assert row_of(text, "N_t = M")[1:] == ["1 -> 2", "2 -> 2"]
    assert row_of(text, "refined after epochs")[1:] == ["1", "never"]
    assert row_of(text, "SGD learning rate")[1:] == ["0.05 (constant)"] * 2
    assert row_of(text, "training images")[1:] == ["256", "256"]
    assert row_of(text, "scheme")[1:] == ["rk4_classic", "euler"]


def test_format_runs_reads_the_trained_models(tmp_path):
    rk4, euler = tiny("rk4_classic", n_basis=[2, 2, 4]), tiny("euler", n_basis=2)
    runs = {
        "rk4_refined": study_run(tmp_path, "a", "RK4 run", history([(1, 1, False, 1.0, 2.0, 0.25), (2, 2, True, 2.0, 1.5, 0.3456)]),
                                 model=rk4, config=SimpleNamespace(channels=(2, 4, 4), n_train=None)),
        "euler_fixed": study_run(tmp_path, "b", "Euler run", history([(1, 2, False, 1.0, 2.0, 0.5)]),
                                 model=euler, config=SimpleNamespace(channels=(2, 4, 4), n_train=300)),
    }
    text = RR.runs_table(runs)
    assert row_of(text, "M (pieces per block)")[1:] == ["[2, 2, 4]", "2"], "a per-block M is shown as a list"
    assert row_of(text, "parameters")[1:] == [str(rk4.n_parameters()), str(euler.n_parameters())]
    assert row_of(text, "held-out accuracy")[1:] == ["0.346", "0.500"]
    assert row_of(text, "training images")[1:] == ["all", "300"]
    assert row_of(text, "epochs")[1:] == ["2", "1"]
    assert row_of(text, "scheme")[1:] == ["rk4_classic", "euler"]


def test_training_time_and_histories(tmp_path):
    env = {"device": "cpu", "device_name": "TestCPU", "cpu_count": 2, "platform": "Linux-x86_64"}
    refined = study_run(tmp_path, "a", "RK4 run", history([(1, 1, False, 1.25, 2.3456, 0.125), (2, 2, True, 2.5, 2.0, 0.25)]), env)
    fixed = study_run(tmp_path, "b", "Euler run", history([(1, 4, False, 100.0, 2.0, 0.5), (2, 4, False, 50.0, 1.0, 0.75)]))
    assert SR.training_time(refined) == {"epochs": 2, "train_seconds": 3.75, "device": "cpu", "device_name": "TestCPU",
                                         "cpu_count": 2}
    assert SR.training_time(fixed)["device"] is None, "no results file: the machine is unknown"
    text = RR.histories_table({"rk4_refined": refined, "euler_fixed": fixed})
    first, second = text.split("\n\n")
    assert first.splitlines()[0] == "RK4 run" and second.splitlines()[0] == "Euler run"
    assert row_of(first, "1") == ["1", "1", "1", "100", "0.1", "2.346", "0.1250", "1.25"]
    assert row_of(first, "2")[-1] == "refined before this epoch" and row_of(first, "2")[-2] == "2.50"
    assert first.splitlines()[-1] == "2 epochs, 3.8 s of training (evaluation excluded) on a 2-core CPU", \
        "the machine as a reader names it, not by its brand (issue 30: 'computed on AMD EPYC')"
    assert "refined" not in second and "note" not in second, "no note column without a refinement"
    assert second.splitlines()[-1] == "2 epochs, 150.0 s (2.5 min) of training (evaluation excluded)"


# ----------------------------------------------------------------------------- θ(t) reports
def test_change_from_initial_per_piece():
    initial = tiny(n_basis=1, gain=0.0)
    trained = copy.deepcopy(initial).refine()  # M: 1 -> 2, θ(t) unchanged
    with torch.no_grad():
        trained.blocks[0].coeffs[coefficient_key(TH.THETA_PARAM)][0].mul_(1.5)  # piece 1 moves by half its size
    rows = TH.change_from_initial(trained, initial, block=0)
    assert [r["piece"] for r in rows] == [1, 2] and [r["t"] for r in rows] == [0.25, 0.75]
    assert rows[0]["relative_change"] == pytest.approx(0.5, rel=1e-6) and rows[1]["relative_change"] == 0.0
    text = TB.change_from_initial_table(rows)
    assert text.splitlines()[0] == "OdeBlock 1: M = 1 at the start, M = 2 after training"
    assert row_of(text, "1") == ["1", "0.250", "0.500"] and row_of(text, "2") == ["2", "0.750", "0.000"]


def test_change_per_epoch():
    def snap(epoch, coeffs, refined=False):
        return {"epoch": epoch, "refined": refined,
                "blocks": [{"n_basis": len(coeffs), "basis": "piecewise_constant", "entries": {"(0, 0, 1, 1)": coeffs}}]}

    snaps = [snap(0, [1.0]), snap(1, [1.25]), snap(2, [1.25, 3.25], refined=True)]
    assert TH.largest_change(snaps[0]["blocks"][0], snaps[1]["blocks"][0]) == pytest.approx(0.25)
    rows = TH.change_per_epoch(snaps)
    assert [(r["epoch"], r["n_basis_before"], r["n_basis_after"], r["refined"]) for r in rows] == [(1, 1, 1, False), (2, 1, 2, True)]
    assert [r["largest_change"] for r in rows] == pytest.approx([0.25, 2.0])
    text = TB.change_per_epoch_table(rows)
    assert row_of(text, "1") == ["1", "1", "1", "0.2500"]
    assert row_of(text, "2") == ["2", "1", "2", "2.0000", "refined before this epoch"]


def test_manifestation_reads_and_stage_table():
    rows = TH.manifestation_reads([("euler", 8), ("rk4_classic", 1), ("rk4_38", 1), ("midpoint", 2)], 4)
    assert [(r["units"], r["pieces"]) for r in rows] == [(8, [0, 1, 2, 3]), (4, [0, 2, 3]), (4, [0, 1, 2, 3]), (4, [0, 1, 2, 3])]
    text = TB.manifestation_reads_table(rows)
    assert row_of(text, "rk4_classic") == ["rk4_classic", "1", "4", "1, 3, 4"]
    stages = TB.stage_table(TH.stage_rows("rk4_classic", 2, 4))
    lines = cells(stages)[2:]
    assert [ln[-1] for ln in lines] == ["θ̂_1", "θ̂_2", "θ̂_2", "θ̂_2", "θ̂_3", "θ̂_4", "θ̂_4", "θ̂_4"]
    assert [ln[2] for ln in lines] == ["0.000", "0.250", "0.250", "0.500", "0.500", "0.750", "0.750", "1.000"]
    hats = TB.stage_table(TH.stage_rows("midpoint", 1, 3, "piecewise_linear"))  # t = 1/2: halfway between nodes 0 and 2
    assert cells(hats)[-1][-1] == "θ̂_2" and cells(hats)[2][-1] == "θ̂_1"
    assert cells(TB.stage_table(TH.stage_rows("midpoint", 1, 2, "piecewise_linear")))[-1][-1] == "0.5 θ̂_1 + 0.5 θ̂_2"


def test_resnet_manifestation():
    x = images()
    euler = tiny("euler", n_basis=2)
    res = TH.resnet_manifestation(euler, x)
    assert res["identical"] and res["max_difference"] == 0.0 and res["max_logit_change"] == 0.0
    assert res["units_per_stage"] == [2, 2, 2] and res["steps"] == [0.5, 0.5, 0.5] and res["n_images"] == 4
    text = TB.word_resnet_manifestation(res, "Euler run")
    assert "identical logits on 4 held-out images: True (largest difference 0.0e+00)" in text
    assert "own graph against" not in text, "the Euler, N_t = M graph is the model's own: nothing to compare"

    rk4 = tiny("rk4_classic", n_basis=2, gain=2.0)
    res = TH.resnet_manifestation(rk4, x)
    with torch.no_grad():
        own = rk4(x)
        with rk4.manifested("euler", 2):
            other = rk4(x)
    assert res["identical"] and rk4.manifestation == [("rk4_classic", 2)] * 3, "the model is left on its own graph"
    assert res["max_logit_change"] == pytest.approx((own - other).abs().max().item()) and res["max_logit_change"] > 0
    assert res["same_class"] == pytest.approx((own.argmax(1) == other.argmax(1)).double().mean().item())
    text = TB.word_resnet_manifestation(res, "RK4 run")
    assert f"largest logit change {res['max_logit_change']:.3f}; same predicted class on {100 * res['same_class']:.1f}% of the 4 images" in text


def test_refinement_check():
    model = tiny("rk4_classic", n_basis=1, gain=0.5)
    x = images()
    res = TH.refinement_check(model, x)
    refined = copy.deepcopy(model).refine()
    with torch.no_grad():
        change = (model(x) - refined(x)).abs().max().item()
    assert res["n_basis"] == (1, 2) and res["n_steps"] == (1, 2)
    assert res["n_parameters"] == (model.n_parameters(), refined.n_parameters())
    assert res["theta_identical"] and res["old_graph_identical"]
    assert res["new_graph_max_change"] == pytest.approx(change) and change > 0
    assert model.blocks[0].n_basis == 1, "the model itself is not refined"
    text = TB.word_refinement_check(res).splitlines()
    assert text[0] == f"M: 1 -> 2, N_t: 1 -> 2; parameters: {model.n_parameters()} -> {refined.n_parameters()}"
    assert text[1] == "θ(t) of every weight identical at 16 times: True"
    assert text[2] == "refined model on the old graph (N_t = 1): same logits bit for bit: True"
    assert text[3] == f"refined model on the new graph (N_t = 2): largest logit change {change:.2e}"


def test_feature_shapes():
    model = tiny("midpoint", n_basis=2, epsilon_stitch=0.5)
    rows = TH.feature_shapes(model, images(n=3))
    assert [(r["layer"], r["shape"]) for r in rows] == [
        ("input", (3, 3, 8, 8)), ("stem", (3, 2, 8, 8)), ("OdeBlock 1", (3, 2, 8, 8)), ("stitch 1", (3, 4, 4, 4)),
        ("OdeBlock 2", (3, 4, 4, 4)), ("stitch 2", (3, 4, 2, 2)), ("OdeBlock 3", (3, 4, 2, 2))]
    text = TB.feature_shapes_table(rows)
    assert row_of(text, "stitch 2") == ["stitch 2", "(3, 4, 2, 2)", "ε_stitch = 0.5"]
    assert row_of(text, "OdeBlock 1") == ["OdeBlock 1", "(3, 2, 8, 8)", "midpoint, N_t = 2"]


def test_bn_statistics_per_piece():
    block = tiny(n_basis=2).blocks[1]  # 4 channels
    with torch.no_grad():
        block.running_stats("bn1.running_mean").copy_(torch.tensor([[0.0, 1.0, 2.0, 3.0], [-1.0, -1.0, -1.0, -2.0]]))
        block.running_stats("bn2.running_var").copy_(torch.tensor([[2.0] * 4, [0.5] * 4]))
    rows = TH.bn_statistics(block)
    assert [r["piece"] for r in rows] == [1, 2] and rows[0]["channels"] == 4
    assert rows[0]["bn1.running_mean"] == 1.5 and rows[1]["bn1.running_mean"] == -1.25
    assert rows[1]["bn2.running_var"] == 0.5 and rows[0]["bn1.running_var"] == 1.0
    text = TB.bn_statistics_table(rows)
    assert cells(text)[0] == ["piece", "bn1 running mean", "bn1 running var", "bn2 running mean", "bn2 running var"]
    assert row_of(text, "1") == ["1", "+1.5000", "1.0000", "+0.0000", "2.0000"]
    assert row_of(text, "2") == ["2", "-1.2500", "1.0000", "+0.0000", "0.5000"]
    assert text.splitlines()[-1] == "(averages over the 4 channels; each statistic is 2 pieces × 4 channels)"


def test_skip_gains_and_identity_blocks():
    x = images()
    fresh = tiny(n_basis=2, gain=0.0)
    assert TH.blocks_are_identity(fresh, x) == [True, True, True]
    model = tiny(n_basis=2, gain=0.0, epsilon=0.5)
    with torch.no_grad():
        model.blocks[1].skip_gain.copy_(torch.tensor([0.25, -0.5]))
    assert TH.blocks_are_identity(model, x) == [True, False, True]
    rows = TH.skip_gains(model)
    assert [r["gains"] for r in rows] == [[0.0, 0.0], [0.125, -0.25], [0.0, 0.0]], "ε s(t), not s(t)"
    text = TB.skip_gains_table(rows, TH.blocks_are_identity(fresh, x))
    assert text.splitlines()[0] == "untrained model: each OdeBlock's output equals its input exactly: [True, True, True]"
    assert row_of(text, "2") == ["2", "2", "+0.1250, -0.2500"]
    no_init = ContinuousNet(channels=(2, 4, 4), n_basis=1, skip_init=False)
    assert TB.skip_gains_table(TH.skip_gains(no_init)).splitlines()[-1].split()[-1] == "-"
