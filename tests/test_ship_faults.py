"""``python -m cnet_lib ship`` reads and copies the files of a runs folder that anyone who can write it may have
changed (issue 33's leftovers): a run's ``results.json``, its studies and checkpoint, and the shipped manifests that
``--restudy`` rewrites.  Each is read by the library's checked readers (no link followed, never blocking, at most a
bounded size, its types checked): a damaged, huge, deeply nested, wrong-typed or linked file gives one sentence
naming it and what to do, never a traceback, and the shipped folder is left as it was.

Before, ship read them with ``json.loads(path.read_text())`` and ``shutil.copyfile``: a link was followed (its
target shipped), deep nesting said "maximum recursion depth exceeded" without the file, a list raised
``AttributeError`` (a traceback), and a cut-off file said only ``Expecting value``.
"""
from __future__ import annotations

import json
import os
import shutil

import pytest

from cnet_lib.images.data.download import write_fake_cifar
from cnet_lib.images.training.train_state import CHECKPOINT, RESULTS
from cnet_lib.images.runs import run_store as RS, shipped as SHP, shipping as SHW
from cnet_lib.runtime.settings import Settings
from cnet_lib.cli import ship as SH

TINY = dict(n_train=64, n_test=32, batch_size=32, channels=(2, 4, 4), epochs=1)
RECORD = {"command": "python -m cnet_lib ship smoke", "description": "fake data", "sweeps_and_robustness_seconds": 1.0,
          "wall_seconds_of_this_command": 2.0, "created_utc": "2026-11-27T00:00:00Z"}
AGAIN = "delete it (or move it aside) and run the same command again: "


def _nested(path):
    path.write_text("[" * 100_000 + "]" * 100_000)


def _huge(path):
    path.unlink()
    with open(path, "wb") as f:
        f.truncate(100 << 20)


def _linked(path):
    """A link to a whole copy of the file: following it would read a good file."""
    target = path.with_name(f"elsewhere-{path.name}")
    shutil.copyfile(path, target)
    path.unlink()
    path.symlink_to(target)


def _rewrite(change):
    def damage(path):
        record = json.loads(path.read_text())
        change(record)
        path.write_text(json.dumps(record))
    return damage


JSON_DAMAGE = {
    "cut off": (lambda p: p.write_text(p.read_text()[: len(p.read_text()) // 2]), "it is cut off or not JSON"),
    "100 MB": (_huge, "it holds 100 MiB, more than such a file ever does"),
    "deeply nested": (_nested, "it is nested too deeply to be read"),
    "a list": (lambda p: p.write_text("[]"), "it holds a JSON list, not a"),
    "a link": (_linked, "it is a symbolic link, not a file (nothing was read through it)"),
}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    data = tmp_path_factory.mktemp("data")
    write_fake_cifar(data, n_train=64, n_test=32, seed=0)
    settings = Settings(preset="smoke", runs_dir=tmp_path_factory.mktemp("runs"), data_dir=data, device="cpu")
    RS.trained_runs(settings, runs=["euler_fixed"], verbose=False, use_shipped=False, **TINY)
    return settings


@pytest.fixture
def shipped(trained, tmp_path):
    """A copy of the trained run, shipped once (the folder a damaged run file must leave as it is)."""
    settings = trained.replace(runs_dir=tmp_path / "runs")
    shutil.copytree(trained.runs_dir, settings.runs_dir)
    run = RS.trained_runs(settings, runs=["euler_fixed"], verbose=False, use_shipped=False, **TINY)["euler_fixed"]
    folder = SHW.ship_run(run, tmp_path / "shipped" / "smoke-euler_fixed", [CHECKPOINT, RESULTS], RECORD)
    return run, folder, SHP.verify_shipped(folder)


def _ship_again(run, folder, before: dict, keep=(CHECKPOINT, RESULTS)) -> str:
    with pytest.raises(SH.ShipError) as err:
        SHW.ship_run(run, folder, list(keep), RECORD)
    assert SHP.verify_shipped(folder) == before, "the shipped folder was changed"
    msg = str(err.value)
    assert "\n" not in msg and "Traceback" not in msg
    return msg


@pytest.mark.parametrize("damage", [*JSON_DAMAGE, "environment a string", "seconds a string"])
def test_a_damaged_results_file_is_said_in_one_sentence_and_nothing_is_shipped(shipped, damage):
    run, folder, before = shipped
    path = run.out_dir / RESULTS
    plant, said = {**JSON_DAMAGE,
                   "environment a string": (_rewrite(lambda r: r.update(environment="cpu")), None),
                   "seconds a string": (_rewrite(lambda r: r.update(train_seconds_total="1 s")), None)}[damage]
    plant(path)
    msg = _ship_again(run, folder, before)
    said = said or "its environment or train_seconds_total is not what training writes"
    assert msg.startswith(f"{path} cannot be shipped: {said}"), msg
    assert msg.endswith(f"{AGAIN}it is written again from the run's checkpoint"), msg


@pytest.mark.parametrize("name, then", [(CHECKPOINT, "the run is trained again"),
                                        ("sweep-abc.json", "the study is computed again")])
def test_a_link_in_place_of_a_shipped_file_is_never_followed(shipped, name, then):
    run, folder, before = shipped
    path = run.out_dir / name
    if not path.exists():
        path.write_text('{"seconds": 1.0}')
    _linked(path)
    msg = _ship_again(run, folder, before, keep=(CHECKPOINT, RESULTS, name))
    assert msg == (f"{path} cannot be shipped: it is a symbolic link, not a file (nothing was read through it); "
                   f"{AGAIN}{then}")


def test_a_damaged_second_run_leaves_every_shipped_folder_as_it_was(shipped, tmp_path):
    """Ship writes every run's new folder beside its place first and replaces the shipped folders only when all are
    written: a link among the second run's files leaves the first run's folder as it was too (it was shipped anew
    before the second was checked), and no staged folder behind."""
    run, folder, before = shipped
    other = SHW.ship_run(run, tmp_path / "shipped" / "smoke-other", [CHECKPOINT, RESULTS], RECORD)
    other_before = SHP.verify_shipped(other)
    (run.out_dir / "sweep-new.json").write_text('{"seconds": 2.0}')  # what the first run's new folder would add
    (run.out_dir / "sweep-abc.json").write_text('{"seconds": 1.0}')
    _linked(run.out_dir / "sweep-abc.json")
    with pytest.raises(SH.ShipError, match="sweep-abc.json cannot be shipped: it is a symbolic link"):
        SHW.write_shipped([(run, other, [CHECKPOINT, RESULTS, "sweep-new.json"]),
                       (run, folder, [CHECKPOINT, RESULTS, "sweep-abc.json"])], RECORD)
    assert SHP.verify_shipped(other) == other_before and SHP.verify_shipped(folder) == before
    assert sorted(p.name for p in (tmp_path / "shipped").iterdir()) == ["smoke-euler_fixed", "smoke-other"]
    (run.out_dir / "sweep-abc.json").unlink()
    SHW.write_shipped([(run, other, [CHECKPOINT, RESULTS, "sweep-new.json"])], RECORD)
    assert "sweep-new.json" in SHP.verify_shipped(other)["files"]


@pytest.mark.parametrize("damage", [*JSON_DAMAGE, "seconds a string"])
def test_a_damaged_study_file_is_said_in_one_sentence(tmp_path, damage):
    path = tmp_path / "robustness-abc.json"
    path.write_text(json.dumps({"key": {}, "seconds": 12.5, "rows": []}))
    assert SHW.study_seconds(path) == 12.5
    plant, said = {**JSON_DAMAGE, "seconds a string": (_rewrite(lambda r: r.update(seconds="long")), None)}[damage]
    plant(path)
    with pytest.raises(SH.ShipError) as err:
        SHW.study_seconds(path)
    said = said or "its seconds is 'long', not a time"
    assert str(err.value).startswith(f"{path} cannot be shipped: {said}"), str(err.value)
    assert str(err.value).endswith(f"{AGAIN}the study is computed again")


@pytest.fixture
def manifests(tmp_path, monkeypatch):
    """Two shipped folders of the smoke preset, each with a small whole manifest; nothing is computed."""
    monkeypatch.setattr(SH, "trained_runs", lambda *a, **k: pytest.fail("computed before the manifests were read"))
    for run in ("rk4_refined", "euler_fixed"):
        (tmp_path / f"smoke-{run}").mkdir()
        (tmp_path / f"smoke-{run}" / SHP.MANIFEST).write_text(json.dumps({"run": run, "files": {}}))
    return tmp_path


@pytest.mark.parametrize("damage", [*JSON_DAMAGE, "2 MiB"])
def test_a_damaged_manifest_stops_a_restudy_before_any_work(manifests, damage):
    path = manifests / "smoke-euler_fixed" / SHP.MANIFEST
    plant, said = {**JSON_DAMAGE, "2 MiB": (lambda p: p.write_text(" " * (2 << 20) + "{}"),
                                            "it holds 2 MiB, more than such a file ever does")}[damage]
    if damage == "a list":
        said = "is not a manifest (it holds a JSON list)"
    plant(path)
    with pytest.raises(SHP.ShippedFileError) as err:
        SH.restudy(Settings(preset="smoke", device="cpu"), "python -m cnet_lib ship smoke --restudy", dest=manifests)
    msg = str(err.value)
    assert msg.startswith(f"the shipped manifest {path} ") and said in msg and "\n" not in msg, msg
    assert msg.endswith(f"restore it from git (git checkout -- {path.parent}) or ship the preset again (python -m "
                        "cnet_lib ship smoke --data-description ...)"), msg


def test_restudy_of_a_preset_that_ships_nothing_is_one_line(tmp_path, capsys, monkeypatch):
    """The command line as a maintainer types it: the smoke preset never ships, so there is nothing to restudy."""
    monkeypatch.setattr(SH, "trained_runs", lambda *a, **k: pytest.fail("computed before the manifests were read"))
    assert not (SHP.SHIPPED / "smoke-rk4_refined").exists()
    assert SH.main(["smoke", "--restudy", "--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {SHP.SHIPPED / 'smoke-rk4_refined' / SHP.MANIFEST} is missing: the smoke preset's "
                          "rk4_refined is not shipped") and "\n" not in err, err
    assert not os.path.lexists(SHP.SHIPPED / "smoke-rk4_refined")
