"""Claims about training methods over several training seeds (:mod:`cnet_lib.images.studies.seed_verdict`: the
robustness rows; the manifestation contrast is tests/test_manifestation.py's), the seeds' file
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
from cnet_lib.images.studies.robustness_measure import Condition
from cnet_lib.images.runs.study_inputs import study_data
from cnet_lib.images.runs.study_run import StudyRun
from cnet_lib.images.training.train_config import TrainConfig
from cnet_lib.runtime.settings import Settings


def _study(clean_a, clean_b, theta4_a, theta4_b, noise_a, noise_b):
    """One seed's study: the clean, θ̂-in-4-bits, weight-noise (two draws) and blocks-removed rows, as
    accuracies (the drops follow from them)."""
    def model(clean, theta4, noise):
        return [{"kind": "clean", "level": None, "accuracies": [clean]},
                {"kind": "quantized_theta", "level": 4, "accuracies": [theta4]},
                {"kind": "weight_noise", "level": 0.1, "accuracies": list(noise)},
                {"kind": "weight_noise", "level": 0.3, "accuracies": [noise[0] - 0.1, noise[1] - 0.3 * theta4]},
                {"kind": "float_format", "level": "bf16", "accuracies": [clean - 0.001]},
                {"kind": "identity", "level": None, "accuracies": [0.2]}]
    return {"rk4_refined": model(clean_a, theta4_a, noise_a), "euler_fixed": model(clean_b, theta4_b, noise_b)}


def _studies():
    return {0: _study(0.72, 0.70, 0.715, 0.66, (0.70, 0.69), (0.66, 0.65)),
            1: _study(0.73, 0.71, 0.722, 0.68, (0.71, 0.70), (0.68, 0.66)),
            2: _study(0.71, 0.70, 0.705, 0.665, (0.69, 0.70), (0.65, 0.66))}


def test_robustness_rows_over_seeds_use_the_trained_model_as_the_unit():
    r = SC.robustness_over_seeds(_studies())
    assert r.seeds == [0, 1, 2] and r.blocks_matter
    primary = r.rows[0]
    assert primary["role"] == "primary" and primary["name"] == "θ̂ in 4 bits"
    da, db = [0.5, 0.8, 0.5], [4.0, 3.0, 3.5]
    assert primary["drops_a"] == pytest.approx(da) and primary["drops_b"] == pytest.approx(db)
    assert primary["p"] == pytest.approx(stats.ttest_ind(db, da, equal_var=False).pvalue)
    assert r.outcome == "supported"
    from statsmodels.stats.multitest import multipletests

    quant = [row for row in r.rows if row["family"] == "quantization" and row["role"] == "secondary"]
    assert len(quant) == 1 and quant[0]["p_holm"] == pytest.approx(quant[0]["p"])  # alone in its family here
    noise = next(row for row in r.rows if row["kind"] == "weight_noise")
    assert noise["drops_a"][0] == pytest.approx(100 * (0.72 - 0.695))  # the noise draws averaged inside the model
    for family in ("weight noise", "quantization"):
        members = [row for row in r.rows if row["family"] == family and row["role"] == "secondary"]
        adjusted = multipletests([row["p"] for row in members], method="holm")[1]
        assert [row["p_holm"] for row in members] == pytest.approx(list(adjusted)), family
    assert len([row for row in r.rows if row["family"] == "weight noise"]) == 2
    table = str(SR.robustness_over_seeds_table(r))
    assert "3 training seeds per method" in table and "PRIMARY" in table and "the training seed as the unit" in table
    primary_line = next(line for line in table.splitlines() if "PRIMARY" in line)
    assert "one test" in primary_line, "the primary row's p is unadjusted: its Holm column says so (issue 30)"
    assert "supported" in SR.word_robustness_over_seeds(r) and "3 training seeds per method" in SR.word_robustness_over_seeds(r)


def test_condition_objects_and_their_compact_form_agree_and_one_seed_has_no_p():
    def as_conditions(study):
        return {label: [Condition(c["kind"], c["level"], [torch.tensor([1.0] * round(10000 * a) + [0.0] * (10000 - round(10000 * a)))
                                                          for a in c["accuracies"]]) for c in conds]
                for label, conds in study.items()}
    compact = SC.robustness_over_seeds(_studies())
    objects = SC.robustness_over_seeds({s: as_conditions(v) for s, v in _studies().items()})
    assert [r["p"] for r in compact.rows] == pytest.approx([r["p"] for r in objects.rows])
    one = SC.robustness_over_seeds({0: _studies()[0]})
    assert one.outcome == "one seed" and all(r["p"] is None for r in one.rows)
    assert "1 training seed per method" in str(SR.robustness_over_seeds_table(one))
    assert "no claim about the training methods" in SR.word_robustness_over_seeds(one)
    with pytest.raises(ValueError, match="at least one training seed"):
        SC.robustness_over_seeds({})


def _run(tmp_path, seed: int, digest: str, name: str = "rk4_refined") -> StudyRun:
    cfg = TrainConfig(seed=seed, run_name=name, preset="gpu", epochs=1)
    return StudyRun(name, cfg, None, [{"test_acc": 0.7, "train_seconds": 1.0}], tmp_path / f"{name}-{seed}",
                    checkpoint_sha256=digest)


def test_the_seeds_file_stands_with_its_models_only(tmp_path):
    sweeps = {s: {"rk4_refined": [{"kind": "trained", "scheme": "rk4_classic", "n_steps": 4, "n_basis": 4,
                                    "accuracy": 0.72 - 0.01 * s}, {"kind": "identity", "accuracy": 0.3}]}
              for s in range(3)}
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
