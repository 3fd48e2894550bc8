"""The trained models that ship with the book (``cnet_lib/shipped/``, written by ``python -m cnet_lib ship``).

The ``cpu`` preset's two image models ship in the repository with a manifest (the ``gpu`` preset's too: every
shipping preset gets the same checks).  These tests fail when
a change to the preset makes them stale (their identity hash is no longer the preset's), when a
file differs from the checksum its manifest records, or when a shipped checkpoint does not load
as the preset's model; and they check that a stale model is never picked up.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch
from shipped_checks import check_preset_folders
from smoke_data import smoke_settings

from cnet_lib.images.runs.image_presets import image_runs, sweep_grid as image_presets_sweep
from cnet_lib.images.training.train_state import CHECKPOINT
from cnet_lib.images.runs import image_presets as RF, run_store as RS, shipped as SHP
from cnet_lib.runtime.progress import duration
from cnet_lib.runtime.settings import Settings
from cnet_lib.book import measurements as M
from cnet_lib.studies import robustness

ROOT = Path(__file__).resolve().parents[1]
PRESET = "cpu"
RUNS = list(image_runs(PRESET))
SHIPPING = sorted(set(SHP.shipping_presets()) | {PRESET})
"""The presets whose models ship (the cpu preset always; the gpu preset once its models are shipped)."""


def _retrain(preset: str) -> str:
    if preset == "gpu":
        return ("train and ship them again on a GPU (the book's page On a GPU, \"Shipping them\": cnet ship gpu --device "
                "cuda, then scripts/seeds_file.py gpu --train --studies), then commit cnet_lib/shipped/")
    return ("retrain and ship them again with `CNET_DATA_DIR=<folder with the 45k-image cifar-10-batches-py> "
            f"python -m cnet_lib ship {preset} --data-description \"...\"` (about an hour on 2 cores), and commit "
            "cnet_lib/shipped/")


def _manifest(run: str) -> dict:
    return json.loads((SHP.SHIPPED / f"{PRESET}-{run}" / SHP.MANIFEST).read_text())


@pytest.mark.parametrize("preset", SHIPPING)
def test_every_shipped_preset_matches_its_manifests_and_its_preset(preset):
    """Identity hash, checksums, loading as the preset's model, and the size bound (cpu 5 MB a folder as
    before, in all; gpu 12 MB in all): tests/shipped_checks.py."""
    manifests = check_preset_folders(SHP.SHIPPED, preset, _retrain(preset))
    for m in manifests:
        assert SHP.shipped_run(image_runs(preset)[m["run"]]) == SHP.SHIPPED / f"{preset}-{m['run']}"
    if preset == "gpu":  # the GPU's name and the other seeds' numbers came along
        assert all("cuda" in str(m["machine"].get("device", "")) for m in manifests)
        assert any("seeds.json" in m["files"] for m in manifests)


def test_on_a_gpu_without_bf16_the_chapters_load_the_shipped_gpu_sweeps(tmp_path, monkeypatch, capsys):
    """On a T4 (CUDA, no bf16) a sweep's key says float32, the shipped one was computed with bf16 autocast:
    the shipped sweep is loaded, and said so, instead of minutes of recomputing it (a reader's own model is
    swept there as before)."""
    from cnet_lib.images.runs import run_loading as SR
    from cnet_lib.studies.manifestation import study as CS

    runs = RS.trained_runs(smoke_settings(preset="gpu", runs_dir=tmp_path), verbose=False)
    monkeypatch.setattr(CS, "amp_dtype", lambda device: None)  # a GPU without bf16
    monkeypatch.setattr(SR, "resolve_device", lambda device: torch.device("cuda"))
    capsys.readouterr()
    sweeps = CS.run(runs, device="cuda", verbose=True)
    out = capsys.readouterr().out
    assert out.count("which this GPU lacks") == len(runs) and "NVIDIA H100" in out
    cuda = torch.device("cuda")
    for name, rows in sweeps.items():
        fp32_path, fp32_key = CS.sweep_cache(runs[name], image_presets_sweep("gpu"), cuda)
        assert fp32_key["amp"] is False and not fp32_path.exists(), "nothing was swept or written in float32"
        bf16_path = runs[name].out_dir / f"sweep-{RF.short_hash({**fp32_key, 'amp': True}, 12)}.json"
        assert rows == json.loads(bf16_path.read_text())["rows"], "the shipped (bf16) sweep's rows"
    own = {n: dataclasses.replace(r, shipped=False) for n, r in runs.items()}
    assert all(CS._shipped_bf16_sweep(r, {"amp": False}, torch.device("cuda")) == () for r in own.values())


def test_on_a_cpu_the_gpu_presets_shipped_studies_load_and_say_where_they_ran(tmp_path, capsys):
    """The gpu preset's studies were computed on a GPU; on a CPU their keys name the CPU.  They are the book's
    measurements: read, never computed again silently (the adaptive-step study took a quarter of an hour on two
    cores), and the line that reads one says where it ran and in what arithmetic.  A reader's own models are
    studied where they are, and a shipped run whose study must be computed after all says so first."""
    from cnet_lib.studies import adaptive
    from cnet_lib.studies import runner as SS
    from cnet_lib.studies import runner as SC
    from cnet_lib.studies.manifestation import study as CS

    runs = RS.trained_runs(smoke_settings(preset="gpu", runs_dir=tmp_path), verbose=False)
    capsys.readouterr()
    cpu = torch.device("cpu")
    sweeps = CS.run(runs, device="cpu")
    study = robustness.run(runs, device="cpu")
    ad = adaptive.run(runs, device="cpu")
    out = capsys.readouterr().out
    assert out.count("shipped with the book, so its numbers are shown here") == len(runs) + 2, out
    assert "NVIDIA H100 80GB HBM3 GPU" in out and "bf16 autocast" in out and "TF32 convolutions" in out
    assert str(tmp_path) not in out and "<tmp>" not in out, "no folder of this machine in what a page shows"
    for name, rows in sweeps.items():
        path, key = CS.sweep_cache(runs[name], image_presets_sweep("gpu"), cpu)
        assert key["device"] == "cpu" and not path.exists(), "nothing was swept or written on the CPU"
        shipped = [f for f in SS.shipped_stand_ins(runs[name], CS.SWEEP_PREFIX, key)]
        assert len(shipped) == 1 and rows == json.loads(shipped[0].path.read_text())["rows"]
    assert set(study) == set(robustness.study.GRAPHS) and ad["environment"]["device"].startswith("cuda")
    own = {n: dataclasses.replace(r, shipped=False) for n, r in runs.items()}
    assert SS.shipped_stand_ins(own["rk4_refined"], CS.SWEEP_PREFIX, key) == ()
    SS.announce_recompute(runs["rk4_refined"], adaptive.PREFIX, "the adaptive-step study")
    said = capsys.readouterr().out
    assert "computed now" in said and "13 s on an NVIDIA H100 80GB HBM3 GPU" in said
    SS.announce_recompute(own["rk4_refined"], adaptive.PREFIX, "the adaptive-step study")
    assert capsys.readouterr().out == ""
    assert SC.precision({"key": {}, "environment": {"device": "cuda:0"}, "tf32": False}) == "float32"
    assert SC.ran_on({"environment": {"device": "cpu", "device_name": "AMD EPYC", "cpu_count": 2,
                                      "platform": "Linux-6.18-x86_64-with-glibc2.36"}}) == "a 2-core x86_64 CPU"


def test_a_changed_preset_never_picks_up_the_shipped_model():
    cfg = image_runs(PRESET)[RUNS[0]]
    assert SHP.shipped_run(cfg) is not None
    assert SHP.shipped_run(dataclasses.replace(cfg, epochs=cfg.epochs + 1)) is None
    assert SHP.shipped_run(dataclasses.replace(cfg, lr=cfg.lr * 2)) is None
    assert SHP.shipped_run(dataclasses.replace(cfg, preset="smoke")) is None


def test_installed_package_carries_the_shipped_models():
    """Colab installs the package from the repository (not editable): the models must be package data."""
    import tomllib

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "shipped/*/*" in pyproject["tool"]["setuptools"]["package-data"]["cnet_lib"]
    ignore = (ROOT / ".gitignore").read_text()
    assert "!cnet_lib/shipped/**/*.pt" in ignore, "*.pt is ignored: the shipped checkpoints would never be committed"


def test_the_book_loads_the_shipped_model_and_says_so(tmp_path, capsys):
    cfg = image_runs(PRESET)[RUNS[0]]
    folder = tmp_path / "run"
    assert SHP.install_shipped(folder, dataclasses.replace(cfg, out_dir=str(folder)), "RK4", verbose=True)
    out = capsys.readouterr().out
    assert "using the model shipped with the book" in out and "use_shipped=False" in out
    assert "GPU" not in out and "quality" not in out, "where it was trained is a margin note's, not a cell's (issue 53)"
    assert (folder / CHECKPOINT).is_file() and not (folder / SHP.MANIFEST).exists()


def test_loading_a_model_trained_in_under_a_minute_says_seconds(tmp_path, capsys):
    """The H100 session's chapter log said "0 min of training" for the gpu Euler model (25 s): durations are
    words from runtime.progress.duration (the chapters' margin notes say them, from the run's provenance)."""
    assert [duration(s) for s in (24.9, 89, 90, 360.7, 600, 2943)] == ["25 s", "89 s", "1.5 min", "6.0 min", "10 min",
                                                                        "49 min"]


def test_a_preset_without_shipped_models_says_how_long_and_where_they_ship(tmp_path, capsys):
    cfgs = {run: dataclasses.replace(cfg, out_dir=str(tmp_path / run)) for run, cfg in image_runs("paper").items()}
    RS.training_notice(cfgs, use_shipped=True)
    out = capsys.readouterr().out
    assert "not trained yet for the 'paper' preset" in out and "hours on a GPU" in out
    assert "%env CNET_PRESET=cpu" in out and "'gpu'" in out  # the presets whose models ship
    for preset in SHIPPING:
        mine = {run: dataclasses.replace(cfg, out_dir=str(tmp_path / preset / run)) for run, cfg in image_runs(preset).items()}
        RS.training_notice(mine, use_shipped=True)
        assert capsys.readouterr().out == "", f"the {preset} preset loads its shipped models: nothing to announce"
    RS.training_notice({run: dataclasses.replace(cfg, out_dir=str(tmp_path / run)) for run, cfg in image_runs(PRESET).items()},
                       use_shipped=False)
    assert "about 42 min" in capsys.readouterr().out


def test_the_gpu_preset_ships_and_says_how_long_training_it_takes(tmp_path, capsys):
    """The gpu preset's models ship (a reader on a GPU waits for nothing); asked to train, the notice gives
    the measured H100 time (issue 24), and the setup cell the T4 estimate beside it where the repository's
    measurements are."""
    assert "gpu" in SHIPPING, "the gpu preset's models are not in cnet_lib/shipped/: " + _retrain("gpu")
    cfgs = {run: dataclasses.replace(cfg, out_dir=str(tmp_path / run)) for run, cfg in image_runs("gpu").items()}
    RS.training_notice(cfgs, use_shipped=False)
    out = capsys.readouterr().out
    assert "not trained yet for the 'gpu' preset" in out and "88 s on an H100 (measured" in out
    assert "26 min on a T4 (an estimate)" in M.training_words("gpu")
    seconds = {m: json.loads((SHP.SHIPPED / f"gpu-{m}" / SHP.MANIFEST).read_text())["train_seconds"] for m in cfgs}
    assert round(seconds["rk4_refined"]) == 63 and round(seconds["euler_fixed"]) == 25 and round(sum(seconds.values())) == 88


def test_the_t4_estimate_is_computed_from_the_shipped_records_in_any_install(tmp_path, monkeypatch):
    """The setup cell's T4 estimate comes from the shipped records (results files and sweeps), so a Colab reader's
    install, which has no benchmarks/, shows it, and twice the training time on the same GPU adds the training seconds
    times the stated assumptions (float32 over bf16 27.0/16.2, the peaks 67 over 8.1 TFLOP/s)."""
    from cnet_lib.runtime import device as GE

    before, trained = M.t4_estimate("gpu"), 0.0
    for run in image_runs("gpu"):
        folder = tmp_path / f"gpu-{run}"
        folder.mkdir()
        for name in json.loads((SHP.SHIPPED / f"gpu-{run}" / SHP.MANIFEST).read_text())["files"]:
            if name.startswith("sweep-") or name == "results.json":
                (folder / name).write_bytes((SHP.SHIPPED / f"gpu-{run}" / name).read_bytes())
        (folder / SHP.MANIFEST).write_bytes((SHP.SHIPPED / f"gpu-{run}" / SHP.MANIFEST).read_bytes())
        record = json.loads((folder / "results.json").read_text())
        trained += sum(h["train_seconds"] for h in record["history"])
        record["history"] = [dict(h, train_seconds=2 * h["train_seconds"]) for h in record["history"]]
        (folder / "results.json").write_text(json.dumps(record))
    monkeypatch.setattr(SHP, "SHIPPED", tmp_path)
    monkeypatch.setattr(M, "results_dir", lambda root=None: tmp_path / "no-benchmarks")  # a wheel: no benchmarks/
    assert M.t4_estimate("gpu") == pytest.approx(before + trained * (27.0 / 16.2) * (67.0 / 8.1) / 60, rel=1e-12)
    assert "on a T4 (an estimate)" in M.training_words("gpu")
    assert (GE.fp32_tflops("NVIDIA H100 80GB HBM3"), GE.fp32_tflops("NVIDIA H100 PCIe"), GE.fp32_tflops("Tesla T4"),
            GE.fp32_tflops("NVIDIA H200"), GE.fp32_tflops("NVIDIA A100-SXM4-40GB")) == (67.0, 51.2, 8.1, 67.0, None)
    assert GE.t4_estimate({"a": {"train": 1.0, "eval": 0.0, "sweep": 0.0}}, "NVIDIA A100") == {}


def _recorded_training(folder: Path) -> tuple:
    """``(seconds, machine, seed)`` of a shipped run, from its results file, after checking that its manifest
    records the same seconds and machine."""
    record = json.loads((folder / "results.json").read_text())
    manifest = json.loads((folder / SHP.MANIFEST).read_text())
    seconds = sum(h["train_seconds"] for h in record["history"])
    assert seconds == pytest.approx(manifest["train_seconds"], rel=1e-12), f"{folder.name}: its two records disagree"
    assert record["environment"] == manifest["machine"], f"{folder.name}: its two records name other machines"
    return seconds, record["environment"], record["seed"]


@pytest.mark.parametrize("preset", SHIPPING)
def test_the_training_time_words_are_the_shipped_records(preset):
    """The training time the setup cell and the training notice quote is the shipped models' records: the total and
    each run's seconds as the book rounds a duration, the machine, the training seed; one machine and one seed."""
    recorded = {run: _recorded_training(SHP.SHIPPED / f"{preset}-{run}") for run in image_runs(preset)}
    said = SHP.expected_training(preset)
    total = duration(sum(s for s, _, _ in recorded.values()))
    assert f"{total} on " in said or f"about {total} for both models" in said, (said, total)
    assert f"RK4 refined {duration(recorded['rk4_refined'][0])}," in said and f"Euler {duration(recorded['euler_fixed'][0])})" in said
    (_, machine, seed), = {(0, json.dumps(m, sort_keys=True), s) for _, m, s in recorded.values()}
    machine = json.loads(machine)
    name = machine["device_name"].split()[1] if machine["device"].startswith("cuda") else f"{machine['cpu_count']}-core CPU"
    assert f" {name} " in said and ("training seed" not in said or f"training seed {seed}:" in said), said
    assert said in M.training_words(preset)


def test_a_changed_record_changes_the_training_time_words(tmp_path, monkeypatch):
    """The words are computed from the records, not typed: shipped models that trained twice as long on another GPU
    are quoted so; without them the preset says it was not measured, and without benchmarks/ (a Colab
    reader's install) the words are the same; a GPU without a known peak gets no T4 estimate."""
    for run in image_runs("gpu"):
        folder = tmp_path / f"gpu-{run}"
        folder.mkdir()
        for name in (SHP.MANIFEST, "results.json"):
            (folder / name).write_bytes((SHP.SHIPPED / f"gpu-{run}" / name).read_bytes())
        record = json.loads((folder / "results.json").read_text())
        record["history"] = [dict(h, train_seconds=2 * h["train_seconds"]) for h in record["history"]]
        record["environment"] = dict(record["environment"], device_name="NVIDIA A100 80GB PCIe")
        (folder / "results.json").write_text(json.dumps(record))
    before = SHP.expected_training("gpu")
    monkeypatch.setattr(SHP, "SHIPPED", tmp_path)
    said = SHP.expected_training("gpu")
    assert said != before and said == ("both models in 2.9 min on an A100 (measured, training seed 0: RK4 refined "
                                       "2.1 min, Euler 50 s)"), said
    monkeypatch.setattr(M, "results_dir", lambda root=None: tmp_path / "no-benchmarks")  # a wheel: no benchmarks/
    assert M.training_words("gpu") == said  # an A100 (no peak in the table), no sweep: no T4 estimate
    (tmp_path / "gpu-euler_fixed" / "results.json").unlink()
    assert SHP.expected_training("gpu") == "not measured (no trained models of the 'gpu' preset ship with this install)"


def test_the_gpu_preset_ships_three_training_seeds():
    """seeds.json beside the gpu preset's seed-0 models: seeds 0, 1, 2, each with both runs' checkpoints,
    accuracies, sweeps and robustness study; seed 0 is the shipped checkpoints themselves."""
    from cnet_lib.studies.runner import SEEDS_FILE, read_seeds_file

    payload = read_seeds_file(SHP.SHIPPED / "gpu-rk4_refined" / SEEDS_FILE)
    assert payload is not None and payload["preset"] == "gpu"
    assert [r["seed"] for r in payload["seeds"]] == [0, 1, 2]
    runs = list(image_runs("gpu"))
    for record in payload["seeds"]:
        assert set(record["runs"]) == set(runs) == set(record["sweeps"])
        assert record["robustness"], f"seed {record['seed']} has no robustness study"
        assert all(0.5 < record["runs"][r]["final_test_acc"] < 1 for r in runs)
    digests = {r["checkpoint_sha256"] for rec in payload["seeds"] for r in rec["runs"].values()}
    assert len(digests) == 3 * len(runs), "every seed's checkpoints differ"
    for run in runs:
        manifest = json.loads((SHP.SHIPPED / f"gpu-{run}" / SHP.MANIFEST).read_text())
        seed0 = payload["seeds"][0]["runs"][run]
        assert seed0["checkpoint_sha256"] == manifest["files"][CHECKPOINT]
        assert seed0["final_test_acc"] == manifest["final_test_acc"]


def test_the_shipped_gpu_studies_are_the_ones_a_chapter_on_a_gpu_asks_for(tmp_path, monkeypatch):
    """On a CUDA GPU with bf16 (A100, L4, H100: the GPU they were computed on) the chapters load the shipped
    sweeps, robustness and adaptive-step studies instead of recomputing them.  (On a GPU without bf16, a T4,
    the sweep's key differs, amp off: the sweeps are recomputed once there, README "On a GPU".)"""
    from cnet_lib.studies.manifestation import study as CS
    from cnet_lib.studies.adaptive import study as AS
    from cnet_lib.images.runs.image_presets import sweep_grid

    runs = RS.trained_runs(smoke_settings(preset="gpu", runs_dir=tmp_path), verbose=False)
    assert all(run.shipped for run in runs.values())
    monkeypatch.setattr(CS, "amp_dtype", lambda device: torch.bfloat16 if torch.device(device).type == "cuda" else None)
    cuda = torch.device("cuda")
    files = {m: json.loads((SHP.SHIPPED / f"gpu-{m}" / SHP.MANIFEST).read_text())["files"] for m in runs}
    for name, run in runs.items():
        assert CS.sweep_cache(run, sweep_grid("gpu"), cuda)[0].name in files[name], f"the shipped gpu sweep of {name} is stale"
    first = next(iter(runs))
    assert robustness.study.cache_path(runs, robustness.preset_grid("gpu"), cuda)[0].name in files[first], "the shipped gpu robustness study is stale"
    assert AS._cache(runs, AS._key_grid(runs, None), cuda).path.name in files[first], "the shipped gpu adaptive study is stale"


def test_the_shipped_studies_are_the_ones_the_chapters_ask_for(tmp_path):
    """A study whose grid, graphs or key changed since shipping would be recomputed in the chapters
    (minutes on a CPU): each run's sweep and the robustness study must be the current ones."""
    from cnet_lib.images.runs.image_presets import sweep_grid
    from cnet_lib.studies.manifestation.study import sweep_cache

    runs = RS.trained_runs(smoke_settings(preset=PRESET, runs_dir=tmp_path), verbose=False)
    cpu = torch.device("cpu")
    for name, run in runs.items():
        path = sweep_cache(run, sweep_grid(PRESET), cpu)[0]
        assert path.name in _manifest(name)["files"], f"the shipped sweep of {name} is stale: python -m cnet_lib ship {PRESET} --restudy"
    path = robustness.study.cache_path(runs, robustness.preset_grid(PRESET), cpu)[0]
    assert path.name in _manifest(RUNS[0])["files"], f"the shipped robustness study is stale: python -m cnet_lib ship {PRESET} --restudy"
    from cnet_lib.studies import adaptive

    path = adaptive.study_file(runs, device=cpu)
    assert path.name in _manifest(RUNS[0])["files"], f"the shipped adaptive-step study is stale: python -m cnet_lib ship {PRESET} --restudy"


def test_restudy_replaces_the_studies_and_keeps_the_training(tmp_path, monkeypatch, capsys):
    """``python -m cnet_lib ship PRESET --restudy`` on a tiny shipped preset: the studies follow the
    changed grid, the training record stays, every file matches its manifest again."""
    from cnet_lib.cli import ship as SH
    from cnet_lib.images.runs import image_presets as P
    from cnet_lib.images.data.download import write_fake_cifar

    data = tmp_path / "data"
    write_fake_cifar(data, n_train=64, n_test=32, seed=0)
    shipped = tmp_path / "shipped"
    monkeypatch.setattr(SHP, "SHIPPED", shipped)
    smoke = P.IMAGE_PRESETS["smoke"]
    tiny = {**smoke, "data": dict(dataset="cifar10", n_train=64, n_test=32),
            "common": {**smoke["common"], "channels": (2, 4, 4), "epochs": 1},
            "runs": {"rk4_refined": dict(scheme="rk4_classic", n_basis=1, refine_at=()),
                     "euler_fixed": dict(scheme="euler", n_basis=2)}}
    monkeypatch.setitem(P.IMAGE_PRESETS, "smoke", tiny)
    monkeypatch.setitem(robustness.study.GRIDS, "smoke", dict(robustness.study.GRIDS["smoke"], sigmas=(0.1,), bits=(8,)))
    settings = Settings(preset="smoke", data_dir=data, device="cpu")
    SH.ship(settings.replace(runs_dir=tmp_path / "train"), "fake data", "python -m cnet_lib ship smoke", dest=shipped)
    before = {run: json.loads((shipped / f"smoke-{run}" / SHP.MANIFEST).read_text()) for run in tiny["runs"]}
    old_study = [f for f in before["rk4_refined"]["files"] if f.startswith("robustness-")]
    monkeypatch.setitem(robustness.study.GRIDS, "smoke", dict(robustness.study.GRIDS["smoke"], sigmas=(0.2,)))
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
    adaptive = [f for f in before["rk4_refined"]["files"] if f.startswith("adaptive-")]
    restudied = json.loads((shipped / "smoke-rk4_refined" / SHP.MANIFEST).read_text())
    assert len(adaptive) == 1 and adaptive[0] in restudied["studies"]["seconds"]  # shipped, and kept by the restudy
    assert "restudied rk4_refined" in capsys.readouterr().out
