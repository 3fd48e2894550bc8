"""Checkpoints stored in half precision and loaded as float32 (issue 45, item 4): what the book ships of its larger
models.  A 64-128-256 ContinuousNet's float16 weights fit the 16 MiB a file may have to come back from the GPU
machine (its float32 training checkpoint does not); a file that says how it stores its weights is read back as
float32, atomically written, with ``weights_only=True``; a wrong file or a wrong option is one clear sentence; a
shipped copy of a run is its rounded weights alone, evaluated again, and every study of it is a study of those
weights."""
from __future__ import annotations

import json
import shutil

import pytest
import torch

from cnet_lib.images.data.download import write_fake_cifar
from cnet_lib.images.runs.image_presets import sweep_grid
from cnet_lib.core.models import ContinuousNet
from cnet_lib.images.runs import run_store as RS, shipped as SHP, shipping as SC, shipping as SHW
from cnet_lib.images.training import train_state as TS
from cnet_lib.runtime.settings import Settings
from cnet_lib.studies.manifestation import run as sweep_runs, sweep_cache
from cnet_lib.cli import ship as SH
from cnet_lib.runtime import checkpoint as C

RETURN_LIMIT = 16 * 2**20
TINY = dict(n_train=64, n_test=32, batch_size=32, channels=(2, 4, 4), epochs=1)


def _state():
    torch.manual_seed(0)
    return {"w": torch.randn(5, 7) * 3, "b": torch.linspace(-1e-3, 1e-3, 4), "n": torch.tensor(7)}


@pytest.mark.parametrize("weights, tol", [("float16", 1e-3), ("bfloat16", 8e-3)])
def test_half_precision_weights_load_as_float32_rounded(tmp_path, weights, tol):
    path = tmp_path / "ck.pt"
    state = _state()
    C.save_checkpoint(path, state, {"a": 1}, {"epoch": 3}, weights=weights)
    assert [p.name for p in tmp_path.iterdir()] == ["ck.pt"], "written through a temporary file, none left behind"
    raw = torch.load(path, map_location="cpu", weights_only=True)
    assert raw["weights"] == weights and raw["model"]["w"].dtype == C.WEIGHTS[weights]
    assert raw["model"]["n"].dtype == torch.int64, "counters are stored as they are"
    ck = C.load_checkpoint(path, expected_config={"a": 1})
    assert ck["model"]["w"].dtype == torch.float32 and ck["model"]["n"].dtype == torch.int64
    assert torch.equal(ck["model"]["w"], state["w"].to(C.WEIGHTS[weights]).float())
    assert torch.allclose(ck["model"]["w"], state["w"], rtol=tol, atol=0)
    plain = tmp_path / "plain.pt"
    C.save_checkpoint(plain, state, {"a": 1})
    assert "weights" not in torch.load(plain, weights_only=True), "a float32 checkpoint is written as before"
    assert torch.equal(C.load_checkpoint(plain)["model"]["w"], state["w"])


def test_a_wrong_storage_or_a_wrong_file_is_one_clear_sentence(tmp_path):
    with pytest.raises(ValueError, match=r"weights='int8' is not a way to store.*float32, float16, bfloat16"):
        C.save_checkpoint(tmp_path / "x.pt", _state(), {}, weights="int8")
    assert not (tmp_path / "x.pt").exists()
    with pytest.raises(ValueError, match=r"tensor big holds values beyond float16's range.*bfloat16"):
        C.save_checkpoint(tmp_path / "x.pt", {"big": torch.tensor([1e5])}, {}, weights="float16")
    C.save_checkpoint(tmp_path / "big.pt", {"big": torch.tensor([1e5])}, {}, weights="bfloat16")  # bf16 has the range
    # a file that says float16 but holds float32 tensors, and one of a storage this version does not know
    torch.save({"format": 1, "config": {}, "model": {"w": torch.ones(2)}, "extra": {}, "weights": "float16"},
               tmp_path / "liar.pt")
    with pytest.raises(C.CheckpointError, match=r"says its weights are stored as float16, but its tensor w is float32"):
        C.load_checkpoint(tmp_path / "liar.pt")
    torch.save({"format": 1, "config": {}, "model": {"w": torch.ones(2)}, "extra": {}, "weights": "float8_e4m3"},
               tmp_path / "future.pt")
    with pytest.raises(C.CheckpointError, match=r"stores its weights as 'float8_e4m3'.*update cnet_lib"):
        C.load_checkpoint(tmp_path / "future.pt")


def test_a_failed_half_precision_save_keeps_the_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "ck.pt"
    C.save_checkpoint(path, _state(), {"a": 1}, weights="float16")
    before = path.read_bytes()

    def full_disk(obj, f):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", full_disk)
    with pytest.raises(C.CheckpointSaveError, match="the previous file there is intact"):
        C.save_checkpoint(path, {"w": torch.zeros(3)}, {"a": 1}, weights="float16")
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["ck.pt"]


def test_a_64_wide_models_float16_checkpoint_fits_the_return_limit(tmp_path):
    """The probe's 64-128-256 ContinuousNet at its final M = 4 (built, not trained): 7.35M parameters, about 29 MB in
    float32 (over the 16 MiB a file may have to come back from the GPU machine), about 14.7 MB stored as float16,
    with everything a shipped checkpoint holds besides the weights."""
    model = ContinuousNet(channels=(64, 128, 256), n_basis=4, scheme="rk4_classic")
    n = model.n_parameters()
    assert 7_300_000 < n < 7_400_000
    history = [{"epoch": e + 1, "test_acc": 0.9, "train_seconds": 5.0, "n_steps": [4] * 3} for e in range(40)]
    extra = {"epoch": 40, "history": history, "model_config": model.config(),
             "manifestation": [list(m) for m in model.manifestation], "run_config": {}, "environment": {},
             "started_utc": ""}
    sizes = {}
    for weights in ("float32", "float16", "bfloat16"):
        path = tmp_path / f"{weights}.pt"
        C.save_checkpoint(path, model.state_dict(), {"channels": [64, 128, 256]}, extra, weights=weights)
        sizes[weights] = path.stat().st_size
    assert sizes["float32"] > RETURN_LIMIT, "the float32 weights alone would not come back"
    assert sizes["float16"] < 15_000_000 and sizes["bfloat16"] < 15_000_000, sizes
    loaded, ck = TS.load_model(tmp_path / "float16.pt", "cpu")
    assert all(p.dtype == torch.float32 for p in loaded.parameters()) and ck["weights"] == "float16"


@pytest.fixture(scope="module")
def tiny_runs(tmp_path_factory):
    data = tmp_path_factory.mktemp("data")
    write_fake_cifar(data, n_train=64, n_test=32, seed=0)
    settings = Settings(preset="smoke", runs_dir=tmp_path_factory.mktemp("runs"), data_dir=data, device="cpu")
    runs = RS.trained_runs(settings, verbose=False, use_shipped=False, **TINY)
    return settings, runs


def test_a_shipping_copy_is_its_rounded_weights_evaluated_again_and_studied_as_such(tiny_runs, tmp_path):
    settings, runs = tiny_runs
    run = runs["euler_fixed"]
    copy = SC.shipping_copy(run, "float16")
    assert copy.out_dir == SC.copy_dir(run, "float16") and copy.out_dir.parent == run.out_dir.parent
    raw = torch.load(copy.checkpoint, map_location="cpu", weights_only=True)
    assert raw["weights"] == "float16" and set(raw["extra"]) == set(TS.SHIPPED_EXTRA), "no optimizer, no RNG states"
    assert copy.checkpoint.stat().st_size < run.checkpoint.stat().st_size / 2  # a tiny model: mostly the file's own bytes
    for (name, p), q in zip(copy.model.state_dict().items(), run.model.state_dict().values()):
        if torch.is_tensor(p) and p.is_floating_point():
            assert p.dtype == torch.float32 and torch.equal(p, q.half().float()), name
    last = copy.history[-1]
    assert last["test_acc_trained"] == run.final_accuracy and last["weights"] == "float16"
    assert copy.final_accuracy == last["test_acc"] and 0 <= copy.final_accuracy <= 1
    # made once per training checkpoint: a second call reuses it (same bytes, so every cached study stays valid)
    digest = copy.checkpoint_digest
    assert SC.shipping_copy(run, "float16").checkpoint_digest == digest
    # the sweep of the copy is keyed by the copy's checkpoint and reproduces its final accuracy
    sweep_runs({"euler_fixed": copy}, verbose=False)
    path, key = sweep_cache(copy, sweep_grid("smoke"), settings.device)
    assert path.parent == copy.out_dir and key["checkpoint"] == digest[:12]
    rows = json.loads(path.read_text())["rows"]
    trained = next(r for r in rows if r["kind"] == "trained")
    assert trained["accuracy"] == pytest.approx(copy.final_accuracy)
    # shipped: the manifest says how the weights are stored, and the folder loads as float32
    record = {**{k: "x" for k in ("command", "description", "created_utc")}, "weights": "float16",
              "sweeps_and_robustness_seconds": 1.0, "wall_seconds_of_this_command": 1.0}
    folder = SHW.ship_run(copy, tmp_path / "smoke-euler_fixed", [TS.CHECKPOINT, TS.RESULTS, path.name], record)
    manifest = SHP.verify_shipped(folder)
    assert manifest["weights"] == "float16" and manifest["final_test_acc"] == copy.final_accuracy
    assert manifest["final_test_acc_trained"] == run.final_accuracy
    assert SC.SOURCE not in manifest["files"], "the copy's note of its source does not ship"
    model, ck = TS.load_model(folder, "cpu")
    assert ck["extra"]["history"][-1]["test_acc"] == manifest["final_test_acc"]


def test_a_shipped_copy_cannot_be_continued_but_loads_when_finished(tiny_runs, tmp_path):
    settings, runs = tiny_runs
    copy = SC.shipping_copy(runs["rk4_refined"], "bfloat16")
    longer = tmp_path / "longer"
    shutil.copytree(copy.out_dir, longer)
    cfg = copy.config.__class__(**{**copy.config.__dict__, "out_dir": str(longer), "epochs": 3, "resume": True})
    from cnet_lib.images.training.train_loop import train

    with pytest.raises(C.CheckpointError, match=r"weights alone .* 1 of the 3 epochs asked for, so it cannot be continued"):
        train(cfg)
    done = train(copy.config.__class__(**{**copy.config.__dict__, "resume": True}))
    assert done.final_accuracy == copy.final_accuracy, "a finished copy just loads"


def test_ship_and_its_command_line_take_the_storage(tmp_path, capsys):
    with pytest.raises(ValueError, match=r"weights='half': choose one of float32, float16, bfloat16"):
        SH.ship(Settings(preset="smoke", runs_dir=tmp_path), "fake", "cmd", dest=tmp_path / "s", weights="half")
    for argv, said in ((["smoke", "--restudy", "--weights", "float16"], "--restudy keeps the shipped checkpoints as"),
                       (["smoke", "--weights", "int4", "--data-description", "x"], "invalid choice: 'int4'")):
        with pytest.raises(SystemExit) as done:
            SH.main(argv)
        assert done.value.code == 2 and said in capsys.readouterr().err
