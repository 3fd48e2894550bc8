"""Claims about training methods over several training seeds (:mod:`cnet_lib.images.studies.seed_verdict`; the
robustness study's rows over seeds are in ``tests/test_robustness.py``), the seeds' file
(:mod:`cnet_lib.images.studies.seed_cached`), and what a training seed changes (its run folder, not the test images).
Synthetic studies: the numbers are chosen so that each outcome is known in advance."""
from __future__ import annotations

import dataclasses

import pytest
import torch
from scipy import stats

from cnet_lib.images.runs import run_folders as RF
from cnet_lib.images.studies import seed_verdict as SC
from cnet_lib.images.studies import seed_cached as SF
from cnet_lib.report import seed_report as SR
from cnet_lib.images.data.fake_data import write_fake_cifar
from cnet_lib.images.runs.image_presets import image_runs
from cnet_lib.images.runs.study_inputs import study_data
from cnet_lib.images.runs.study_run import StudyRun
from cnet_lib.images.training.train_config import TrainConfig
from cnet_lib.runtime.settings import Settings


def _sweep(trained: float, identity: float, off: dict, n_steps: int = 4, scheme: str = "rk4_classic") -> list[dict]:
    """One model's sweep: trained at N_t = M = ``n_steps`` (piecewise-constant θ), ``off`` its other graphs."""
    rows = [{"kind": "trained", "scheme": scheme, "n_steps": n_steps, "n_basis": n_steps, "accuracy": trained},
            {"kind": "identity", "accuracy": identity}]
    rows += [{"kind": "manifestation", "scheme": s, "n_steps": n, "n_basis": n_steps, "accuracy": a,
              "is_trained": (s, n) == (scheme, n_steps)} for (s, n), a in off.items()]
    return rows


GRID = [("euler", 4), ("midpoint", 2), ("midpoint", 4), ("rk4_classic", 3), ("rk4_classic", 4), ("rk4_classic", 6),
        ("rk4_classic", 8)]


def _pair(euler_loss: float, rk4_loss: float, identity: float = 0.30, cross: float = 0.0) -> dict:
    """Both models of one seed: each loses ``*_loss`` on every graph but its own, and ``cross`` more on the graph
    whose steps cross θ's jumps (rk4_classic at N_t = 6, with M = 4)."""
    def acc(top, loss, k, own):
        return top if k == own else top - loss - (cross if k == ("rk4_classic", 6) else 0.0)

    euler = {k: acc(0.70, euler_loss, k, ("euler", 4)) for k in GRID}
    rk4 = {k: acc(0.72, rk4_loss, k, ("rk4_classic", 4)) for k in GRID}
    return {"euler_fixed": _sweep(0.70, identity, euler, scheme="euler"), "rk4_refined": _sweep(0.72, identity, rk4)}


def test_the_contrast_over_three_seeds_holds_and_says_how_many_seeds():
    seeds = {0: _pair(0.08, 0.005), 1: _pair(0.10, 0.010), 2: _pair(0.09, 0.000)}
    c = SC.contrast_over_seeds(seeds)
    assert c.seeds == [0, 1, 2] and c.outcome == "contrast" and c.blocks_matter
    assert c.drops["euler_fixed"] == pytest.approx([8.0, 10.0, 9.0])
    expected = stats.ttest_ind([8.0, 10.0, 9.0], [0.5, 1.0, 0.0], equal_var=False)
    assert c.methods["p"] == pytest.approx(expected.pvalue) and c.methods["diff"] == pytest.approx(8.5)
    table = str(SR.contrast_over_seeds_table(c))
    assert "3 training seeds per method (seeds 0, 1, 2)" in table
    # issue 40: only graphs that are valid for a model or cross θ's jumps are listed; coarser ones are not
    assert "rk4_classic, N_t = 8" in table and "midpoint, N_t = 4" in table and "rk4_classic, N_t = 6" in table
    assert "midpoint, N_t = 2" not in table and "rk4_classic, N_t = 3" not in table, "fewer steps than trained"
    assert "euler, N_t = 4" not in table, "the Euler model's own graph, of lower order for the RK4 model"
    assert "blocks removed" in table and "61.0 [60.0, 62.0]" in table  # Euler-trained off its graph: 70 - (8, 10, 9)
    assert "worst loss, valid graphs" in table and "worst loss, steps across θ's jumps" in table
    assert "71.5 [71.0, 72.0] °" in table, "midpoint is of lower order than the RK4 model's scheme: marked, not judged"
    words = SR.word_contrast_over_seeds(c).splitlines()
    assert words[-1].startswith("VERDICT (training methods, 3 seeds per method, valid graphs only): the paper's "
                                "contrast holds")


def test_graphs_that_cross_the_jumps_of_theta_never_enter_the_verdict():
    """Issue 40: a large loss on steps that straddle θ's jumps (N_t = 6 with M = 4) is shown on its own row and
    changes neither the drops nor the outcome; the same loss on a valid graph would."""
    calm = {k: _pair(0.015, 0.005) for k in range(3)}
    crossing = {k: _pair(0.015, 0.005, cross=0.15) for k in range(3)}
    a, b = SC.contrast_over_seeds(calm), SC.contrast_over_seeds(crossing)
    assert a.drops == b.drops and a.outcome == b.outcome == "no contrast"
    assert b.straddle_drops["euler_fixed"] == pytest.approx([16.5] * 3)
    assert b.straddle_drops["rk4_refined"] == pytest.approx([15.5] * 3)
    rows = {r["graph"]: r for r in b.rows}
    assert rows["rk4_classic, N_t = 6"]["kinds"] == {"euler_fixed": "straddles", "rk4_refined": "straddles"}
    assert rows["rk4_classic, N_t = 8"]["kinds"] == {"euler_fixed": "valid", "rk4_refined": "valid"}
    assert rows["midpoint, N_t = 4"]["kinds"] == {"euler_fixed": "valid", "rk4_refined": "lower order"}
    assert "On graphs whose steps cross θ's jumps, never judged" in str(SR.word_contrast_over_seeds(b))


def test_overlapping_seeds_show_no_contrast_and_one_seed_makes_no_claim():
    c = SC.contrast_over_seeds({0: _pair(0.08, 0.01), 1: _pair(0.00, 0.03), 2: _pair(0.02, 0.0)})
    assert c.outcome == "no contrast" and c.methods["ci95"][0] <= 0
    one = SC.contrast_over_seeds({0: _pair(0.08, 0.0)})
    assert one.outcome == "one seed" and one.methods is None
    assert "1 training seed per method (seed 0)" in str(SR.contrast_over_seeds_table(one))
    assert "no claim about the training methods" in SR.word_contrast_over_seeds(one).splitlines()[-1]
    weak = SC.contrast_over_seeds({0: _pair(0.08, 0.0), 1: _pair(0.08, 0.0, identity=0.65)})
    assert weak.outcome == "blocks do not matter" and not weak.blocks_matter
    # issue 51: the opposite of the contrast (the RK4-trained models lose more, the interval below 0) is said so
    opposite = SC.contrast_over_seeds({0: _pair(0.0, 0.05), 1: _pair(0.01, 0.06), 2: _pair(0.0, 0.055)})
    assert opposite.outcome == "contradicted" and opposite.methods["ci95"][1] < 0
    assert "the opposite of the paper's contrast" in SR.word_contrast_over_seeds(opposite).splitlines()[-1]


def _run(tmp_path, seed: int, digest: str, name: str = "rk4_refined") -> StudyRun:
    cfg = TrainConfig(seed=seed, run_name=name, preset="gpu", epochs=1)
    return StudyRun(name, cfg, None, [{"test_acc": 0.7, "train_seconds": 1.0}], tmp_path / f"{name}-{seed}",
                    checkpoint_sha256=digest)


def test_the_seeds_file_stands_with_its_models_only(tmp_path):
    sweeps = {s: _pair(0.08, 0.01) for s in range(3)}
    records = [SF.seed_record({"rk4_refined": _run(tmp_path, s, f"sha{s}")}, {"rk4_refined": sweeps[s]["rk4_refined"]},
                              None) for s in range(3)]
    run0 = _run(tmp_path, 0, "sha0")
    run0.out_dir.mkdir()
    SF.write_seeds_file(run0.out_dir / SF.SEEDS_FILE, records, "gpu", {"device_name": "test"})
    got = SF.seed_sweeps({"rk4_refined": run0}, {"rk4_refined": sweeps[0]["rk4_refined"]}, verbose=False)
    assert list(got) == [0, 1, 2]
    other = _run(tmp_path, 0, "another model")
    other.out_dir = run0.out_dir
    assert list(SF.seed_sweeps({"rk4_refined": other}, {"rk4_refined": []}, verbose=False)) == [0]
    with pytest.raises(ValueError, match="each seed once"):
        SF.write_seeds_file(tmp_path / "x.json", records + records[:1], "gpu", {})


def test_a_training_seed_changes_the_run_folder_but_not_the_test_images(tmp_path):
    cfg = image_runs("smoke")["rk4_refined"]
    one = dataclasses.replace(cfg, seed=1)
    assert "-seed1-" in RF.run_dir(one, tmp_path).name and "-seed" not in RF.run_dir(cfg, tmp_path).name
    assert RF.run_hash(one) != RF.run_hash(cfg)
    write_fake_cifar(tmp_path / "data", n_train=200, n_test=100)
    settings = Settings(preset="smoke", data_dir=tmp_path / "data", device="cpu")
    kw = dict(data_dir=str(tmp_path / "data"), n_train=60, n_test=30)
    d0 = study_data(dataclasses.replace(cfg, **kw), settings)
    d1 = study_data(dataclasses.replace(one, **kw), settings)
    assert torch.equal(d0.test_x, d1.test_x) and torch.equal(d0.test_y, d1.test_y), "every seed on the same test images"
    assert not torch.equal(d0.train_x, d1.train_x), "the training subset is part of the seed"
