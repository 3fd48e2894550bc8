"""Refinement's training time measured fairly (cnet_lib.images.studies.refinement_timing): the schedule, the
speed-up from steps timed in turn, and the sentence that compares it with the ideal."""
from __future__ import annotations

import dataclasses

import pytest

from cnet_lib import images
from cnet_lib.images.studies import refinement_timing as RT
from cnet_lib.report import refinement_report as RR


def _timing(per_round, schedule):
    """A timing as time_refinement returns it, from given seconds per step of every round."""
    return RT._summary(images.image_runs("smoke")["rk4_refined"], __import__("torch").device("cpu"), schedule, per_round,
                       {n: 1 for n in per_round}, len(next(iter(per_round.values()))), 3)


def test_schedule_follows_the_refinements():
    assert RT.schedule_n_steps(images.image_runs("cpu")["rk4_refined"]) == [1, 2, 2, 4, 4, 4]
    assert RT.schedule_n_steps(images.image_runs("cpu")["euler_fixed"]) == [4] * 6
    assert RT.schedule_n_steps(images.image_runs("paper")["rk4_refined"])[-1] == 32


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
    sentence = RR.word_speedup(t)
    assert word in sentence and f"{t['speedup']:.2f}×" in sentence and f"{t['ideal']:.2f}×" in sentence
    others = {"falls short of the ideal", "exceeds the ideal", "within the spread of the rounds"} - {word}
    assert not any(o in sentence for o in others)


def test_time_refinement_times_every_n_t_in_turn():
    cfg = dataclasses.replace(images.image_runs("smoke")["rk4_refined"], channels=(2, 4, 4), batch_size=8, device="cpu")
    t = RT.time_refinement(cfg, rounds=2, steps=1, warmup=0)
    assert t["n_steps_per_epoch"] == [1, 2] and set(t["per_round"]) == {1, 2}
    assert all(len(v) == 2 and min(v) > 0 for v in t["per_round"].values())
    assert t["ideal"] == pytest.approx(4 / 3) and t["efficiency"] == pytest.approx(t["speedup"] / t["ideal"])
    report = RR.refinement_cost_table(t, {"RK4 run": [{"n_steps": [4] * 3, "train_seconds": s} for s in (74.0, 189.0)]},
                                       preset="smoke")
    assert "N_t per epoch [1, 2]" in report and "seconds per step here (median)" in report
    assert "2 epochs at N_t = 4 from 74.0 to 189.0 s" in report and "say nothing about refinement" in report
    assert report.html.count("<table") == 1 and RR.word_speedup(t).split(":")[0] in report.html
    for bad in (dict(rounds=0), dict(steps=1.5), dict(warmup=-1)):
        with pytest.raises(ValueError, match="must be an integer"):
            RT.time_refinement(cfg, **{**dict(rounds=1, steps=1, warmup=0), **bad})
    for bad in (0, -1, True, "20"):
        with pytest.raises(ValueError, match="budget_s must be a number of seconds"):
            RT.time_refinement(cfg, rounds=1, steps=1, warmup=0, budget_s=bad)


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
    t = RT.time_refinement(cfg, rounds=7, steps=50, warmup=3, budget_s=1e-6)
    assert (t["rounds"], t["steps"], t["budget_s"]) == (RT.MIN_ROUNDS, 1, 1e-6)
    assert all(len(v) == RT.MIN_ROUNDS for v in t["per_round"].values())
    assert f"{RT.MIN_ROUNDS} rounds of 1 step at each N_t" in RR.refinement_cost_table(t)


def test_the_gpu_timing_beside_this_machine_s_comes_from_the_run_s_record(tmp_path):
    """The shipped gpu model's training log, on the H100 that trained it: median epochs, their speed-up and ideal, in
    the report beside this machine's steps."""
    import json
    import types

    from cnet_lib.images.runs.shipped import shipped_run

    folder = shipped_run(images.image_runs("gpu")["rk4_refined"])
    record = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    rec = RT.recorded_timing(types.SimpleNamespace(history=record["history"], out_dir=folder))
    ones = sorted(h["train_seconds"] for h in record["history"] if h["n_steps"][0] == 1)
    assert rec["seconds_per_epoch"][1] == pytest.approx((ones[1] + ones[2]) / 2)
    assert rec["ideal"] == pytest.approx(16 * 4 / 44) and 1.0 < rec["speedup"] < rec["ideal"]
    assert rec["machine"]["device_name"].startswith("NVIDIA H100")
    per_round = {1: [0.2, 0.21, 0.19], 2: [0.35, 0.36, 0.34], 4: [0.7, 0.72, 0.69]}
    t = {**_timing(per_round, rec["n_steps_per_epoch"]), "channels": [16, 32, 64]}
    report = RR.refinement_cost_table(t, preset="gpu", recorded=rec)
    assert "seconds per epoch on an H100 (its log, median)" in report
    assert f"On an H100, where this model was trained" in report and f"{rec['speedup']:.2f}×" in report
    assert f"{rec['seconds_per_epoch'][4]:.2f}" in report.html
    other = RR.refinement_cost_table(_timing(per_round, [1, 2, 4]), recorded=rec)  # another schedule: no column
    assert "its log" not in other and "where this model was trained" not in other
    no_record = RT.recorded_timing(types.SimpleNamespace(history=record["history"], out_dir=tmp_path))
    assert no_record["machine"] == {} and no_record["speedup"] == rec["speedup"]
    with pytest.raises(ValueError, match="training log is empty"):
        RT.recorded_timing(types.SimpleNamespace(history=[], out_dir=tmp_path))
