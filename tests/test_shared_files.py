"""Shared caches, shipped files and data files (issue 18): nothing corrupted, nothing lost, nothing executed.

Two processes on one runs folder (locks, caches keyed on what they were computed from, a clean-up
that touches only the leftovers of ended processes), the reader's own training never overwritten
by a shipped model, shipped files verified against their manifest, data files that cannot run
code, damaged data and caches, read-only folders, full disks and running out of memory: each gets
one sentence that names the file, what is wrong and what to do.  Tiny models on fake CIFAR; the
two-process tests use subprocesses that wait on each other through files, never on the clock.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import pickle
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch
from smoke_data import SHARED_DATA as SHARED
from smoke_runs import GRID, data_dir, runs_copy, smoke_runs, trained

from cnet_lib.images.data.cifar_files import CifarFileError
from cnet_lib.images.data import datasets as DS, download as DL, download as FD, image_data as ID
from cnet_lib.images.runs import run_store as RS, shipped as SHP, study_inputs as SI, theta_record as TR
from cnet_lib.images.training import evaluation as EV, train_loop as TL, train_state as TS
from cnet_lib.runtime.checkpoint import file_digest, load_checkpoint, remove_stale_temporaries, save_checkpoint
from cnet_lib.runtime.device import OutOfMemory, out_of_memory_hint
from cnet_lib.runtime.files import folder_lock, lock_files
from cnet_lib.runtime.settings import Settings
from cnet_lib.studies.manifestation import study as ST
from cnet_lib.cli import sweep as sweep_cli, train as train_cli
from cnet_lib.runtime import files as F
from cnet_lib.studies import robustness
from cnet_lib import images as T

ROOT = Path(__file__).resolve().parents[1]
WAIT = 300  # seconds a subprocess may take to reach a point: a wide margin, never a measurement


def _runs(root, data_dir, **kw):
    return smoke_runs(root, data_dir, verbose=False, **kw)


def _env():
    env = dict(os.environ)
    env["CNET_THREADS"] = "1"
    return env


def _one_line(text: str) -> str:
    text = text.strip()
    assert "Traceback" not in text and len(text.splitlines()) == 1, text
    return text


@contextlib.contextmanager
def read_only(*folders: Path):
    """Make ``folders`` refuse writes (mode 0555; as root also the immutable attribute, since root
    ignores modes); skipped where neither works."""
    immutable = []
    for folder in folders:
        folder.chmod(0o555)
        if os.geteuid() == 0 and shutil.which("chattr"):
            if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode == 0:
                immutable.append(folder)
    try:
        probe = folders[0] / ".probe"
        try:
            probe.write_text("x")
        except OSError:
            pass
        else:
            probe.unlink()
            pytest.skip("this machine cannot make a folder read-only (root without chattr)")
        yield
    finally:
        for folder in immutable:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        for folder in folders:
            folder.chmod(0o755)


# ============================================================================ 1. two processes, one runs folder
HOLD = """
import shutil, sys, time
from pathlib import Path
from cnet_lib.runtime.files import folder_lock
out, release, result = map(Path, sys.argv[1:])
with folder_lock(out, "training the first run"):
    print("held", flush=True)
    while not release.exists():
        time.sleep(0.05)
    shutil.copytree(result, out, dirs_exist_ok=True)  # what the first process leaves
"""

TRAIN_ARGS = ["--dataset", "cifar10", "--n-train", "64", "--n-test", "32", "--channels", "2", "4", "4",
              "--batch-size", "32", "--scheme", "euler", "--device", "cpu", "--quiet", "--epochs", "1"]


def _holder(out: Path, release: Path, result: Path):
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(out), str(release), str(result)], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held", proc.communicate()
    return proc


def test_a_second_training_waits_for_the_first_and_then_uses_its_result(data_dir, tmp_path):
    result = tmp_path / "result"
    assert train_cli.main([*TRAIN_ARGS, "--data-dir", data_dir, "--out-dir", str(result)]) == 0
    out, release = tmp_path / "run", tmp_path / "release"
    holder = _holder(out, release, result)
    second = subprocess.Popen([sys.executable, "-m", "cnet_lib", "train", *TRAIN_ARGS, "--data-dir", data_dir,
                               "--out-dir", str(out), "--resume"], env=_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    waiting = second.stderr.readline()  # blocks until the second process says what it waits for
    assert f"is in use by process {holder.pid} on host" in waiting and "training the first run" in waiting, waiting
    assert "waiting for it to finish before training" in waiting
    release.touch()
    assert holder.wait(WAIT) == 0
    stdout, stderr = second.communicate(timeout=WAIT)
    assert second.returncode == 0, stderr
    assert "done: 1 epochs" in stdout and "Traceback" not in stderr
    assert (out / TS.RESULTS).read_text() == (result / TS.RESULTS).read_text(), "it used the first one's result"


def test_a_second_training_without_resume_stops_at_once_and_says_who_holds_the_folder(data_dir, tmp_path, capsys):
    result = tmp_path / "result"
    assert train_cli.main([*TRAIN_ARGS, "--data-dir", data_dir, "--out-dir", str(result)]) == 0
    out, release = tmp_path / "run", tmp_path / "release"
    holder = _holder(out, release, result)
    capsys.readouterr()
    try:
        assert train_cli.main([*TRAIN_ARGS, "--data-dir", data_dir, "--out-dir", str(out)]) == 1
    finally:
        release.touch()
        holder.wait(WAIT)
    err = _one_line(capsys.readouterr().err)
    assert f"is in use by process {holder.pid}" in err and "--resume" in err and "--out-dir" in err


CHAPTER = """
import json, sys
from cnet_lib.images.runs.run_store import trained_runs
from cnet_lib.runtime.settings import Settings
settings = Settings.from_environment(preset="smoke", runs_dir=sys.argv[1], data_dir=sys.argv[2], device="cpu")
runs = trained_runs(settings, verbose=False, n_train=64, n_test=32, batch_size=32, channels=(2, 4, 4))
print(json.dumps({n: [r.trained_now, r.checkpoint_sha256] for n, r in runs.items()}))
"""


def test_two_notebooks_on_one_runs_folder_train_each_run_once(data_dir, tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", CHAPTER, str(tmp_path / "runs"), data_dir], env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=WAIT)
        assert p.returncode == 0, stderr
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    for run in ("rk4_refined", "euler_fixed"):
        trained = [o[run][0] for o in outs]
        assert trained.count(True) == 1, f"{run} was trained {trained.count(True)} times"
        assert outs[0][run][1] == outs[1][run][1], "both processes use the same checkpoint"


def test_a_sweep_is_filed_under_the_checkpoint_its_model_came_from(runs_copy, data_dir):
    runs = _runs(runs_copy, data_dir)
    run = runs["euler_fixed"]
    loaded = run.checkpoint_sha256
    assert loaded == file_digest(run.checkpoint)
    shutil.copyfile(runs["rk4_refined"].checkpoint, run.checkpoint)  # another process replaced it meanwhile
    path, key = ST.sweep_cache(run, GRID, torch.device("cpu"))
    assert key["checkpoint"] == loaded[:12] != file_digest(run.checkpoint)[:12]
    rows = ST.run({"euler_fixed": run}, GRID, verbose=False)["euler_fixed"]
    assert rows[0]["accuracy"] == pytest.approx(run.final_accuracy), "the numbers are those of the loaded model"
    assert json.loads(path.read_text())["key"]["checkpoint"] == loaded[:12]


def test_clean_up_removes_only_the_leftovers_of_ended_processes(tmp_path):
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    host = F.process_tag().split("-", 1)[1]
    names = {"live": f".checkpoint.pt.{live.pid}-{host}.abc123.tmp",
             "ended": f".checkpoint.pt.{ended.stdout.strip()}-{host}.def456.tmp",
             "other host": f".checkpoint.pt.{ended.stdout.strip()}-elsewhere.ghi789.tmp",
             "old naming": ".checkpoint.pt.jkl012.tmp"}
    try:
        for name in names.values():
            (tmp_path / name).write_bytes(b"PK\x03\x04 unfinished")
        removed = remove_stale_temporaries(tmp_path, [TS.CHECKPOINT])
    finally:
        live.kill()
        live.wait()
    assert [p.name for p in removed] == [names["ended"]]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(n for k, n in names.items() if k != "ended")


def test_a_lock_holder_is_named_and_released_when_its_process_is_killed(tmp_path):
    out, release = tmp_path / "run", tmp_path / "release"
    holder = _holder(out, release, tmp_path)
    holder.kill()
    holder.wait(WAIT)
    with folder_lock(out, "checking", wait=False) as held:
        assert held and "checking" in lock_files(out)[1].read_text()
    assert not lock_files(out)[1].exists()


# ============================================================================ 2. never overwrite the reader's run
def _cpu_runs(root, **kw):
    if not (SHARED / "cifar-10-batches-py").is_dir():
        pytest.skip(f"the offline CIFAR copy is not at {SHARED}")
    return RS.trained_runs(Settings(preset="cpu", runs_dir=root, data_dir=SHARED, device="cpu"), verbose=True, **kw)


def test_the_shipped_model_never_overwrites_the_readers_own_training(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(RS, "train", lambda *a, **k: pytest.fail("nothing may be trained here"))
    first = _cpu_runs(tmp_path)
    rk4 = first["rk4_refined"]
    assert rk4.shipped and rk4.out_dir.name.endswith("-shipped")
    own = Path(rk4.config.out_dir)
    assert not own.exists(), "the shipped model is not copied into the reader's run folder"
    # the reader trains the run themselves and stops after epoch 2 of 6
    cfg = rk4.config
    model = T.build_model(cfg)
    save_checkpoint(own / TS.CHECKPOINT, model.state_dict(), cfg.identity(), extra={"epoch": 2, "history": []})
    (own / TS.RESULTS).write_text(json.dumps({"epochs_done": 2}))
    theirs = (own / TS.CHECKPOINT).read_bytes()
    capsys.readouterr()
    again = _cpu_runs(tmp_path)
    out = capsys.readouterr().out
    assert f"your own training of this run is kept in {F.shown_path(own)} (epoch 2 of {cfg.epochs} saved)" in out
    assert "trained_runs(ctx.settings, use_shipped=False)" in out
    assert (own / TS.CHECKPOINT).read_bytes() == theirs and again["rk4_refined"].shipped
    # a run the reader finished is theirs: it is used instead of the shipped one
    euler = first["euler_fixed"]
    shutil.copytree(euler.out_dir, euler.config.out_dir)
    mine = _cpu_runs(tmp_path)["euler_fixed"]
    assert not mine.shipped and mine.out_dir == Path(euler.config.out_dir)


# ============================================================================ 3. shipped files verified
@pytest.fixture
def shipped_copy(tmp_path, monkeypatch):
    dest = tmp_path / "shipped"
    shutil.copytree(SHP.SHIPPED, dest)
    monkeypatch.setattr(SHP, "SHIPPED", dest)
    return dest


def _zero_weights(path: Path) -> None:
    ck = load_checkpoint(path)
    save_checkpoint(path, {k: torch.zeros_like(v) if torch.is_tensor(v) and v.is_floating_point() else v
                           for k, v in ck["model"].items()}, ck["config"], ck["extra"])


@pytest.mark.parametrize("damage", ["zeroed weights", "truncated"])
def test_a_damaged_shipped_file_is_refused_with_what_to_do_and_never_copied(shipped_copy, tmp_path, monkeypatch,
                                                                            damage):
    ckpt = shipped_copy / "cpu-rk4_refined" / TS.CHECKPOINT
    if damage == "zeroed weights":
        _zero_weights(ckpt)
    else:
        ckpt.write_bytes(ckpt.read_bytes()[:1000])
    monkeypatch.setattr(RS, "train", lambda *a, **k: pytest.fail("a damaged shipped model must not lead to training"))
    for _ in range(2):  # the same sentence every time: nothing copied, nothing moved, no loop
        with pytest.raises(SHP.ShippedFileError) as err:
            _cpu_runs(tmp_path / "runs", runs=["rk4_refined"])
        msg = str(err.value)
        assert str(ckpt) in msg and "does not match the SHA-256 its manifest records" in msg and "reinstall" in msg
    assert not list((tmp_path / "runs").rglob(TS.CHECKPOINT))


def test_a_damaged_copy_of_a_shipped_model_is_copied_again(shipped_copy, tmp_path):
    run = _cpu_runs(tmp_path, runs="euler_fixed")["euler_fixed"]
    run.checkpoint.write_bytes(run.checkpoint.read_bytes()[:1000])
    again = _cpu_runs(tmp_path, runs="euler_fixed")["euler_fixed"]
    manifest = json.loads((shipped_copy / "cpu-euler_fixed" / SHP.MANIFEST).read_text())
    assert file_digest(again.checkpoint) == manifest["files"][TS.CHECKPOINT] == again.checkpoint_sha256


# ============================================================================ 4. no code runs from data
class _Planted:
    def __reduce__(self):
        return (os.system, (f"touch {MARKER}",))


MARKER = Path("/nonexistent")


@pytest.mark.parametrize("file", ["data_batch_1", "batches.meta"])
def test_a_data_file_that_would_run_code_is_refused_unrun(tmp_path, monkeypatch, file):
    global MARKER
    MARKER = tmp_path / "code-ran"
    FD.write_fake_cifar(tmp_path, n_train=20, n_test=10)
    path = tmp_path / "cifar-10-batches-py" / file
    with open(path, "wb") as f:
        pickle.dump({"data": _Planted(), "labels": [0], "label_names": _Planted()}, f, protocol=2)
    with pytest.raises(CifarFileError) as err:
        ID.load_dataset("cifar10", tmp_path, download=False)
    assert not MARKER.exists(), "the pickle's code ran"
    msg = str(err.value)
    assert str(path) in msg and "system" in msg and "could run code" in msg and "replace the folder" in msg


def test_the_offline_copy_and_old_protocol_files_read_with_the_restricted_unpickler(tmp_path):
    FD.write_fake_cifar(tmp_path, n_train=20, n_test=10)  # protocol 2: bytes go through _codecs.encode
    assert len(ID.load_dataset("cifar10", tmp_path).train_y) == 20
    if (SHARED / "cifar-10-batches-py").is_dir():
        assert ID.load_dataset("cifar10", SHARED).classes[0] == "airplane"


def test_temporary_data_lives_in_a_folder_only_the_user_can_write(tmp_path, monkeypatch):
    monkeypatch.setattr(F.tempfile, "gettempdir", lambda: str(tmp_path))
    mine = F.private_temp_dir()
    assert mine == tmp_path / f"cnet_lib-{os.getuid()}" and (mine.stat().st_mode & 0o777) == 0o700
    assert F.private_temp_dir() == mine
    mine.chmod(0o777)  # planted by someone else, or opened up: never used
    other = F.private_temp_dir()
    assert other != mine and other.parent == tmp_path and (other.stat().st_mode & 0o777) == 0o700
    shutil.rmtree(mine)
    (tmp_path / "elsewhere").mkdir()
    mine.symlink_to(tmp_path / "elsewhere")
    assert F.private_temp_dir() not in (mine, tmp_path / "elsewhere")
    if os.geteuid() == 0:  # a folder of that name owned by another user
        mine.unlink()
        mine.mkdir(mode=0o700)
        os.chown(mine, 65534, 65534)
        assert F.private_temp_dir() != mine


def test_the_fake_data_of_the_smoke_preset_is_private(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(F.tempfile, "gettempdir", lambda: str(tmp_path))
    planted = tmp_path / "cnet_lib-fake-cifar10-256-128"  # the old, predictable place
    FD.write_fake_cifar(planted, n_train=10, n_test=10)
    folder = SI.study_data_dir(Settings(preset="smoke", data_dir=tmp_path / "nothing-here"))
    assert folder != planted and folder.parent == tmp_path / f"cnet_lib-{os.getuid()}"
    assert len(ID.load_dataset("cifar10", folder).train_y) == 256 and "FAKE data" in capsys.readouterr().out


# ============================================================================ 5. damaged data
def _batch(path: Path, **change) -> None:
    d = {"batch_label": "b", "labels": [0, 1], "data": np.zeros((2, 3072), np.uint8), **change}
    with open(path, "wb") as f:
        pickle.dump(d, f, protocol=2)


DATA_DAMAGE = {
    "truncated": (lambda p: p.write_bytes(p.read_bytes()[:200]), "is cut off or damaged"),
    "empty": (lambda p: p.write_bytes(b""), "is empty (0 bytes)"),
    "HTML page": (lambda p: p.write_text("<!DOCTYPE html><html><body>Sign in</body></html>"), "is an HTML page"),
    "LFS pointer": (lambda p: p.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:ab\nsize 3\n"),
                    "is a Git LFS pointer"),
    "missing key": (lambda p: _batch(p, labels=None) or _drop_key(p, "labels"), "lacks the key 'labels'"),
    "label out of range": (lambda p: _batch(p, labels=[0, 12]), "has the label 12, outside 0..9"),
    "wrong shape": (lambda p: _batch(p, data=np.zeros((2, 1024), np.uint8)), "must be an N x 3072 array of uint8"),
    "floats": (lambda p: _batch(p, data=np.zeros((2, 3072), np.float32)), "must be an N x 3072 array of uint8"),
    "labels for other images": (lambda p: _batch(p, labels=[0, 1, 2]), "has 2 images but 3 labels"),
    "not a dict": (lambda p: p.write_bytes(pickle.dumps([1, 2, 3], protocol=2)), "does not hold a CIFAR batch"),
}


def _drop_key(path: Path, key: str) -> None:
    with open(path, "rb") as f:
        d = pickle.load(f)
    del d[key]
    with open(path, "wb") as f:
        pickle.dump(d, f, protocol=2)


@pytest.mark.parametrize("damage", list(DATA_DAMAGE))
def test_damaged_data_gets_one_sentence_in_the_library_and_the_command_line(tmp_path, capsys, damage):
    FD.write_fake_cifar(tmp_path, n_train=20, n_test=10)
    path = tmp_path / "cifar-10-batches-py" / "data_batch_2"
    how, fragment = DATA_DAMAGE[damage]
    how(path)
    with pytest.raises(CifarFileError) as err:
        ID.load_dataset("cifar10", tmp_path, download=False)
    msg = str(err.value)
    assert msg.startswith(str(path)) and fragment in msg and "replace the folder" in msg, msg
    capsys.readouterr()
    argv = [*TRAIN_ARGS, "--n-train", "16", "--n-test", "8", "--data-dir", str(tmp_path), "--out-dir",
            str(tmp_path / "run")]
    assert train_cli.main(argv) == 1
    err = _one_line(capsys.readouterr().err)
    assert err.startswith("error: ") and fragment in err


# ============================================================================ 6. damaged caches
def _accuracies(sweeps) -> dict:
    return {n: [(r["kind"], r.get("scheme"), r.get("n_steps"), r["accuracy"]) for r in rows] for n, rows in sweeps.items()}


def _sweep_path(run) -> Path:
    return ST.sweep_cache(run, GRID, torch.device("cpu"))[0]


@pytest.mark.parametrize("damage", ["truncated", "older format", "computed from another checkpoint"])
def test_a_damaged_sweep_cache_is_set_aside_and_computed_again(runs_copy, data_dir, capsys, damage):
    runs = _runs(runs_copy, data_dir)
    first = ST.run(runs, GRID, verbose=False)
    path = _sweep_path(runs["euler_fixed"])
    cached = json.loads(path.read_text())
    if damage == "truncated":
        path.write_text(path.read_text()[:50])
    elif damage == "older format":
        path.write_text(json.dumps({k: v for k, v in cached.items() if k != "rows"} | {"results": cached["rows"]}))
    else:
        path.write_text(json.dumps({**cached, "key": {**cached["key"], "checkpoint": "0" * 12}}))
    capsys.readouterr()
    again = ST.run(runs, GRID, verbose=False)
    out = capsys.readouterr().out
    assert f"{path} cannot be used" in out and "moved to" in out and "computed again" in out
    assert _accuracies(again) == _accuracies(first) and len(list(path.parent.glob(f"{path.name}.damaged-*"))) == 1
    assert ST.run(runs, GRID, verbose=False) == again and "cannot be used" not in capsys.readouterr().out


def test_a_damaged_robustness_cache_is_set_aside_and_computed_again(runs_copy, data_dir, capsys):
    runs = _runs(runs_copy, data_dir)
    grid = dict(sigmas=(0.1,), seeds=(0,), bits=(), float_formats=(), input_noise=(), noise_seeds=(0,))
    first = robustness.run(runs, grid, verbose=False)
    path = robustness.study.cache_path(runs, grid, torch.device("cpu"))[0]
    path.write_text(path.read_text()[: len(path.read_text()) // 2])
    capsys.readouterr()
    again = robustness.run(runs, grid, verbose=False)
    assert f"{path} cannot be used: it is cut off or not JSON" in capsys.readouterr().out
    assert {k: [c.accuracies() for c in v] for k, v in again.items()} == {
        k: [c.accuracies() for c in v] for k, v in first.items()}


def test_an_empty_seed_list_is_refused_before_any_evaluation(runs_copy, data_dir):
    runs = _runs(runs_copy, data_dir)
    with pytest.raises(ValueError, match="seeds is empty, but weight noise is drawn at random"):
        robustness.run(runs, dict(sigmas=(0.1,), seeds=()), verbose=False)


def test_damaged_theta_snapshots_are_set_aside_and_rebuilt_from_the_checkpoint(runs_copy, data_dir, capsys):
    before = _runs(runs_copy, data_dir)["rk4_refined"]
    path = before.out_dir / TR.SNAPSHOTS
    path.write_text(path.read_text()[:40])
    capsys.readouterr()
    after = _runs(runs_copy, data_dir)["rk4_refined"]
    out = capsys.readouterr().out
    assert f"{path} cannot be used" in out and "epochs 0 and 2 only" in out
    assert [s["epoch"] for s in after.snapshots] == [0, 2]
    assert after.snapshots[0] == before.snapshots[0] and after.snapshots[-1]["blocks"] == before.snapshots[-1]["blocks"]
    assert [s["epoch"] for s in _runs(runs_copy, data_dir)["rk4_refined"].snapshots] == [0, 2]


# ============================================================================ 7. read-only folders, full disks
def test_a_read_only_runs_folder_loads_its_runs_and_keeps_new_results(runs_copy, data_dir, capsys):
    folders = [runs_copy, *[p for p in runs_copy.iterdir() if p.is_dir()]]
    with read_only(*folders):
        runs = _runs(runs_copy, data_dir)
        assert all(not r.trained_now for r in runs.values())
        capsys.readouterr()
        rows = ST.run(runs, dict(GRID, n_steps=(3,)), verbose=False)
        out = capsys.readouterr().out
        assert all(rows[n][0]["kind"] == "trained" for n in runs), "the computed rows are returned"
        assert "could not be saved" in out and "used for this session only" in out and "CNET_RUNS_DIR" in out
        with pytest.raises(F.FolderNotWritable) as err:
            _runs(runs_copy, data_dir, seed=7)  # another run: it would have to be trained here
        assert "must be trained, but the runs folder" in str(err.value) and "CNET_RUNS_DIR" in str(err.value)


def test_a_read_only_runs_folder_still_gets_the_shipped_models_in_a_private_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(F.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    root = tmp_path / "runs"
    root.mkdir()
    with read_only(root):
        run = _cpu_runs(root, runs="euler_fixed")["euler_fixed"]
    assert run.shipped and run.out_dir.parent == tmp_path / "tmp" / f"cnet_lib-{os.getuid()}"
    assert f"the runs folder {root} cannot be written, so the shipped model is copied to" in capsys.readouterr().out
    assert not list(SHP.SHIPPED.parent.glob(".*.lock")) and not list(SHP.SHIPPED.glob(".*")), "the package is never written"


@pytest.mark.parametrize("refusing", ["the run folder", "a folder above it"])
def test_training_into_a_read_only_folder_stops_before_any_work(data_dir, tmp_path, capsys, monkeypatch, refusing):
    """Checked before the data is read, and without making anything (the runs root, a lock file)."""
    monkeypatch.setattr(TL, "load_dataset", lambda *a, **k: pytest.fail("the data was loaded first"))
    out = tmp_path / "run" if refusing == "the run folder" else tmp_path / "shared" / "runs" / "run"
    refused = out if refusing == "the run folder" else tmp_path / "shared"
    refused.mkdir()
    with read_only(refused):
        assert train_cli.main([*TRAIN_ARGS, "--data-dir", data_dir, "--out-dir", str(out)]) == 1
    err = _one_line(capsys.readouterr().err)
    assert f"cannot write to {out}" in err and "--out-dir" in err
    assert not list(refused.iterdir())


def test_a_full_disk_while_unpacking_blames_the_disk_not_the_archive(tmp_path, monkeypatch):
    src = tmp_path / "src"
    FD.write_fake_cifar(src, 20, 10)
    archive = tmp_path / "a.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src / "cifar-10-batches-py", arcname="cifar-10-batches-py")
    monkeypatch.setattr(DL, "_download", lambda url, dest, progress=True: shutil.copy(archive, dest))
    source = dict(url="http://mirror.invalid/a.tar.gz", md5=file_digest(archive, "md5"))

    def full(tar, dest):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(DL, "_safe_extract", full)
    with pytest.raises(DS.DataFolderError) as err:
        DL.ensure_dataset("cifar10", tmp_path / "data", progress=False, **source)
    msg = str(err.value)
    assert "is full: unpacking" in msg and "not at fault" in msg and "CNET_DATA_DIR" in msg
    assert "not a readable" not in msg and not msg.startswith("[Errno")
    assert [p.name for p in (tmp_path / "data").iterdir() if not p.name.endswith(".lock")] == []


def test_a_full_disk_during_a_save_says_so(data_dir, tmp_path, monkeypatch, capsys):
    from cnet_lib.runtime import checkpoint as C

    def save(obj, f):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(C.torch, "save", save)
    assert train_cli.main([*TRAIN_ARGS, "--data-dir", data_dir, "--out-dir", str(tmp_path / "run")]) == 1
    err = _one_line(capsys.readouterr().err)
    assert "(the disk is full)" in err and "Free some disk space" in err and "[Errno" not in err


# ============================================================================ 10. out of memory
def test_out_of_memory_in_training_names_the_batch_size_to_try(data_dir, tmp_path, monkeypatch, capsys):
    def oom(*a, **k):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 14.75 GiB total)")

    monkeypatch.setattr(TL, "_train_epoch", oom)
    assert train_cli.main([*TRAIN_ARGS, "--data-dir", data_dir, "--out-dir", str(tmp_path / "run")]) == 1
    err = _one_line(capsys.readouterr().err)
    assert "out of memory on cpu while training epoch 1 with batches of 32 images" in err
    assert "--batch-size 16 (batch_size=16 in Python)" in err and "Tried to allocate" not in err


def test_out_of_memory_in_a_sweep_names_the_batch_size_to_try(runs_copy, data_dir, monkeypatch, capsys):
    def oom(*a, **k):
        raise RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory: you "
                           "tried to allocate 123456789 bytes")

    run = _runs(runs_copy, data_dir)["euler_fixed"]
    monkeypatch.setattr(EV, "evaluate", oom)
    assert sweep_cli.main([str(run.out_dir), "--quiet", "--n-steps", "1"]) == 1
    err = _one_line(capsys.readouterr().err)
    assert "out of memory on cpu while sweeping" in err and "--batch-size 250" in err
    with pytest.raises(OutOfMemory, match=r"batch_size=128 in Python"):
        ST.run({"euler_fixed": run}, dict(GRID, n_steps=(5,)), verbose=False, batch_size=256)


def test_a_fault_in_a_chapter_shows_as_its_one_sentence(tmp_path):
    """In a chapter (a Jupyter kernel after ``setup()``), a fault shows as its sentence, not a
    traceback, and the cell still fails; any other error keeps its traceback."""
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient

    sentence = "out of memory on cpu while training epoch 1 with batches of 32 images: try smaller batches"
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("from cnet_lib.book import setup\nctx = setup(quiet=True)"),
        nbformat.v4.new_code_cell(f"from cnet_lib.runtime.device import OutOfMemory\nraise OutOfMemory({sentence!r})"),
        nbformat.v4.new_code_cell("raise ValueError('a bug of the reader')"),
    ])
    NotebookClient(nb, timeout=WAIT, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    fault = [o for o in nb.cells[1].outputs if o.output_type == "error"]
    assert [o.traceback for o in fault] == [[f"OutOfMemory: {sentence}"]]
    bug = [o for o in nb.cells[2].outputs if o.output_type == "error"]
    assert len(bug) == 1 and len(bug[0].traceback) > 1, "other errors keep their traceback"


def test_the_allocators_own_out_of_memory_error_is_recognised():
    """A real allocation the CPU allocator refuses (1 PiB) becomes the one sentence, with half the batch."""
    with pytest.raises(OutOfMemory) as err:
        with out_of_memory_hint("cpu", "evaluating", 1):
            torch.empty(2 ** 50, dtype=torch.uint8)
    assert str(err.value).startswith("out of memory on cpu while evaluating with batches of 1 image: the batch is "
                                     "already one image")
    with pytest.raises(ValueError, match="^not memory$"):  # any other error passes through unchanged
        with out_of_memory_hint("cpu", "evaluating", 8):
            raise ValueError("not memory")
