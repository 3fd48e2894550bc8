"""The study of the chapter *Refinement training* (cnet_lib.studies.refinement): what a refinement keeps, the runs'
configurations and training histories, θ(t) epoch by epoch, and refinement's training time measured fairly (the
schedule, the speed-up from steps timed in turn, the sentence that compares it with the ideal, the run's own record,
the two whole runs); their tables and figures; and the chapter's prose: every number it states is glued from the cell
that computes it, and what it says of the numbers holds in the published run.  Tiny models, no data, except the
published run's test (the shipped models)."""
from __future__ import annotations

import copy
import dataclasses
import json
import re
import types
from pathlib import Path

import pytest
import torch
from glued_prose import ROOT, cells_ending_in_glue, code, glued_names, markdown, typed_numbers
from text_tables import cells, row_of

from cnet_lib.book.paper_claims import PAPER_SENTENCES, paper_schedule
from cnet_lib.core.models import ContinuousNet
from cnet_lib.images.training import train_state as TS
from cnet_lib.runtime.rich_text import run_color, sci
from cnet_lib.studies.refinement import show as SH, study as RT
from cnet_lib.studies import refinement as RF
from cnet_lib import images

CHAPTER = "refinement_training"


def history(rows):
    """History rows as train() writes them, from (epoch, N_t = M, refined, seconds, loss, acc[, lr])."""
    return [{"epoch": e, "n_steps": [n] * 3, "n_basis": [n] * 3, "n_parameters": 100 * n, "lr": (r6[0] if r6 else 0.1),
             "refined": r, "train_seconds": s, "train_loss": loss, "test_acc": acc}
            for e, n, r, s, loss, acc, *r6 in rows]


def study_run(tmp_path: Path, name: str, label: str, hist, env=None, config=None, snapshots=()):
    out = tmp_path / name
    out.mkdir()
    if env is not None:
        (out / TS.RESULTS).write_text(json.dumps({"environment": env, "epochs_done": len(hist), "history": hist}))
    return types.SimpleNamespace(name=name, label=label, history=hist, out_dir=out, config=config, shipped=False,
                                 snapshots=list(snapshots), final_accuracy=hist[-1]["test_acc"])


def snap(epoch, coeffs, refined=False, gain=None):
    """A θ snapshot of one block whose one recorded weight has the coefficients ``coeffs``."""
    return {"epoch": epoch, "refined": refined,
            "blocks": [{"n_basis": len(coeffs), "basis": "piecewise_constant", "entries": {"(0, 0, 1, 1)": coeffs},
                        "gain": gain}]}


def _timing(per_round, schedule):
    """A timing as time_refinement returns it, from given seconds per step of every round."""
    return RT._summary(images.image_runs("smoke")["rk4_refined"], torch.device("cpu"), schedule, per_round,
                       {n: 1 for n in per_round}, len(next(iter(per_round.values()))), 3)


# ----------------------------------------------------------------------------- the runs and their training
def test_configs_one_column_per_run():
    text = RF.configs_table(images.image_runs("smoke"))
    head = cells(text)[0]
    assert head == ["RK4-trained (refined)", "Euler-trained (fixed depth)"]
    assert row_of(text, "N_t = M")[1:] == ["1 -> 2", "2 -> 2"]
    assert row_of(text, "refined after epochs")[1:] == ["1", "never"]
    assert row_of(text, "SGD learning rate")[1:] == ["0.05 (constant)"] * 2
    assert row_of(text, "training images")[1:] == ["256", "256"]
    assert row_of(text, "scheme")[1:] == ["rk4_classic", "euler"]


def test_histories_say_the_training_time_not_the_machine(tmp_path):
    env = {"device": "cpu", "device_name": "TestCPU", "cpu_count": 2, "platform": "Linux-x86_64"}
    refined = study_run(tmp_path, "a", "RK4 run", history([(1, 1, False, 1.25, 2.3456, 0.125), (2, 2, True, 2.5, 2.0, 0.25)]), env)
    fixed = study_run(tmp_path, "b", "Euler run", history([(1, 4, False, 100.0, 2.0, 0.5), (2, 4, False, 50.0, 1.0, 0.75)]))
    text = RF.histories_table({"rk4_refined": refined, "euler_fixed": fixed})
    first, second = text.split("\n\n")
    assert first.splitlines()[0] == "RK4 run" and second.splitlines()[0] == "Euler run"
    assert row_of(first, "1") == ["1", "1", "1", "100", "0.1", "2.346", "0.1250", "1.25"]
    assert row_of(first, "2")[-1] == "refined before this epoch" and row_of(first, "2")[-2] == "2.50"
    assert first.splitlines()[-1] == "2 epochs, 3.8 s of training (evaluation excluded)", \
        "where it was trained is the chapter's margin note (issue 53), not the cell's output"
    assert "refined" not in second and "note" not in second, "no note column without a refinement"
    assert second.splitlines()[-1] == "2 epochs, 150.0 s (2.5 min) of training (evaluation excluded)"


def test_training_curves(tmp_path):
    runs = {"rk4_refined": study_run(tmp_path, "a", "RK4 run", history([(1, 1, False, 1.0, 2.0, 0.3), (2, 2, True, 2.0, 1.5, 0.4)])),
            "euler_fixed": study_run(tmp_path, "b", "Euler run", history([(1, 2, False, 2.0, 2.0, 0.3), (2, 2, False, 2.0, 1.4, 0.5)]))}
    fig = RF.fig_training_curves(runs)
    assert len(fig.data) == 2 * 3 and {t.name for t in fig.data} == {r.label for r in runs.values()}
    assert {t.name: t.line.color for t in fig.data} == {r.label: run_color(n) for n, r in runs.items()}, "colours of the vocabulary"
    assert list(fig.data[0].y) == [30.0, 40.0], "accuracy in percent, the prose's unit"
    assert any(s.line.dash == "dot" for s in fig.layout.shapes), "the refinement epoch is marked"
    assert fig.layout.legend.y < 0 and fig.layout.legend.yanchor == "top", "the legend sits below the panels"
    assert "refinement before epoch 2" in fig.layout.title.text and "<br>" not in fig.layout.title.text


# ----------------------------------------------------------------------------- what a refinement keeps; θ(t) per epoch
def test_refinement_check():
    torch.manual_seed(0)
    model = ContinuousNet(channels=(2, 4, 4), n_basis=1, scheme="rk4_classic").eval()
    with torch.no_grad():
        for b in model.blocks:
            b.skip_gain.fill_(0.5)
    x = torch.randn(4, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    res = RF.refinement_check(model, x)
    refined = copy.deepcopy(model).refine()
    with torch.no_grad():
        change = (model(x) - refined(x)).abs().max().item()
    assert res["n_basis"] == (1, 2) and res["n_steps"] == (1, 2)
    assert res["n_parameters"] == (model.n_parameters(), refined.n_parameters())
    assert res["theta_identical"] and res["old_graph_identical"]
    assert res["new_graph_max_change"] == pytest.approx(change) and change > 0
    assert model.blocks[0].n_basis == 1, "the model itself is not refined"
    text = RF.word_refinement_check(res).splitlines()
    assert text[0] == f"M: 1 -> 2, N_t: 1 -> 2; parameters: {model.n_parameters()} -> {refined.n_parameters()}"
    assert text[1] == "θ(t) of every weight identical at 16 times: True"
    assert text[2] == "refined model on the old graph (N_t = 1): same logits bit for bit: True"
    assert text[3] == f"refined model on the new graph (N_t = 2): largest logit change {sci(change, 2)}"
    assert RF.facts(check=res) == {"check_times": "16", "check_change": sci(change), "check_kept": "agree bit for bit"}
    assert RF.facts(check={**res, "old_graph_identical": False})["check_kept"] == "do not agree bit for bit"


def test_change_per_epoch_and_its_words():
    snaps = [snap(0, [1.0]), snap(1, [1.25]), snap(2, [1.25, 3.25], refined=True), snap(3, [1.25, 3.5])]
    assert RT.largest_change(snaps[0]["blocks"][0], snaps[1]["blocks"][0]) == pytest.approx(0.25)
    rows = RF.change_per_epoch(snaps)
    assert [(r["epoch"], r["n_basis_before"], r["n_basis_after"], r["refined"]) for r in rows] == [
        (1, 1, 1, False), (2, 1, 2, True), (3, 2, 2, False)]
    assert [r["largest_change"] for r in rows] == pytest.approx([0.25, 2.0, 0.25])
    text = RF.change_per_epoch_table(rows)
    assert row_of(text, "1") == ["1", "1", "1", "0.2500"]
    assert row_of(text, "2") == ["2", "1", "2", "2.0000", "refined before this epoch"]
    hist = history([(1, 1, False, 1.0, 2.0, 0.3, 0.1), (2, 2, True, 1.0, 2.0, 0.3, 0.1), (3, 2, False, 1.0, 2.0, 0.3, 0.01)])
    said = RF.facts(epochs=rows, history=hist)
    assert said == {"refined_change": "2.0000", "others_lo": "0.2500", "others_hi": "0.2500",
                    "after_decay": "once the learning rate falls, from epoch 3 on, no epoch moves it by more than 0.2500"}
    flat = history([(e, 1, False, 1.0, 2.0, 0.3) for e in (1, 2, 3)])
    assert RF.facts(epochs=rows, history=flat)["after_decay"] == "the learning rate never falls in this run"


def test_theta_refinement_figure():
    snaps = [snap(0, [1.0], gain=[0.0]), snap(1, [1.25], gain=[0.5]), snap(2, [1.25, 1.5], refined=True, gain=[0.5, 0.6])]
    fig = RF.fig_theta_refinement(snaps)
    assert len(fig.layout.sliders[0].steps) == 3
    assert fig.layout.sliders[0].steps[2].label == "epoch 2, M=2 (refined)"
    last = [t.name for t in fig.data if t.visible and t.showlegend is not False]
    assert last == ["solid: after the epoch", "dashed: the epoch before", "θ(0, 0, 1, 1)", "s(t), skip gain (lower panel)"], \
        "the dashed curves of the epoch before share their weight's legend entry"


# ----------------------------------------------------------------------------- what refinement saves
def test_schedule_follows_the_refinements():
    assert RF.schedule_n_steps(images.image_runs("cpu")["rk4_refined"]) == [1, 2, 2, 4, 4, 4]
    assert RF.schedule_n_steps(images.image_runs("cpu")["euler_fixed"]) == [4] * 6
    assert RF.schedule_n_steps(images.image_runs("paper")["rk4_refined"])[-1] == 32
    assert RF.schedule_ideal([1, 2, 2, 4, 4, 4]) == pytest.approx(24 / 17)


def test_refinement_cost():
    hist = [{"n_steps": [n] * 3, "train_seconds": s} for n, s in ((1, 1.0), (2, 2.0), (4, 4.0), (4, 4.2))]
    c = RF.refinement_cost(hist)
    assert c["sum_n_steps"] == 11 and c["ideal"] == pytest.approx(16 / 11)
    assert c["seconds_per_epoch_at_final"] == pytest.approx(4.1) and c["fixed_depth_estimate"] == pytest.approx(16.4)
    assert c["speedup"] == pytest.approx(16.4 / 11.2)
    log = RF.epoch_seconds(hist)
    assert log["median"] == {1: 1.0, 2: 2.0, 4: pytest.approx(4.1)} and log["total"] == pytest.approx(11.2)
    assert log["final_n_steps"] == 4 and log["epochs"] == 4


def test_speedup_is_the_ratio_of_the_median_step_times():
    t = _timing({1: [1.0, 1.2, 1.1], 2: [1.5, 1.6, 1.7], 4: [2.5, 2.4, 2.6]}, [1, 2, 2, 4, 4, 4])
    assert t["seconds_per_step"] == {1: 1.1, 2: 1.6, 4: 2.5}
    assert t["speedup"] == pytest.approx(6 * 2.5 / (1.1 + 2 * 1.6 + 3 * 2.5))
    assert t["ideal"] == pytest.approx(24 / 17)
    rounds = [6 * t4 / (t1 + 2 * t2 + 3 * t4) for t1, t2, t4 in ((1.0, 1.5, 2.5), (1.2, 1.6, 2.4), (1.1, 1.7, 2.6))]
    assert t["speedup_range"] == pytest.approx((min(rounds), max(rounds)))


@pytest.mark.parametrize("per_round, word", [
    ({1: [1.0, 1.0], 2: [1.5, 1.6]}, "falls short of the ideal"),  # a fixed cost: t(N) = a + bN, a > 0
    ({1: [1.0, 1.0], 2: [2.4, 2.6]}, "exceeds the ideal"),  # t(2) > 2 t(1): more than proportional
    ({1: [1.0, 1.0], 2: [1.8, 2.2]}, "within the spread of the rounds"),  # the ideal 4/3 between the rounds
])
def test_the_sentence_says_what_the_numbers_say(per_round, word):
    t = _timing(per_round, [1, 2, 2])
    sentence = RF.word_speedup(t)
    assert word in sentence and f"{t['speedup']:.2f}×" in sentence and f"{t['ideal']:.2f}×" in sentence
    others = {"falls short of the ideal", "exceeds the ideal", "within the spread of the rounds"} - {word}
    assert not any(o in sentence for o in others)


def test_time_refinement_times_every_n_t_in_turn():
    cfg = dataclasses.replace(images.image_runs("smoke")["rk4_refined"], channels=(2, 4, 4), batch_size=8, device="cpu")
    t = RF.time_refinement(cfg, rounds=2, steps=1, warmup=0)
    assert t["n_steps_per_epoch"] == [1, 2] and set(t["per_round"]) == {1, 2}
    assert all(len(v) == 2 and min(v) > 0 for v in t["per_round"].values())
    assert t["ideal"] == pytest.approx(4 / 3) and t["efficiency"] == pytest.approx(t["speedup"] / t["ideal"])
    report = RF.refinement_cost_table(t, {"RK4 run": [{"n_steps": [4] * 3, "train_seconds": s} for s in (74.0, 189.0)]},
                                      preset="smoke")
    assert "N_t per epoch [1, 2]" in report and "seconds per step here (median)" in report
    assert "2 epochs at N_t = 4 from 74.0 to 189.0 s" in report and "say nothing about refinement" in report
    assert report.html.count("<table") == 1 and RF.word_speedup(t).split(":")[0] in report.html
    for bad in (dict(rounds=0), dict(steps=1.5), dict(warmup=-1)):
        with pytest.raises(ValueError, match="must be an integer"):
            RF.time_refinement(cfg, **{**dict(rounds=1, steps=1, warmup=0), **bad})
    for bad in (0, -1, True, "20"):
        with pytest.raises(ValueError, match="budget_s must be a number of seconds"):
            RF.time_refinement(cfg, rounds=1, steps=1, warmup=0, budget_s=bad)


def test_a_budget_cuts_steps_then_rounds_and_says_so():
    """Issue 44: the gpu model's 7 rounds of 20 steps took four minutes on a 2-core CPU; with a budget the timing fits
    it, steps per round first, then rounds down to MIN_ROUNDS, and a GPU, for which it fits, times all of it."""
    assert RT.fit_budget(0.02, 7, 20, 20.0) == (7, 20)  # a GPU: 2.8 s in all
    assert RT.fit_budget(0.5, 7, 20, 20.0) == (7, 5)  # fewer steps fit
    assert RT.fit_budget(1.6, 7, 20, 20.0) == (7, 1)  # one step a round, seven rounds fit (11 s)
    assert RT.fit_budget(4.0, 7, 20, 20.0) == (5, 1)  # fewer rounds
    assert RT.fit_budget(30.0, 7, 20, 20.0) == (RT.MIN_ROUNDS, 1)  # never fewer than MIN_ROUNDS
    assert RT.fit_budget(30.0, 2, 20, 20.0) == (2, 1) and RT.fit_budget(30.0, 7, 20, None) == (7, 20)
    assert all(g.get("budget_s") for p, g in ((p, images.timing_grid(p)) for p in ("cpu", "gpu", "paper")))
    cfg = dataclasses.replace(images.image_runs("smoke")["rk4_refined"], channels=(2, 4, 4), batch_size=8, device="cpu")
    t = RF.time_refinement(cfg, rounds=7, steps=50, warmup=3, budget_s=1e-6)
    assert (t["rounds"], t["steps"], t["budget_s"]) == (RT.MIN_ROUNDS, 1, 1e-6)
    assert all(len(v) == RT.MIN_ROUNDS for v in t["per_round"].values())
    assert f"{RT.MIN_ROUNDS} rounds of 1 step at each N_t" in RF.refinement_cost_table(t)


def test_the_gpu_timing_beside_this_machine_s_comes_from_the_run_s_record(tmp_path):
    """The shipped gpu model's training log, on the H100 that trained it: median epochs, their speed-up and ideal, in
    the report beside this machine's steps, the machine in the prose's margin (its facts), not in the table."""
    from cnet_lib.images.runs.shipped import shipped_run

    folder = shipped_run(images.image_runs("gpu")["rk4_refined"])
    record = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    rec = RF.recorded_timing(types.SimpleNamespace(history=record["history"], out_dir=folder))
    ones = sorted(h["train_seconds"] for h in record["history"] if h["n_steps"][0] == 1)
    assert rec["seconds_per_epoch"][1] == pytest.approx((ones[1] + ones[2]) / 2)
    assert rec["ideal"] == pytest.approx(16 * 4 / 44) and 1.0 < rec["speedup"] < rec["ideal"]
    assert rec["machine"]["device_name"].startswith("NVIDIA H100")
    per_round = {1: [0.2, 0.21, 0.19], 2: [0.35, 0.36, 0.34], 4: [0.7, 0.72, 0.69]}
    t = {**_timing(per_round, rec["n_steps_per_epoch"]), "channels": [16, 32, 64]}
    report = RF.refinement_cost_table(t, preset="gpu", recorded=rec)
    assert "seconds per epoch where it was trained (its log, median)" in report
    assert "Where this model was trained" in report and f"{rec['speedup']:.2f}×" in report and "H100" not in report
    assert f"{rec['seconds_per_epoch'][4]:.2f}" in report.html
    assert RF.facts(recorded=rec) == {"log_speedup": f"{rec['speedup']:.2f}", "log_ideal": f"{rec['ideal']:.2f}",
                                      "log_machine": "an H100"}
    other = RF.refinement_cost_table(_timing(per_round, [1, 2, 4]), recorded=rec)  # another schedule: no column
    assert "its log" not in other and "where this model was trained" not in other.lower()
    no_record = RF.recorded_timing(types.SimpleNamespace(history=record["history"], out_dir=tmp_path))
    assert no_record["machine"] == {} and no_record["speedup"] == rec["speedup"]
    assert RF.facts(recorded=no_record)["log_machine"] == "this machine"
    with pytest.raises(ValueError, match="training log is empty"):
        RF.recorded_timing(types.SimpleNamespace(history=[], out_dir=tmp_path))


def test_whole_runs_from_the_book_s_record(tmp_path):
    """The two whole runs (benchmarks/bench_refinement.py's record): their speed-up against the ideal of their own
    schedule, and the difference of their accuracies with its independent-samples interval; none without a record."""
    whole = RF.whole_runs()
    record = json.loads(RT.WHOLE_RUNS.read_text(encoding="utf-8"))
    assert whole["speedup"] == record["speedup"] and whole["ideal"] == pytest.approx(record["ideal"])
    assert whole["schedule"] == record["runs"]["refined"]["n_steps"] and whole["final_n_steps"] == whole["schedule"][-1]
    d = whole["difference"]
    assert d["diff"] == pytest.approx(record["runs"]["refined"]["final_test_acc"] - record["runs"]["fixed"]["final_test_acc"])
    assert d["ci95"][0] < d["diff"] < d["ci95"][1]
    said = RF.facts(whole=whole)
    assert said["whole_schedule"] == " → ".join(map(str, dict.fromkeys(whole["schedule"])))
    assert said["whole_diff"].startswith(("+", "−")) and said["whole_lo"].startswith(("+", "−"))
    assert RF.whole_runs(tmp_path / "nothing.json") is None
    assert RF.facts(whole=None) == {}, "no record (an install from a wheel): nothing glued, nothing fails"
    assert SH._accuracy_words(1.0, 2.0, 500) == "500 images show a gain in accuracy"
    assert SH._accuracy_words(-2.0, -1.0, 500) == "500 images show a cost in accuracy"
    assert SH._accuracy_words(-2.0, 1.0, 500) == "500 images show neither a cost nor a gain in accuracy"


def test_the_paper_s_training_time():
    said = RF.facts(paper=PAPER_SENTENCES["training_time"], paper_schedule=paper_schedule())
    t = PAPER_SENTENCES["training_time"]
    assert said["paper_min_fixed"] == f"{t['minutes_fixed']:,}" and said["paper_epochs"] == str(len(paper_schedule()))
    assert said["paper_ideal"] == f"{RF.schedule_ideal(paper_schedule()):.2f}"
    assert said["paper_refine_at"] == "20, 40, 60, 70 and 80"
    with pytest.raises(TypeError, match="together"):
        RF.facts(paper=t)


# ----------------------------------------------------------------------------- the chapter: numbers glued
def test_the_prose_types_no_result_and_glues_what_it_quotes(tmp_path):
    """Every number the prose states is glued from a cell ({glue:md}`name`) or is a definition (the 95% level and its
    z); the names it quotes are the ones the study's facts give, and no cell ends with the dict glue_all returns.  No
    environment variable or preset switch in the prose (issue 53: the preset is *How this book works*' to explain)."""
    assert not typed_numbers(CHAPTER, {"95%", "1.96"}), typed_numbers(CHAPTER, {"95%", "1.96"})
    assert "glue_all(refinement.facts(" in code(CHAPTER) and "CNET_" not in markdown(CHAPTER)
    assert "refinement.refinement_cost_table(timing" in code(CHAPTER)
    assert not cells_ending_in_glue(CHAPTER)
    hist = history([(1, 1, False, 1.0, 2.0, 0.3), (2, 2, True, 2.0, 1.5, 0.4, 0.01)])
    runs = {"rk4_refined": study_run(tmp_path, "a", "RK4", hist, config=images.image_runs("smoke")["rk4_refined"]),
            "euler_fixed": study_run(tmp_path, "b", "Euler", history([(1, 2, False, 1.0, 2.0, 0.3)] * 2),
                                     config=images.image_runs("smoke")["euler_fixed"])}
    torch.manual_seed(0)
    model = ContinuousNet(channels=(2, 4, 4), n_basis=1).eval()
    rows = RF.change_per_epoch([snap(0, [1.0]), snap(1, [1.5]), snap(2, [1.5, 1.5], refined=True)])
    given = RF.facts(check=RF.refinement_check(model, torch.randn(2, 3, 8, 8)), runs=runs, epochs=rows, history=hist,
                     recorded=RF.recorded_timing(runs["rk4_refined"]), whole=RF.whole_runs(),
                     paper=PAPER_SENTENCES["training_time"], paper_schedule=paper_schedule())
    quoted = glued_names(CHAPTER)
    assert quoted and quoted <= set(given), f"glued nowhere: {sorted(quoted - set(given))}"
    assert all(isinstance(v, str) and v for v in given.values())
    assert given["trained_how"] == "were trained in this session" and given["rk4_evals"] == "8"
    with pytest.raises(TypeError, match="knows"):
        RF.facts(run=runs)


@pytest.mark.slow
def test_what_the_prose_says_holds_in_the_published_run(tmp_path):
    """The prose's words on the published book's runs hold for their numbers, computed as the chapter computes them from
    the models that ship with the book: the RK4 model's epochs get slower at every refinement, it trained for longer
    than the Euler model, its log's speed-up falls short of the ideal, the epochs that begin with a refinement move θ(t)
    no more than the others; and the two whole runs' interval contains zero ("neither a cost nor a gain")."""
    from cnet_lib.book.project import PUBLISHED_PRESET
    from smoke_data import smoke_settings

    runs = images.trained_runs(smoke_settings(preset=PUBLISHED_PRESET, runs_dir=tmp_path), verbose=False)
    rk4 = runs["rk4_refined"]
    medians = RF.epoch_seconds(rk4.history)["median"]
    assert list(medians.values()) == sorted(medians.values()), "seconds per epoch step up at each refinement"
    said = RF.facts(runs=runs, epochs=RF.change_per_epoch(rk4.snapshots), history=rk4.history,
                    recorded=RF.recorded_timing(rk4), whole=RF.whole_runs())
    assert float(said["rk4_over_euler"]) > 1, "still slower than the Euler model"
    assert float(said["log_speedup"]) < float(said["log_ideal"]), "short of the ideal"
    assert float(said["others_lo"]) <= float(said["refined_change"]) <= float(said["others_hi"]), \
        "the refinement epochs move θ(t) within the range of the others"
    assert said["after_decay"].startswith("once the learning rate falls")
    assert said["whole_verdict"] == "500 images show neither a cost nor a gain in accuracy"
    assert said["trained_how"] == "ship with the book" and said["trained_on"] == "an H100"
    text = re.sub(r"\s+", " ", markdown(CHAPTER))
    for words in ("step up at each refinement", "short of the ideal", "what moves $\\theta(t)$ is training, not the refinement",
                  "still slower than its Euler model"):
        assert words in text, words
    assert (ROOT / "book" / "measurements.md").is_file(), "the margin sends the reader to the whole runs' page"
