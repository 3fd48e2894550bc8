"""cnet_lib.images: train once and reload, hashed run folders, and the image chapters' exercise checks (the
manifestation sweeps: tests/test_manifestation.py; θ(t) and refinement: tests/test_continuousnet.py and
tests/test_refinement.py).  Tiny models on fake CIFAR: seconds."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from cnet_lib.images.data.download import write_fake_cifar
from cnet_lib.images.runs import image_presets as RF, run_store as RS, study_inputs as SI, theta_record as TR
from cnet_lib.runtime.files import shown_path
from cnet_lib.runtime.settings import Settings

TINY = dict(n_train=64, n_test=32, batch_size=32, channels=(2, 4, 4))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    write_fake_cifar(root, n_train=100, n_test=40, seed=0)
    return str(root)


@pytest.fixture(scope="module")
def study(data_dir, tmp_path_factory):
    """Both smoke runs, trained once into a module-wide runs root."""
    root = tmp_path_factory.mktemp("runs")
    runs = RS.trained_runs(Settings(preset="smoke", runs_dir=root, data_dir=data_dir, device="cpu"), verbose=False, **TINY)
    return root, runs


def _state(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items() if torch.is_tensor(v)}


# ----------------------------------------------------------------------------- caching
def test_trained_once_then_reloaded_without_training(study, data_dir, monkeypatch):
    root, runs = study
    assert set(runs) == {"rk4_refined", "euler_fixed"}
    assert all(r.trained_now for r in runs.values())
    assert runs["rk4_refined"].history[-1]["n_steps"] == [2, 2, 2]  # refined 1 -> 2 after epoch 1

    def no_training(*a, **k):
        raise AssertionError("trained_runs retrained a finished run")

    monkeypatch.setattr(RS, "train", no_training)
    monkeypatch.setattr(SI, "load_dataset", no_training)  # a finished run needs no data either
    again = RS.trained_runs(Settings(preset="smoke", runs_dir=root, data_dir=data_dir, device="cpu"), verbose=False, **TINY)
    for name, run in runs.items():
        assert not again[name].trained_now
        assert again[name].history == run.history
        assert again[name].snapshots == run.snapshots
        a, b = _state(run.model), _state(again[name].model)
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
        assert again[name].model.manifestation == run.model.manifestation


def test_run_folder_holds_a_hash_of_the_config(study, data_dir):
    root, runs = study
    for run in runs.values():
        h = RF.run_hash(run.config)
        assert len(h) >= 8 and run.out_dir.name == f"smoke-{run.name}-{h}"
        assert run.out_dir.parent == Path(root)
        assert (run.out_dir / "checkpoint.pt").is_file() and (run.out_dir / TR.SNAPSHOTS).is_file()
    cfg = runs["euler_fixed"].config
    import dataclasses

    assert RF.run_hash(dataclasses.replace(cfg, lr=cfg.lr / 2)) != RF.run_hash(cfg), "a changed preset must not collide"
    assert RF.run_hash(dataclasses.replace(cfg, epochs=cfg.epochs + 1)) != RF.run_hash(cfg)
    assert RF.run_hash(dataclasses.replace(cfg, data_dir=str(Path(data_dir) / "other"))) != RF.run_hash(cfg)
    assert RF.run_hash(dataclasses.replace(cfg, progress=not cfg.progress, device="meta")) == RF.run_hash(cfg)


def test_runs_live_in_the_sessions_runs_folder(study, tmp_path):
    _, runs = study
    cfg = runs["euler_fixed"].config
    assert RF.run_dir(cfg, tmp_path / "r") == tmp_path / "r" / f"smoke-euler_fixed-{RF.run_hash(cfg)}"
    assert RF.shipped_copy_dir(cfg, tmp_path / "r").name == f"smoke-euler_fixed-{RF.run_hash(cfg)}-shipped"
    assert all(r.settings.preset == "smoke" and r.settings.device == torch.device("cpu") for r in runs.values())


def test_snapshots_record_every_epoch_and_the_refinement(study):
    _, runs = study
    snaps = runs["rk4_refined"].snapshots
    assert [s["epoch"] for s in snaps] == [0, 1, 2]
    assert [s["blocks"][0]["n_basis"] for s in snaps] == [1, 1, 2]
    assert snaps[2]["refined"] and not snaps[1]["refined"]
    init = TR.theta_snapshot(runs["rk4_refined"].initial_model())
    assert init["blocks"] == snaps[0]["blocks"], "epoch 0 is the model train() started from"
    final = TR.theta_snapshot(runs["rk4_refined"].model, epoch=2, refined=True)
    assert final["blocks"] == snaps[2]["blocks"]


def test_fake_data_fallback_is_announced(tmp_path, capsys):
    folder = SI.study_data_dir(Settings(preset="smoke", data_dir=tmp_path / "nothing-here"))
    out = capsys.readouterr().out
    assert "FAKE data" in out and shown_path(folder) in out  # the folder as messages show it (<tmp>/...)
    assert (folder / "cifar-10-batches-py" / "data_batch_1").is_file()


# ----------------------------------------------------------------------------- tables and figures


# ----------------------------------------------------------------------------- exercises
def test_exercise_checks(capsys):
    from cnet_lib.book.exercises import image_exercises as E
    from cnet_lib.teacher import keys as K

    # the references are not answers: the checks reject a call into them (right answers pass in
    # tests/test_exercises.py)
    assert not E.check_euler_block_as_resnet(K.reference_euler_block_as_resnet)
    assert not E.check_parameters_after_refinement(K.reference_parameters_after_refinement)
    assert not E.check_ideal_speedup(K.reference_ideal_speedup)
    assert not E.check_identity_gap(K.reference_identity_gap)
    assert "reference_" in capsys.readouterr().out
    assert not E.check_euler_block_as_resnet(lambda block, x: x)
    assert not E.check_parameters_after_refinement(lambda model: 2 * model.n_parameters())
    assert not E.check_ideal_speedup(lambda n: sum(n) / len(n))
    assert not E.check_identity_gap(lambda rows: rows[0]["accuracy"])
    assert "❌ fail" in capsys.readouterr().out
