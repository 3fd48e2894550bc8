"""Faults: a training killed or interrupted, a save that fails, a damaged or foreign checkpoint.

Nothing is lost (the last good checkpoint stays whole), nothing is left half-written, and every
command line and the chapters say in one sentence what happened and what to do, never with a
traceback.  The kill and Ctrl-C tests run ``python -m cnet_lib train`` in a subprocess on small
fake data, with epochs long enough (about a second) to be interrupted in their middle.
"""
from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from cnet_lib.images.data.download import write_fake_cifar
from cnet_lib.images.runs.image_presets import image_runs
from cnet_lib.images.runs import run_store as RS
from cnet_lib.images.training import evaluation as S, train_state as TS
from cnet_lib.runtime.settings import Settings
from cnet_lib.cli import sweep as sweep_cli, train as train_cli
from cnet_lib.runtime import checkpoint as C
from cnet_lib import images as T

pytestmark = pytest.mark.slow  # kills and interrupts trainings in subprocesses

RUN = ["--dataset", "cifar10", "--channels", "4", "8", "8", "--n-basis", "1", "--scheme", "rk4_classic",
       "--refine-at", "1", "--batch-size", "32", "--lr", "0.05", "--lr-schedule", "constant", "--quiet",
       "--device", "cpu"]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    write_fake_cifar(root, n_train=1024, n_test=64, seed=0)
    return str(root)


def _env():
    env = dict(os.environ)
    env["CNET_THREADS"] = "1"  # the same arithmetic in every process, whatever the machine's load
    return env


def _cli(data_dir, out, epochs, *extra):
    return [sys.executable, "-m", "cnet_lib", "train", *RUN, "--data-dir", data_dir, "--epochs", str(epochs),
            "--out-dir", str(out), *extra]


def _epochs_done(out: Path) -> int:
    try:
        return json.loads((out / TS.RESULTS).read_text())["epochs_done"]
    except (OSError, ValueError, KeyError):
        return 0


def _epoch_seconds(out: Path) -> float:
    return json.loads((out / TS.RESULTS).read_text())["history"][-1]["train_seconds"]


def _interrupt_mid_epoch(cmd, out: Path, sig, after_epochs: int = 1, fraction: float = 0.3):
    """Start ``cmd``, wait until ``after_epochs`` epochs are saved, then send ``sig`` a ``fraction`` of
    the last epoch's own duration later: in the middle of the next epoch on a slow or a fast machine.  The training
    gets SIGINT's default action, as a command started in a terminal does: a test run started in the background of a
    non-interactive shell inherits SIGINT ignored, and so would the training."""
    proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 300
    while _epochs_done(out) < after_epochs:
        if proc.poll() is not None:
            pytest.fail(f"training ended before it could be interrupted: {proc.communicate()}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("training did not finish its first epoch in 300 s")
        time.sleep(0.02)
    time.sleep(fraction * _epoch_seconds(out))
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=600)
    assert _epochs_done(out) == after_epochs, "the signal must land in the middle of the next epoch"
    return proc.returncode, stdout, stderr


def _weights(out: Path) -> dict:
    return {k: v for k, v in C.load_checkpoint(out / TS.CHECKPOINT)["model"].items() if torch.is_tensor(v)}


def _no_temporaries(folder: Path) -> bool:
    return not list(folder.glob(".*.tmp"))


def test_sigkill_mid_epoch_then_resume_gives_the_uninterrupted_weights(data_dir, tmp_path):
    straight = subprocess.run(_cli(data_dir, tmp_path / "straight", 3), env=_env(), capture_output=True, text=True)
    assert straight.returncode == 0, straight.stderr
    out = tmp_path / "killed"
    rc, _, _ = _interrupt_mid_epoch(_cli(data_dir, out, 3), out, signal.SIGKILL)
    assert rc == -signal.SIGKILL
    resumed = subprocess.run(_cli(data_dir, out, 3, "--resume"), env=_env(), capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    a, b = _weights(tmp_path / "straight"), _weights(out)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert _no_temporaries(out)


def test_ctrl_c_in_training_saves_nothing_partial_and_says_how_to_continue(data_dir, tmp_path):
    out = tmp_path / "run"
    rc, _, stderr = _interrupt_mid_epoch(_cli(data_dir, out, 3), out, signal.SIGINT)
    assert rc == 130
    assert "interrupted; epoch 1 is saved" in stderr and "--resume" in stderr and "Traceback" not in stderr
    assert _no_temporaries(out) and sorted(p.name for p in out.iterdir()) == [TS.CHECKPOINT, TS.RESULTS]
    assert C.load_checkpoint(out / TS.CHECKPOINT)["extra"]["epoch"] == 1
    done = subprocess.run(_cli(data_dir, out, 3, "--resume"), env=_env(), capture_output=True, text=True)
    assert done.returncode == 0 and _epochs_done(out) == 3, done.stderr


def test_ctrl_c_in_a_sweep_writes_nothing(data_dir, tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    T.train(T.TrainConfig(dataset="cifar10", data_dir=data_dir, n_train=64, n_test=32, channels=(2, 4, 4),
                          batch_size=32, epochs=1, scheme="euler", device="cpu", progress=False, out_dir=str(out)))

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(S, "evaluate", interrupted)
    assert sweep_cli.main([str(out), "--quiet", "--n-steps", "1", "2"]) == 130
    err = capsys.readouterr().err
    assert "interrupted; nothing was written" in err and "run the same command again" in err
    assert not (out / "sweep.json").exists() and _no_temporaries(out)


@pytest.mark.parametrize("failure", ["disk full", "read-only folder"])
def test_a_failed_save_keeps_the_last_good_checkpoint(data_dir, tmp_path, monkeypatch, failure):
    out = tmp_path / "run"
    cfg = dict(dataset="cifar10", data_dir=data_dir, n_train=64, n_test=32, channels=(2, 4, 4), batch_size=32,
               scheme="euler", device="cpu", progress=False, out_dir=str(out))
    T.train(T.TrainConfig(**cfg, epochs=1))
    good = (out / TS.CHECKPOINT).read_bytes()
    if failure == "disk full":
        def save(obj, f):  # half a file, then the disk is full
            f.write(b"PK\x03\x04 partial")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        monkeypatch.setattr(C.torch, "save", save)
    else:
        def replace(src, dst):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        monkeypatch.setattr(C.os, "replace", replace)
    with pytest.raises(C.CheckpointSaveError) as err:
        T.train(T.TrainConfig(**cfg, epochs=2, resume=True))
    msg = str(err.value)
    assert str(out / TS.CHECKPOINT) in msg and "the previous file there is intact" in msg and "--resume" in msg
    assert (out / TS.CHECKPOINT).read_bytes() == good and _no_temporaries(out)
    monkeypatch.undo()
    assert C.load_checkpoint(out / TS.CHECKPOINT)["extra"]["epoch"] == 1
    argv = ["--dataset", "cifar10", "--data-dir", data_dir, "--n-train", "64", "--n-test", "32", "--channels", "2", "4",
            "4", "--batch-size", "32", "--scheme", "euler", "--device", "cpu", "--quiet", "--out-dir", str(out),
            "--epochs", "2", "--resume"]
    assert train_cli.main(argv) == 0 and _epochs_done(out) == 2


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "text":
        path.write_text("this is not a checkpoint\n")
    elif how == "foreign torch file":
        torch.save({"weights": torch.zeros(3)}, path)
    else:  # bytes flipped inside
        b = bytearray(data)
        b[len(b) // 3: len(b) // 3 + 40] = b"x" * 40
        path.write_bytes(bytes(b))


DAMAGES = ["truncated", "empty", "text", "foreign torch file", "flipped bytes"]
MESSAGES = {"truncated": "is truncated", "empty": "is empty", "text": "is not a checkpoint",
            "foreign torch file": "not a cnet_lib checkpoint", "flipped bytes": "is damaged"}


@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_checkpoint_gets_one_clear_sentence_in_every_command_line(data_dir, tmp_path, how, capsys):
    out = tmp_path / "run"
    argv = ["--dataset", "cifar10", "--data-dir", data_dir, "--n-train", "64", "--n-test", "32", "--channels", "2", "4",
            "4", "--batch-size", "32", "--scheme", "euler", "--device", "cpu", "--quiet", "--out-dir", str(out),
            "--epochs", "1"]
    assert train_cli.main(argv) == 0
    _damage(out / TS.CHECKPOINT, how)
    capsys.readouterr()
    assert train_cli.main(argv[:-1] + ["2", "--resume"]) == 1
    err = capsys.readouterr().err.strip()
    assert MESSAGES[how] in err and "Traceback" not in err and len(err.splitlines()) == 1, err
    assert sweep_cli.main([str(out), "--quiet"]) == 1
    err = capsys.readouterr().err.strip()
    assert MESSAGES[how] in err and "Traceback" not in err and len(err.splitlines()) == 1, err


def test_a_damaged_cached_run_is_set_aside_and_trained_again(data_dir, tmp_path, capsys):
    tiny = dict(n_train=64, n_test=32, batch_size=32, channels=(2, 4, 4))
    runs = RS.trained_runs(Settings(preset="smoke", runs_dir=tmp_path, data_dir=data_dir, device="cpu"), verbose=False, **tiny)
    folder = runs["euler_fixed"].out_dir
    _damage(folder / TS.CHECKPOINT, "truncated")
    capsys.readouterr()
    again = RS.trained_runs(Settings(preset="smoke", runs_dir=tmp_path, data_dir=data_dir, device="cpu"), verbose=False, **tiny)
    out = capsys.readouterr().out
    assert "is truncated" in out and "moved to checkpoint.pt.damaged-" in out and "trained again" in out
    assert again["euler_fixed"].trained_now and not again["rk4_refined"].trained_now
    assert len(list(folder.glob("checkpoint.pt.damaged-*"))) == 1, "the damaged file is kept, not deleted"


def test_ctrl_c_in_a_chapter_says_how_to_continue(data_dir, tmp_path, monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(RS, "train", interrupted)
    with pytest.raises(KeyboardInterrupt):
        RS.trained_runs(Settings(preset="smoke", runs_dir=tmp_path, data_dir=data_dir, device="cpu"), verbose=False, n_train=64, n_test=32)
    out = capsys.readouterr().out
    assert "interrupted before the first epoch finished" in out and "run this cell again" in out
