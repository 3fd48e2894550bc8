"""Over several training seeds: the seeds' file
(:mod:`cnet_lib.studies.runner`), and what a training seed changes (its run folder, not the test images).
Synthetic studies: the numbers are chosen so that each outcome is known in advance."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from cnet_lib.images.data.download import write_fake_cifar
from cnet_lib.images.runs.image_presets import image_runs
from cnet_lib.images.runs.run_loading import StudyRun
from cnet_lib.images.runs.study_inputs import study_data
from cnet_lib.images.training.train_config import TrainConfig
from cnet_lib.images.runs import image_presets as RF
from cnet_lib.runtime.settings import Settings
from cnet_lib.studies import runner as SF


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
