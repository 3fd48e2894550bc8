"""The trained models that ship with the book (``cnet_lib/shipped/``, written by ``python -m cnet_lib ship``).

The ``cpu`` preset's two image models ship in the repository with a manifest.  These tests fail when
a change to the preset makes them stale (their identity hash is no longer the preset's), when a
file differs from the checksum its manifest records, or when a shipped checkpoint does not load
as the preset's model; and they check that a stale model is never picked up.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest
import torch

from cnet_lib.images import run_folders as RF, run_store as RS, shipped as SHP
from cnet_lib.images.image_presets import image_runs
from cnet_lib.images import CHECKPOINT, RESULTS, load_model
from cnet_lib.runtime.checkpoint import config_diff
from cnet_lib.runtime.settings import Settings
from smoke_data import smoke_settings

ROOT = Path(__file__).resolve().parents[1]
PRESET = "cpu"
RUNS = list(image_runs(PRESET))
RETRAIN = ("retrain and ship them again with `CNET_DATA_DIR=<folder with the 45k-image cifar-10-batches-py> "
           f"python -m cnet_lib ship {PRESET} --data-description \"...\"` (about an hour on 2 cores), and commit "
           "cnet_lib/shipped/")
SHIP_COMMANDS = ("python -m cnet_lib ship", "python -m cnet_lib.ship")
"""How a manifest records the command that shipped it: today's form, and the one the shipped files were made with
(their manifests are historical records, checked by their SHA-256, and never rewritten)."""
MAX_BYTES = 5_000_000  # small enough for the repository


def _manifest(run: str) -> dict:
    folder = SHP.SHIPPED / f"{PRESET}-{run}"
    path = folder / SHP.MANIFEST
    assert path.is_file(), f"no shipped model for the {PRESET} preset's run {run!r} ({folder}): {RETRAIN}"
    return json.loads(path.read_text())


@pytest.mark.parametrize("run", RUNS)
def test_shipped_model_matches_the_preset(run):
    cfg = image_runs(PRESET)[run]
    manifest = _manifest(run)
    assert manifest["identity_hash"] == RF.identity_hash(cfg), (
        f"the {PRESET} preset's run {run!r} changed since its model was shipped: {RETRAIN}")
    assert SHP.shipped_run(cfg) == SHP.SHIPPED / f"{PRESET}-{run}"
    assert manifest["preset"] == PRESET and manifest["run"] == run
    assert any(command in manifest["command"] for command in SHIP_COMMANDS)
    for key in ("machine", "train_seconds", "final_test_acc", "history", "data"):
        assert manifest.get(key), f"the manifest of {run} lacks {key!r}"
    assert len(manifest["history"]) == cfg.epochs


@pytest.mark.parametrize("run", RUNS)
def test_shipped_files_match_their_checksums(run):
    folder = SHP.SHIPPED / f"{PRESET}-{run}"
    files = _manifest(run)["files"]
    assert CHECKPOINT in files and RESULTS in files
    assert any(name.startswith("sweep-") for name in files), "the shipped run has no sweep: the chapters would recompute it"
    on_disk = {p.name for p in folder.iterdir()} - {SHP.MANIFEST}
    assert on_disk == set(files), f"files in {folder} differ from its manifest: {sorted(on_disk ^ set(files))}"
    for name, digest in files.items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest, f"{folder / name} was changed after shipping"
    total = sum((folder / name).stat().st_size for name in files)
    assert total < MAX_BYTES, f"{folder} is {total / 1e6:.1f} MB: too big for the repository"


@pytest.mark.parametrize("run", RUNS)
def test_shipped_checkpoint_is_the_presets_model(run):
    cfg = image_runs(PRESET)[run]
    model, ck = load_model(SHP.SHIPPED / f"{PRESET}-{run}", "cpu")  # weights_only=True inside
    assert not config_diff(ck["config"], cfg.identity()), f"the shipped checkpoint of {run} is not the preset's model"
    assert model.manifestation == [(cfg.scheme, cfg.final_n_steps())] * len(model.blocks)
    assert ck["extra"]["history"][-1]["test_acc"] == pytest.approx(_manifest(run)["final_test_acc"])
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_a_changed_preset_never_picks_up_the_shipped_model():
    cfg = image_runs(PRESET)[RUNS[0]]
    assert SHP.shipped_run(cfg) is not None
    assert SHP.shipped_run(dataclasses.replace(cfg, epochs=cfg.epochs + 1)) is None
    assert SHP.shipped_run(dataclasses.replace(cfg, lr=cfg.lr * 2)) is None
    assert SHP.shipped_run(dataclasses.replace(cfg, preset="smoke")) is None


def test_installed_package_carries_the_shipped_models():
    """Colab installs the package from the repository (not editable): the models must be package data."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '[tool.setuptools.package-data]\ncnet_lib = ["shipped/*/*"]' in pyproject
    ignore = (ROOT / ".gitignore").read_text()
    assert "!cnet_lib/shipped/**/*.pt" in ignore, "*.pt is ignored: the shipped checkpoints would never be committed"


def test_the_book_loads_the_shipped_model_and_says_so(tmp_path, capsys):
    cfg = image_runs(PRESET)[RUNS[0]]
    folder = tmp_path / "run"
    assert SHP.install_shipped(folder, dataclasses.replace(cfg, out_dir=str(folder)), "RK4", verbose=True)
    out = capsys.readouterr().out
    assert "using the model shipped with the book" in out and "use_shipped=False" in out and "min" in out
    assert (folder / CHECKPOINT).is_file() and not (folder / SHP.MANIFEST).exists()


def test_a_preset_without_shipped_models_says_how_long_and_where_they_ship(tmp_path, capsys):
    cfgs = {run: dataclasses.replace(cfg, out_dir=str(tmp_path / run)) for run, cfg in image_runs("gpu").items()}
    RS.training_notice(cfgs, use_shipped=True)
    out = capsys.readouterr().out
    assert "not trained yet for the 'gpu' preset" in out and "101 s on an H200" in out
    assert "%env CNET_PRESET=cpu" in out  # the preset whose models ship
    cpu = {run: dataclasses.replace(cfg, out_dir=str(tmp_path / run)) for run, cfg in image_runs(PRESET).items()}
    RS.training_notice(cpu, use_shipped=True)
    assert capsys.readouterr().out == "", "the cpu preset loads its shipped models: nothing to announce"
    RS.training_notice(cpu, use_shipped=False)
    assert "about 42 min" in capsys.readouterr().out


def test_the_shipped_studies_are_the_ones_the_chapters_ask_for(tmp_path):
    """A study whose grid, graphs or key changed since shipping would be recomputed in the chapters
    (minutes on a CPU): each run's sweep and the robustness study must be the current ones."""
    from cnet_lib.images.image_presets import robustness_grid, sweep_grid
    from cnet_lib.images.cached_studies import robustness_cache, sweep_cache

    runs = RS.trained_runs(smoke_settings(preset=PRESET, runs_dir=tmp_path), verbose=False)
    cpu = torch.device("cpu")
    for name, run in runs.items():
        path = sweep_cache(run, sweep_grid(PRESET), cpu)[0]
        assert path.name in _manifest(name)["files"], f"the shipped sweep of {name} is stale: python -m cnet_lib ship {PRESET} --restudy"
    path = robustness_cache(runs, robustness_grid(PRESET), cpu)[0]
    assert path.name in _manifest(RUNS[0])["files"], f"the shipped robustness study is stale: python -m cnet_lib ship {PRESET} --restudy"


def test_restudy_replaces_the_studies_and_keeps_the_training(tmp_path, monkeypatch, capsys):
    """``python -m cnet_lib ship PRESET --restudy`` on a tiny shipped preset: the studies follow the
    changed grid, the training record stays, every file matches its manifest again."""
    from cnet_lib.cli import ship as SH
    from cnet_lib.images import image_presets as P
    from cnet_lib.images.fake_data import write_fake_cifar

    data = tmp_path / "data"
    write_fake_cifar(data, n_train=64, n_test=32, seed=0)
    shipped = tmp_path / "shipped"
    monkeypatch.setattr(SHP, "SHIPPED", shipped)
    smoke = P.IMAGE_PRESETS["smoke"]
    tiny = {**smoke, "data": dict(dataset="cifar10", n_train=64, n_test=32),
            "common": {**smoke["common"], "channels": (2, 4, 4), "epochs": 1},
            "runs": {"rk4_refined": dict(scheme="rk4_classic", n_basis=1, refine_at=()),
                     "euler_fixed": dict(scheme="euler", n_basis=2)},
            "robustness": dict(smoke["robustness"], sigmas=(0.1,), bits=(8,))}
    monkeypatch.setitem(P.IMAGE_PRESETS, "smoke", tiny)
    settings = Settings(preset="smoke", data_dir=data, device="cpu")
    SH.ship(settings.replace(runs_dir=tmp_path / "train"), "fake data", "python -m cnet_lib ship smoke", dest=shipped)
    before = {run: json.loads((shipped / f"smoke-{run}" / SHP.MANIFEST).read_text()) for run in tiny["runs"]}
    old_study = [f for f in before["rk4_refined"]["files"] if f.startswith("robustness-")]
    monkeypatch.setitem(tiny, "robustness", dict(tiny["robustness"], sigmas=(0.2,)))
    SH.restudy(settings.replace(runs_dir=tmp_path / "fresh"), "python -m cnet_lib ship smoke --restudy", dest=shipped)
    for run in tiny["runs"]:
        folder = shipped / f"smoke-{run}"
        after = SHP.verify_shipped(folder)  # every file matches its recorded SHA-256
        for key in ("train_seconds", "history", "command", "identity_hash", "machine"):
            assert after[key] == before[run][key], key
        assert after["studies"]["command"] == "python -m cnet_lib ship smoke --restudy"
        assert all(isinstance(s, float) for s in after["studies"]["seconds"].values())
    new_study = [f for f in json.loads((shipped / "smoke-rk4_refined" / SHP.MANIFEST).read_text())["files"]
                 if f.startswith("robustness-")]
    assert len(old_study) == len(new_study) == 1 and old_study != new_study
    assert not (shipped / "smoke-rk4_refined" / old_study[0]).exists()
    assert "restudied rk4_refined" in capsys.readouterr().out
