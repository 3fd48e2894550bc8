"""The last faults of a shared teaching server (issue 33): a full disk inside a checkpoint save said plainly, lock
records that cannot be turned against their writer, every damaged cache or run file set aside (or written again)
in one sentence, crafted CIFAR batches refused, and the leftovers (stale temporaries, partial data folders, sweeps
on no images or with unknown grid keys, a malicious checkpoint, a bad ``--n-train``).

Each test reproduces the fault as the issue found it: links, pipes, deeply nested and oversized JSON, another
user's lock file (as root, from a subprocess of another uid), and a full disk (simulated by a writer that raises
ENOSPC as a full disk does, so that torch's own zip writer fails as it does then; and, where this machine lets
root mount one, a real tmpfs).  A test that could hang without its fix runs the code in a subprocess with a timeout.
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
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch
from smoke_runs import GRID, data_dir, runs_copy, smoke_runs, trained

from cnet_lib.images.runs.run_loading import training_time
from cnet_lib.images.training.train_state import read_results
from cnet_lib.images.data import cifar_files as CF, download as DL, download as FD, image_data as ID
from cnet_lib.images.runs import run_store as RS
from cnet_lib.images.training import train_state as TS
from cnet_lib.runtime.checkpoint import read_cache
from cnet_lib.runtime.files import FolderNotWritable, LockFileError, folder_lock, lock_files, lock_holder
from cnet_lib.runtime.settings import Settings
from cnet_lib.studies.manifestation import study as ST
from cnet_lib.cli import sweep as sweep_cli, train as train_cli
from cnet_lib.pendulum import trained_models as PS
from cnet_lib.runtime import checkpoint as C, files as F, records as R

ROOT = Path(__file__).resolve().parents[1]
TRAIN_ARGS = ["--dataset", "cifar10", "--n-train", "64", "--n-test", "32", "--channels", "2", "4", "4",
              "--batch-size", "32", "--scheme", "euler", "--device", "cpu", "--quiet"]
WAIT = 120  # seconds a subprocess may take: a wide margin, never a measurement


_runs = smoke_runs


def _one_line(text: str) -> str:
    text = text.strip()
    assert "Traceback" not in text and len(text.splitlines()) == 1, text
    return text


def _env() -> dict:
    return {**os.environ, "CNET_THREADS": "1", "PYTHONPATH": str(ROOT)}


def _in_a_subprocess(code: str, *args: str) -> str:
    """Run ``code`` in a fresh Python with a timeout, so that code which would block (a named pipe opened for
    reading or writing) fails the test instead of hanging it."""
    try:
        done = subprocess.run([sys.executable, "-c", code, *args], env=_env(), capture_output=True, text=True,
                              timeout=WAIT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"blocked for {WAIT} s: {code.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


# ============================================================================ 1. a full disk inside torch.save
class _DiskFullAfter:
    """A file whose disk is full after ``room`` bytes: a write past it raises ENOSPC, as the kernel does."""

    def __init__(self, f, room: int):
        self.f, self.room = f, room

    def write(self, data) -> int:
        if len(data) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(data)
        return self.f.write(data)

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()


def _disk_full_after(monkeypatch, room: int) -> None:
    real = os.fdopen
    monkeypatch.setattr(C.os, "fdopen", lambda fd, *a, **k: _DiskFullAfter(real(fd, *a, **k), room))


def test_torch_save_on_a_full_disk_is_said_plainly_and_keeps_the_last_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "checkpoint.pt"
    C.save_checkpoint(path, {"w": torch.zeros(10)}, {"a": 1})
    good = path.read_bytes()
    _disk_full_after(monkeypatch, 2000)
    with pytest.raises(C.CheckpointSaveError) as err:
        C.save_checkpoint(path, {"w": torch.zeros(100_000)}, {"a": 1})
    failed = err.value.__cause__
    assert failed.errno == errno.ENOSPC and isinstance(failed.__cause__, RuntimeError), "torch's own error, read"
    assert "inline_container" in str(failed.__cause__) and "unexpected pos" in str(failed.__cause__)
    msg = str(err.value)
    assert msg.startswith(f"could not write {path} (the disk is full); the previous file there is intact.")
    assert f"Free some disk space on the disk holding {tmp_path}" in msg and "enforce fail" not in msg
    assert path.read_bytes() == good and sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.pt"]


@pytest.mark.parametrize("free", [0, 10 << 30])
def test_torch_writers_own_error_alone_is_put_down_to_the_disk_only_when_it_is_full(tmp_path, monkeypatch, free):
    def save(obj, f):
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 266880 vs 266768")

    monkeypatch.setattr(C.torch, "save", save)
    monkeypatch.setattr(C.os, "statvfs", lambda p: os.statvfs_result((4096, 4096, 0, 0, free // 4096, 0, 0, 0, 0, 255)))
    with pytest.raises(C.CheckpointSaveError) as err:
        C.save_checkpoint(tmp_path / "c.pt", {}, {})
    if free:
        assert "(the write was cut short ([enforce fail" in str(err.value)
    else:
        assert "(the disk is full)" in str(err.value) and "enforce" not in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_in_training_is_one_line_with_the_folder_and_the_saved_epoch_kept(data_dir, tmp_path, monkeypatch,
                                                                                       capsys):
    out = tmp_path / "run"
    assert train_cli.main([*TRAIN_ARGS, "--epochs", "1", "--data-dir", data_dir, "--out-dir", str(out)]) == 0
    good = (out / TS.CHECKPOINT).read_bytes()
    capsys.readouterr()
    _disk_full_after(monkeypatch, 3000)
    argv = [*TRAIN_ARGS, "--epochs", "2", "--resume", "--data-dir", data_dir, "--out-dir", str(out)]
    assert train_cli.main(argv) == 1
    err = _one_line(capsys.readouterr().err)
    assert err.startswith(f"error: could not write {out / TS.CHECKPOINT} (the disk is full); the previous file there "
                          "is intact") and "--resume" in err and "enforce fail" not in err
    assert (out / TS.CHECKPOINT).read_bytes() == good and not list(out.glob(".*.tmp"))


def test_a_full_disk_in_a_chapter_gets_the_chapters_advice(data_dir, tmp_path, monkeypatch):
    _disk_full_after(monkeypatch, 3000)
    with pytest.raises(C.CheckpointSaveError) as err:
        _runs(tmp_path / "runs", data_dir, runs=["euler_fixed"], verbose=False)
    msg = str(err.value)
    assert "checkpoint.pt (the disk is full); nothing was written there. Free some disk space on the disk holding" in msg
    assert "(or set CNET_RUNS_DIR to a folder on a disk with room), then run this cell again" in msg
    assert "--resume" not in msg and "output folder" not in msg


@contextlib.contextmanager
def _tmpfs(size: int):
    """A tmpfs of ``size`` bytes, mounted (as root) for the test; skipped where it cannot be mounted."""
    where = Path(tempfile.mkdtemp(prefix="cnet-tmpfs-"))
    mounted = os.geteuid() == 0 and shutil.which("mount") and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True).returncode == 0
    if not mounted:
        where.rmdir()
        pytest.skip("a tmpfs cannot be mounted here (it needs root with CAP_SYS_ADMIN)")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)
        where.rmdir()


def test_a_real_full_disk_under_the_out_dir_says_the_disk_is_full(data_dir, tmp_path, capsys):
    """The issue's case on a real disk: the run folder on a tmpfs with room for one checkpoint, not two (an
    atomic save holds the old and the new one at once), so the second epoch's save fills it."""
    first = tmp_path / "run"
    assert train_cli.main([*TRAIN_ARGS, "--epochs", "1", "--data-dir", data_dir, "--out-dir", str(first)]) == 0
    size = sum(p.stat().st_size for p in first.iterdir())
    with _tmpfs((int(size * 1.5) // 4096 + 2) * 4096) as disk:
        out = disk / "run"
        shutil.copytree(first, out)
        good = (out / TS.CHECKPOINT).read_bytes()
        capsys.readouterr()
        argv = [*TRAIN_ARGS, "--epochs", "2", "--resume", "--data-dir", data_dir, "--out-dir", str(out)]
        assert train_cli.main(argv) == 1
        err = _one_line(capsys.readouterr().err)
        assert "(the disk is full)" in err and f"on the disk holding {out}" in err and "enforce fail" not in err
        assert (out / TS.CHECKPOINT).read_bytes() == good and not list(out.glob(".*.tmp"))
        assert TS.load_model(out)[1]["extra"]["epoch"] == 1


# ============================================================================ 2. lock records
def test_a_link_planted_as_the_lock_holder_record_is_replaced_never_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("the victim's work")
    run = tmp_path / "runs" / "rk4"
    holder = lock_files(run)[1]
    holder.parent.mkdir()
    holder.symlink_to(victim)
    with folder_lock(run, "training rk4"):
        assert not holder.is_symlink() and "training rk4" in holder.read_text()
    assert victim.read_text() == "the victim's work" and not os.path.lexists(holder)


def test_a_pipe_as_the_lock_holder_record_blocks_neither_the_holder_nor_whoever_waits(tmp_path):
    run = tmp_path / "runs" / "rk4"
    holder = lock_files(run)[1]
    holder.parent.mkdir()
    os.mkfifo(holder)
    out = _in_a_subprocess(
        "import sys\nfrom cnet_lib.runtime.files import folder_lock, lock_holder\n"
        "print('reader:', lock_holder(sys.argv[1]))\n"
        "with folder_lock(sys.argv[1], 'training rk4'):\n    print('held:', lock_holder(sys.argv[1]))\n", str(run))
    assert "reader: another process" in out and "held: process" in out and "training rk4" in out


@pytest.mark.parametrize("record", ["deeply nested", "a gigabyte", "not a dict", "fields of a megabyte"])
def test_a_holder_record_anyone_wrote_is_read_within_bounds(tmp_path, record):
    run = tmp_path / "rk4"
    holder = lock_files(run)[1]
    if record == "deeply nested":
        holder.write_text("[" * 200_000 + "]" * 200_000)
    elif record == "a gigabyte":
        with open(holder, "wb") as f:
            f.truncate(1 << 30)  # sparse: no disk used
    elif record == "not a dict":
        holder.write_text("[1, 2]")
    else:
        holder.write_text(json.dumps({"process": "1-h", "what": "x" * (1 << 20), "since": "now"}))
    assert lock_holder(run) == "another process"


@pytest.mark.parametrize("planted", ["link", "folder"])
def test_a_lock_file_that_cannot_be_one_is_set_aside_and_the_folder_locked(tmp_path, capsys, planted):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    run = tmp_path / "runs" / "rk4"
    lock = lock_files(run)[0]
    lock.parent.mkdir()
    lock.symlink_to(victim) if planted == "link" else lock.mkdir()
    with folder_lock(run, "training rk4") as held:
        assert held and lock.is_file() and not lock.is_symlink()
    said = capsys.readouterr().err
    assert f"{lock} was a {'symbolic link' if planted == 'link' else 'folder'}, not a lock file" in said
    assert "moved to .rk4.lock.damaged-" in said and victim.read_text() == "keep me"
    assert len(list(lock.parent.glob(".rk4.lock.damaged-*"))) == 1


@contextlib.contextmanager
def _as_user(uid: int):
    """Act as the user ``uid`` (root only: the effective user id, given back afterwards)."""
    os.seteuid(uid)
    try:
        yield
    finally:
        os.seteuid(0)


def test_another_users_lock_file_is_named_with_its_owner_not_as_an_unwritable_folder():
    """As root: a runs folder everyone can write, a lock file that user 65534 (nobody) left with mode 0644, and
    a third user who can write the run folder but not that lock file."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to make files of two other users")
    shared = Path(tempfile.mkdtemp(prefix="cnet-shared-"))
    try:
        shared.chmod(0o777)
        (shared / "rk4").mkdir()
        (shared / "rk4").chmod(0o777)
        lock = lock_files(shared / "rk4")[0]
        lock.touch(mode=0o644)
        os.chown(lock, 65534, 65534)
        with _as_user(54321), pytest.raises(FolderNotWritable) as err:
            with folder_lock(shared / "rk4", "training rk4", fix="choose another out_dir (--out-dir)"):
                pass
    finally:
        shutil.rmtree(shared)
    msg = str(err.value)
    assert msg.startswith(f"cannot lock {shared / 'rk4'}: its lock file {lock} belongs to "), msg
    assert "chmod g+w" in msg and msg.endswith("or choose another out_dir (--out-dir)") and "cannot write to" not in msg


def test_a_planted_lock_link_that_cannot_be_moved_aside_is_said_and_never_followed():
    """As root: in a sticky folder everyone can write (as /tmp is), a link user 65534 planted as the lock file,
    which another user may neither follow (the lock opens with O_NOFOLLOW) nor rename."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to make files of two other users")
    shared = Path(tempfile.mkdtemp(prefix="cnet-sticky-"))
    try:
        shared.chmod(0o1777)
        victim = shared / "victim"
        victim.write_text("keep me")
        lock = lock_files(shared / "rk4")[0]
        lock.symlink_to(victim)
        os.lchown(lock, 65534, 65534)
        with _as_user(54321), pytest.raises(LockFileError) as err:
            with folder_lock(shared / "rk4", "training rk4"):
                pass
        assert victim.read_text() == "keep me" and lock.is_symlink()
    finally:
        shutil.rmtree(shared)
    assert str(err.value).startswith(f"cannot lock {shared / 'rk4'}: its lock file {lock} is a symbolic link, not a "
                                     "lock file, and cannot be moved aside (no permission to write there)")


# ============================================================================ 3. damaged JSON that is not cut off
@pytest.mark.parametrize("damage, said", [
    ("deeply nested", "is nested too deeply"), ("100 MB", "holds 100 MiB, more than such a file ever does"),
    ("a link", "is a symbolic link, not a file"), ("a pipe", "is a named pipe (FIFO), not a file"),
    ("a folder", "is a folder, not a file"), ("not UTF-8", "is not text"),
])
def test_a_cache_that_is_damaged_but_not_cut_off_is_set_aside(tmp_path, damage, said):
    path = tmp_path / "sweep-abc.json"
    (tmp_path / "elsewhere.json").write_text('{"key": 1}')
    if damage == "deeply nested":
        path.write_text("[" * 100_000 + "]" * 100_000)
    elif damage == "100 MB":
        with open(path, "wb") as f:
            f.truncate(100 << 20)
    elif damage == "a link":
        path.symlink_to(tmp_path / "elsewhere.json")
    elif damage == "a pipe":
        os.mkfifo(path)
    elif damage == "a folder":
        path.mkdir()
    else:
        path.write_bytes(b'{"key": "\xff\xfe"}')
    said_lines = []
    assert read_cache(path, "the sweep", lambda obj: None, say=said_lines.append) is None
    assert len(said_lines) == 1 and f"the sweep: {path} cannot be used: it {said}" in said_lines[0], said_lines
    assert not os.path.lexists(path) and len(list(tmp_path.glob("sweep-abc.json.damaged-*"))) == 1
    assert (tmp_path / "elsewhere.json").read_text() == '{"key": 1}'


def test_a_cache_too_large_for_the_memory_left_is_set_aside(tmp_path, monkeypatch):
    path = tmp_path / "robustness-abc.json"
    path.write_text('{"key": 1}')

    def no_memory(text):
        raise MemoryError

    monkeypatch.setattr(R.json, "loads", no_memory)
    said = []
    assert read_cache(path, "the robustness study", lambda obj: None, say=said.append) is None
    assert "it could not be read in the memory left" in said[0] and "moved to robustness-abc.json.damaged-" in said[0]


RESULTS_DAMAGE = {"cut off": lambda text: text[: len(text) // 2], "a list": lambda text: "[]",
                  "no epochs": lambda text: '{"epochs_done": null}', "a string": lambda text: '"two"',
                  "deeply nested": lambda text: "[" * 100_000 + "]" * 100_000}


@pytest.mark.parametrize("damage", list(RESULTS_DAMAGE))
def test_a_damaged_results_file_beside_a_finished_checkpoint_is_written_again_from_it(runs_copy, data_dir, capsys,
                                                                                      monkeypatch, damage):
    folder = _runs(runs_copy, data_dir, verbose=False)["euler_fixed"].out_dir
    whole = json.loads((folder / TS.RESULTS).read_text())
    (folder / TS.RESULTS).write_text(RESULTS_DAMAGE[damage]((folder / TS.RESULTS).read_text()))
    assert read_results(folder) is None and TS.interrupted_message(folder).startswith("interrupted; epoch 2 is saved")
    monkeypatch.setattr(RS, "train", lambda *a, **k: pytest.fail("a finished run was trained again"))
    capsys.readouterr()
    run = _runs(runs_copy, data_dir)["euler_fixed"]
    out = capsys.readouterr().out
    assert "not trained yet" not in out and not run.trained_now
    assert f"{folder / TS.RESULTS} cannot be used: it" in out and "written again from checkpoint.pt (2 epochs)" in out
    again = read_results(folder)
    assert again["epochs_done"] == 2 and again["history"] == whole["history"]
    assert training_time(run)["device"] == whole["environment"]["device"]
    assert len(list(folder.glob("results.json.damaged-*"))) == 1


def test_a_cut_off_results_file_is_written_again_by_resume_on_the_command_line(data_dir, tmp_path, capsys):
    out = tmp_path / "run"
    argv = [*TRAIN_ARGS, "--epochs", "1", "--data-dir", data_dir, "--out-dir", str(out)]
    assert train_cli.main(argv) == 0
    text = (out / TS.RESULTS).read_text()
    (out / TS.RESULTS).write_text(text[:100])
    capsys.readouterr()
    assert train_cli.main([*argv, "--resume"]) == 0
    said = capsys.readouterr().out
    assert "cannot be used: it is cut off or not JSON" in said and "done: 1 epochs" in said
    assert json.loads((out / TS.RESULTS).read_text())["history"] == json.loads(text)["history"]


def test_sweep_rows_with_renamed_keys_are_set_aside_and_swept_again(runs_copy, data_dir, capsys):
    runs = {"euler_fixed": _runs(runs_copy, data_dir, verbose=False)["euler_fixed"]}
    first = ST.run(runs, GRID, verbose=False)["euler_fixed"]
    path = ST.sweep_cache(runs["euler_fixed"], GRID, torch.device("cpu"))[0]
    record = json.loads(path.read_text())
    record["rows"] = [{("acc" if k == "accuracy" else k): v for k, v in row.items()} for row in record["rows"]]
    path.write_text(json.dumps(record))
    capsys.readouterr()
    again = ST.run(runs, GRID, verbose=False)["euler_fixed"]
    out = capsys.readouterr().out
    assert f"{path} cannot be used: its rows cannot be read" in out and "row 0 lacks accuracy" in out
    assert [r["accuracy"] for r in again] == [r["accuracy"] for r in first]


# ============================================================================ 4. a checkpoint of another config
def _plant_other_config(runs_copy, data_dir) -> Path:
    runs = _runs(runs_copy, data_dir, verbose=False)
    folder = runs["rk4_refined"].out_dir
    shutil.copyfile(runs["euler_fixed"].checkpoint, folder / TS.CHECKPOINT)
    return folder


def test_a_checkpoint_of_another_config_in_a_chapter_is_set_aside_and_the_run_trained(runs_copy, data_dir, capsys):
    folder = _plant_other_config(runs_copy, data_dir)
    foreign = (folder / TS.CHECKPOINT).read_bytes()
    capsys.readouterr()
    run = _runs(runs_copy, data_dir, runs=["rk4_refined"], verbose=False)["rk4_refined"]
    out = capsys.readouterr().out
    assert run.trained_now and "was written for another configuration (its" in out
    assert "moved to checkpoint.pt.other-config-" in out and "trained in its place" in out
    assert "--resume" not in out and "--out-dir" not in out
    assert [p.read_bytes() for p in folder.glob("checkpoint.pt.other-config-*")] == [foreign]
    assert not _runs(runs_copy, data_dir, runs=["rk4_refined"], verbose=False)["rk4_refined"].trained_now


def test_a_checkpoint_of_another_config_on_the_command_line_gets_the_command_lines_advice(runs_copy, data_dir,
                                                                                          capsys):
    folder = _plant_other_config(runs_copy, data_dir)
    capsys.readouterr()
    argv = ["--preset", "smoke", "--run", "rk4_refined", "--data-dir", data_dir, "--out-dir", str(folder), "--resume",
            "--quiet", "--device", "cpu", "--n-train", "64", "--n-test", "32", "--batch-size", "32", "--channels", "2",
            "4", "4"]
    assert train_cli.main(argv) == 1
    err = _one_line(capsys.readouterr().err)
    assert "was written for another configuration" in err and "choose another out_dir (--out-dir)" in err
    assert "drop --resume" not in err and (folder / TS.CHECKPOINT).is_file(), "a file the user named is left alone"


# ============================================================================ 5. crafted CIFAR batches
class _Reduce:
    def __init__(self, *reduced):
        self.reduced = reduced

    def __reduce__(self):
        return self.reduced


_MM = getattr(np, "_core", np.core).multiarray
CRAFTED = {
    "an empty object array": _Reduce(_MM._reconstruct, (np.ndarray, (0,), b"O")),
    "a dtype changed to hold objects": _Reduce(_MM._reconstruct, (np.ndarray, (0,), b"b"), (
        1, (2,), _Reduce(np.dtype, ("V8", False, True), (3, "|", None, ("a",), {"a": (np.dtype("u8"), 0)}, 8, 1, 1)),
        False, b"A" * 16)),
    "numpy's own error": _Reduce(_MM.scalar, (np.dtype("U1"), b"\xff\xff\xff\xff")),
}


@pytest.mark.parametrize("craft", list(CRAFTED))
def test_a_crafted_cifar_batch_is_refused_in_one_sentence_naming_the_file(tmp_path, capsys, craft):
    FD.write_fake_cifar(tmp_path, n_train=20, n_test=10)
    path = tmp_path / "cifar-10-batches-py" / "data_batch_1"
    with open(path, "rb") as f:
        batch = pickle.load(f, encoding="latin1")
    batch["extra"] = CRAFTED[craft]
    path.write_bytes(pickle.dumps(batch, protocol=2))
    with pytest.raises(CF.CifarFileError) as err:
        ID.load_dataset("cifar10", tmp_path, download=False)
    msg = str(err.value)
    assert msg.startswith(f"{path} ") and "replace the folder" in msg and len(msg.splitlines()) == 1
    assert ("is cut off or damaged" if craft == "numpy's own error" else "could run code") in msg
    argv = [*TRAIN_ARGS, "--n-train", "16", "--n-test", "8", "--data-dir", str(tmp_path), "--out-dir",
            str(tmp_path / "run")]
    capsys.readouterr()
    assert train_cli.main(argv) == 1 and _one_line(capsys.readouterr().err).startswith(f"error: {path} ")


def test_numpys_runtime_error_while_unpickling_is_said_as_damage(tmp_path, monkeypatch):
    FD.write_fake_cifar(tmp_path, n_train=20, n_test=10)

    def numpy_fails(*args):
        raise RuntimeError("numpy could not rebuild the array")

    for module in ("numpy.core.multiarray", "numpy._core.multiarray"):
        monkeypatch.setitem(CF._ALLOWED, (module, "_reconstruct"), numpy_fails)
    with pytest.raises(CF.CifarFileError, match=r"is cut off or damaged \(RuntimeError: numpy could not rebuild"):
        ID.load_dataset("cifar10", tmp_path, download=False)


# ============================================================================ 6. leftovers
def test_a_temporary_file_of_a_killed_sweep_save_is_removed_by_the_next_sweep(runs_copy, data_dir):
    run = _runs(runs_copy, data_dir, verbose=False)["euler_fixed"]
    path = ST.sweep_cache(run, GRID, torch.device("cpu"))[0]
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    host = F.process_tag().split("-", 1)[1]
    killed = path.parent / f".{path.name}.{ended.stdout.strip()}-{host}.k1ll3d.tmp"
    live = path.parent / f".{path.name}.{os.getppid()}-{host}.l1v3.tmp"
    for tmp in (killed, live):
        tmp.write_text('{"key": ')
    ST.run({"euler_fixed": run}, GRID, verbose=False)
    assert not killed.exists() and live.exists() and path.is_file()


@pytest.mark.parametrize("damage", ["batches.meta missing", "a batch that is a folder"])
def test_a_partial_data_folder_names_the_file_and_downloads_nothing(tmp_path, monkeypatch, damage):
    FD.write_fake_cifar(tmp_path, n_train=20, n_test=10)
    folder = tmp_path / "cifar-10-batches-py"
    monkeypatch.setattr(DL, "_fetch", lambda *a, **k: pytest.fail("a download started"))
    if damage == "batches.meta missing":
        (folder / "batches.meta").unlink()
        said = f"{folder} lacks batches.meta (6 of its 7 files are there)"
    else:
        (folder / "data_batch_3").unlink()
        (folder / "data_batch_3").mkdir()
        said = f"{folder / 'data_batch_3'} is a folder, not a data file"
    with pytest.raises(CF.CifarFileError) as err:
        ID.load_dataset("cifar10", tmp_path)
    assert str(err.value).startswith(said) and "replace the folder" in str(err.value)


def test_a_sweep_on_no_images_and_a_grid_with_an_unknown_key_are_refused(runs_copy, data_dir):
    run = _runs(runs_copy, data_dir, verbose=False)["euler_fixed"]
    x = torch.zeros((0, 3, 32, 32), dtype=torch.uint8)
    with pytest.raises(ValueError, match=r"a sweep needs test images and one label per image, got 0 images"):
        ST.manifestation_sweep(run.model, x, torch.zeros(0, dtype=torch.long), torch.zeros(3), torch.ones(3),
                              schemes=("euler",), n_steps=(1,), compress=(), progress=False)
    with pytest.raises(ValueError, match=r"unknown sweep grid key 'n_step': a sweep grid has schemes, n_steps"):
        ST.run({"euler_fixed": run}, dict(schemes=("euler",), n_step=(1,)), verbose=False)
    with pytest.raises(ValueError, match=r"unknown sweep grid key 'nsteps'"):
        ST.sweep_checkpoint(run.checkpoint, Settings(device="cpu"), data_dir=data_dir, grid={"nsteps": (1,)},
                           progress=False)


def test_a_malicious_checkpoint_is_refused_in_a_whole_sentence_without_torchs_advice(tmp_path, capsys):
    path = tmp_path / "checkpoint.pt"
    torch.save({"format": 1, "model": {}, "x": _Reduce(os.system, ("echo ran",))}, path)
    with pytest.raises(C.CheckpointError) as err:
        C.load_checkpoint(path)
    msg = str(err.value)
    assert msg.startswith(f"{path} was not loaded: it asks for posix.system while being read") and msg.endswith(".")
    assert "could run code" in msg and "weights_only=False" not in msg and "add_safe_globals" not in msg
    assert sweep_cli.main([str(path), "--quiet"]) == 1
    assert _one_line(capsys.readouterr().err) == f"error: {msg}"


def _damaged_data(tmp_path) -> str:
    FD.write_fake_cifar(tmp_path / "damaged", n_train=100, n_test=40, seed=0)
    batch = tmp_path / "damaged" / "cifar-10-batches-py" / "data_batch_2"
    batch.write_bytes(batch.read_bytes()[:1000])
    return str(tmp_path / "damaged")


@pytest.mark.parametrize("fault, said", [
    ("a bad --n-train", "cannot take a subset of 100000 from 100 examples"),
    ("damaged data", "data_batch_2 is cut off or damaged"),
    ("missing data", "cifar10 is not in"),
])
def test_a_run_the_data_refuses_writes_nothing(data_dir, tmp_path, capsys, monkeypatch, fault, said):
    """Neither the run folder, nor the runs root made for it, nor its lock file: the data is read and checked
    before any of them is made (a missing data set is looked for where it was asked to be downloaded)."""
    out = tmp_path / "runs" / "rk4"
    argv = [*TRAIN_ARGS, "--epochs", "1", "--data-dir", data_dir, "--out-dir", str(out)]
    if fault == "a bad --n-train":
        argv[argv.index("--n-train") + 1] = "100000"
    elif fault == "damaged data":
        argv[argv.index("--data-dir") + 1] = _damaged_data(tmp_path)
    else:  # a download that fails at once: a mirror with no archive
        monkeypatch.setenv("CNET_CIFAR10_URL", (tmp_path / "none.tar.gz").as_uri())
        argv[argv.index("--data-dir") + 1] = str(tmp_path / "no-data")
    assert train_cli.main(argv) == 1
    assert said in _one_line(capsys.readouterr().err.split("\n  - ")[0])
    assert not (tmp_path / "runs").exists()


def test_a_chapter_whose_data_fails_makes_no_run_folder(tmp_path, capsys):
    """The runs root keeps only the lock file (taken to learn whether the run must be trained at all)."""
    root = tmp_path / "runs"
    with pytest.raises(CF.CifarFileError, match="data_batch_2 is cut off or damaged"):
        _runs(root, _damaged_data(tmp_path), runs=["euler_fixed"], verbose=False)
    left = list(root.iterdir())
    assert len(left) == 1 and left[0].name.startswith(".smoke-euler_fixed-") and left[0].name.endswith(".lock")
    assert left[0].is_file() and left[0].stat().st_size == 0


@pytest.mark.parametrize("command", ["sweep", "robustness"])
def test_a_sweep_or_robustness_study_the_data_refuses_writes_nothing(runs_copy, data_dir, tmp_path, capsys, command):
    """They write their rows once, after the study; this guards that order (it held before issue 33's leftovers)."""
    from cnet_lib.cli import robustness as robustness_cli

    ckpt = _runs(runs_copy, data_dir, verbose=False)["euler_fixed"].checkpoint
    cli = sweep_cli if command == "sweep" else robustness_cli
    out = tmp_path / "out" / "rows.json"
    assert cli.main([str(ckpt), "--n-test", "100000", "--data-dir", data_dir, "--out", str(out), "--quiet"]) == 1
    assert "cannot take a subset of 100000 from 40 examples" in _one_line(capsys.readouterr().err)
    assert not out.parent.exists()


# ============================================================================ the pendulum's study store
def test_a_link_planted_as_a_pendulum_study_is_set_aside_never_read(tmp_path):
    victim = tmp_path / "victim.pt"
    C.save_checkpoint(victim, {}, {"study": "another"})
    path = tmp_path / "pendulum" / "smoke-abc.pt"
    path.parent.mkdir()
    path.symlink_to(victim)
    said = []
    assert PS.load_study(path, {"study": "mine"}, "the ODE-Nets", say=said.append) is None
    assert "is a symbolic link, not a study file" in said[0] and "moved to smoke-abc.pt.damaged-" in said[0]
    assert victim.is_file() and not os.path.lexists(path)


@pytest.fixture
def small_study(monkeypatch):
    from cnet_lib import pendulum as P
    from cnet_lib.pendulum import trained_models as TM

    monkeypatch.setattr(TM, "_TRAINED", {})
    return P.config_for("smoke", n_iters=12, control_iters=6)


def test_the_pendulum_store_cleans_a_killed_save_and_says_a_full_disk(small_study, tmp_path, monkeypatch, capsys):
    from cnet_lib import pendulum as P
    from cnet_lib.pendulum import trained_models as TM

    settings = Settings(runs_dir=tmp_path, device="cpu")
    _disk_full_after(monkeypatch, 4000)
    fits = P.train_models(small_study, settings=settings, progress=False)
    said = capsys.readouterr().out
    assert "could not be saved in" in said and "(the disk is full)" in said and "for this session only" in said
    assert not list((tmp_path / "pendulum").glob("*.pt")) and not list((tmp_path / "pendulum").glob(".*.tmp"))
    monkeypatch.undo()
    monkeypatch.setattr(TM, "_TRAINED", {})
    P.train_models(small_study, settings=settings, progress=False)
    (path,) = (tmp_path / "pendulum").glob("smoke-*.pt")
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    host = F.process_tag().split("-", 1)[1]
    killed = path.parent / f".{path.name}.{ended.stdout.strip()}-{host}.k1ll3d.tmp"
    live = path.parent / f".{path.name}.{os.getppid()}-{host}.l1v3.tmp"
    for tmp in (killed, live):
        tmp.write_bytes(b"PK\x03\x04 unfinished")
    monkeypatch.setattr(TM, "_TRAINED", {})
    again = P.train_models(small_study, settings=settings, progress=False)
    assert not killed.exists() and live.exists() and list(again) == list(fits)
