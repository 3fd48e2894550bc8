"""Data-parallel training (cnet_lib.runtime.distributed; cnet_lib.images.training.train_loop under torchrun): two CPU
processes (gloo) against one process on the same global batches, rank 0 alone writing, resume with the same
world size, and the pieces on their own.

The reference for two ranks on the CPU is one process that does what the ranks do, on the same global batch:
each half-batch forward and backward on its own (BatchNorm normalises each half with its own statistics, as
each rank's BatchNorm does on the CPU, where PyTorch's SyncBatchNorm refuses CPU tensors), the two gradients
averaged, one SGD step; running BatchNorm statistics from the first half only (rank 0's, which every rank
gets after each epoch).  Tolerance: none, the weights must be equal to the bit.  With two ranks the
all-reduce adds two floats (one order only) and halves them (exact), and every piece of arithmetic is the
same as the reference's, as long as both run on one CPU thread (a different thread count may change the
last bits of a convolution's gradient).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from cnet_lib.images.data.batches import iterate_batches
from cnet_lib.images.data.download import write_fake_cifar
from cnet_lib.images.data.image_data import TEST_SUBSET_SEED, load_dataset
from cnet_lib.images.runs.image_presets import image_runs
from cnet_lib.images.training.evaluation import evaluate
from cnet_lib.images.training.train_config import build_model
from cnet_lib.images.training.train_state import CHECKPOINT, RESULTS, load_model, start_or_resume
from cnet_lib.runtime.device import torch_threads
from cnet_lib.runtime.settings import Settings
from cnet_lib.runtime import distributed as D

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def smoke_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    write_fake_cifar(root, n_train=256, n_test=128, seed=0)  # the smoke preset's sizes
    return str(root)


def _torchrun(args, tmp_path, timeout=240) -> subprocess.CompletedProcess:
    """Two processes on this machine's CPU, one thread each, each epoch save logged to tmp_path/writes."""
    env = {**os.environ, "CNET_THREADS": "1", "OMP_NUM_THREADS": "1", "CNET_TEST_WRITES": str(tmp_path / "writes")}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout)


def _state(model) -> dict:
    return {k: v.detach().clone() for k, v in model.state_dict().items() if torch.is_tensor(v)}


def _one_process(cfg) -> dict:
    """What two CPU ranks compute, in this process (see the module docstring): after every epoch the state,
    the test accuracy and the training loss; after every refinement the digest of the model and optimizer."""
    data = load_dataset(cfg.dataset, cfg.data_dir, cfg.n_train, cfg.n_test, seed=cfg.seed, device="cpu",
                        progress=False, test_seed=TEST_SUBSET_SEED)
    torch.manual_seed(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    model = build_model(cfg)
    state = start_or_resume(cfg, model, None, torch.device("cpu"), gen)
    opt, out = state.optimizer, {"states": {}, "acc": {}, "loss": {}, "digests": {}}
    with torch_threads(1):
        for epoch in range(cfg.epochs):
            if epoch in cfg.refine_at:
                model.refine(opt)
                out["digests"][epoch + 1] = D.state_digest(model, opt)
            model.train()
            losses = []
            for xb, yb in iterate_batches(data.train_x, data.train_y, cfg.batch_size, data.mean, data.std, gen,
                                          shuffle=True, train_augment=True, drop_last=True):
                grads = []
                for half, (x, y) in enumerate(zip(xb.chunk(2), yb.chunk(2))):
                    kept = [b.clone() for b in model.buffers()] if half else []
                    opt.zero_grad(set_to_none=True)
                    loss = F.cross_entropy(model(x), y)
                    loss.backward()
                    losses.append(loss.item())
                    grads.append([p.grad.clone() for p in model.parameters()])
                    for b, k in zip(model.buffers(), kept):  # rank 1's statistics are not kept
                        b.copy_(k)
                for p, g0, g1 in zip(model.parameters(), *grads):
                    p.grad = (g0 + g1) / 2
                opt.step()
            state.scheduler.step()
            out["states"][epoch + 1] = _state(model)
            out["loss"][epoch + 1] = sum(losses) / len(losses)
            out["acc"][epoch + 1] = evaluate(model, data.test_x, data.test_y, data.mean, data.std)[0]
            model.train()
    return out


def _differing(a: dict, b: dict) -> dict:
    assert a.keys() == b.keys()
    return {k: (a[k].double() - b[k].double()).abs().max().item() for k in a if not torch.equal(a[k], b[k])}


def test_two_cpu_processes_train_as_one_process_on_the_same_global_batches(smoke_data, tmp_path):
    """``torchrun --nproc_per_node=2`` of the smoke preset's refined run (M = N_t: 1 -> 2 -> 4 after epochs 1 and
    2), stopped after epoch 2 and resumed with the same world size to epoch 3: after each part the weights
    equal the one-process reference's to the bit, the refined replicas are the same on both ranks (and the
    reference's), rank 0 alone saved, and each epoch is reported once."""
    out = tmp_path / "run"
    cfg = image_runs("smoke", data_dir=smoke_data, device="cpu", progress=False, refine_at=(1, 2),
                     epochs=3)["rk4_refined"]
    command = ["train", "--preset", "smoke", "--run", "rk4_refined", "--data-dir", smoke_data, "--device", "cpu",
               "--out-dir", str(out), "--refine-at", "1", "2"]
    first = _torchrun([str(ROOT / "tests" / "ddp_probe.py"), "--", *command, "--epochs", "2"], tmp_path)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-4000:]
    ref = _one_process(cfg)
    assert (tmp_path / "writes").read_text().splitlines() == ["0 1", "0 2"], "rank 0 alone saves, once an epoch"
    assert [first.stdout.count(f"epoch {e}/2: loss") for e in (1, 2)] == [1, 1] and first.stdout.count("done:") == 1
    assert not _differing(_state(load_model(out, "cpu")[0]), ref["states"][2])

    second = _torchrun(["-m", "cnet_lib", "--", *command, "--epochs", "3", "--resume", "--quiet"], tmp_path)
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-4000:]
    model, ck = load_model(out, "cpu")
    assert ck["extra"]["epoch"] == 3 and model.manifestation == [("rk4_classic", 4)] * 3
    assert not _differing(_state(model), ref["states"][3])
    assert sorted(p.name for p in out.iterdir()) == [CHECKPOINT, RESULTS]  # no temporaries left
    results = json.loads((out / RESULTS).read_text())
    rows = results["history"]
    assert results["environment"]["world_size"] == 2 and [r["world_size"] for r in rows] == [2, 2, 2]
    for epoch in (2, 3):  # refined before epochs 2 (first launch) and 3 (the resumed one): checked on both ranks
        assert rows[epoch - 1]["replica_digests"] == [ref["digests"][epoch]] * 2
    assert [r["test_acc"] for r in rows] == [ref["acc"][e] for e in (1, 2, 3)]
    assert [r["train_loss"] for r in rows] == pytest.approx([ref["loss"][e] for e in (1, 2, 3)], rel=1e-6)


def test_shards_of_every_batch_put_together_are_the_batches_of_one_process():
    x = torch.randint(0, 256, (50, 3, 8, 8), dtype=torch.uint8)
    y = torch.arange(50) % 10
    mean, std = torch.full((3,), 0.5), torch.full((3,), 0.25)

    def batches(shard=None):
        gen = torch.Generator().manual_seed(3)
        return list(iterate_batches(x, y, 16, mean, std, gen, shuffle=True, train_augment=True, shard=shard))

    whole = batches()
    parts = [batches((r, 3)) for r in range(3)]
    assert len(whole) == 4 and all(len(p) == 4 for p in parts)  # the last batch (2 images) is split too
    for i, (xb, yb) in enumerate(whole):
        assert torch.equal(torch.cat([p[i][0] for p in parts]), xb)
        assert torch.equal(torch.cat([p[i][1] for p in parts]), yb)
    assert [len(p[0][1]) for p in parts] == [5, 5, 6] and [len(p[3][1]) for p in parts] == [0, 1, 1]
    assert [D.shard_bounds(10, r, 4) for r in range(4)] == [(0, 2), (2, 5), (5, 7), (7, 10)]


def test_the_world_comes_from_torchrun_and_one_process_is_rank_0_of_1():
    assert D.world() == D.World() and D.World().main and not D.World().parallel
    w = D.launched_world({"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4"})
    assert (w.rank, w.size, w.local_rank, w.local_size, w.main, w.parallel) == (3, 8, 1, 4, False, True)
    assert D.launched_world({}) == D.World()
    launched = Settings.from_environment({"RANK": "1", "WORLD_SIZE": "2", "CNET_PRESET": "smoke"}).launch
    assert launched == (("RANK", "1"), ("WORLD_SIZE", "2")) and Settings.from_environment({}).launch == ()
    assert D.launched_world(dict(launched)) == D.World(1, 2, 1, 2)
    with pytest.raises(ValueError, match="torchrun"):
        D.launched_world({"RANK": "2", "WORLD_SIZE": "2"})
    with pytest.raises(ValueError, match="divisible by 3"):
        D.check_divides(128, D.World(0, 3))
    with D.process_group("cpu", environ={}) as w:  # one process: no process group, nothing to do
        assert w == D.World() and not torch.distributed.is_initialized()
    assert D.rank_device("cpu", D.World(1, 2, 1, 2)) == torch.device("cpu")


def test_replicas_that_differ_are_named(monkeypatch):
    model = build_model(image_runs("smoke")["rk4_refined"])
    mine = D.state_digest(model)
    assert D.check_replicas("the start", model) == [mine]
    monkeypatch.setattr(D, "world", lambda: D.World(0, 3))
    monkeypatch.setattr(D.dist, "all_gather_object", lambda box, d: box.__setitem__(slice(None), [d, d, "other"]))
    with pytest.raises(D.ReplicasDiffer, match=r"after the refinement before epoch 2 .* rank\(s\) \[2\]"):
        D.check_replicas("the refinement before epoch 2", model)
    with torch.no_grad():
        next(model.parameters()).view(-1)[0] += 1e-7
    assert D.state_digest(model) != mine  # one bit of one weight changes the digest


def test_sync_batchnorm_keeps_every_parameter_and_computes_batchnorm_in_one_process():
    """OdeBlock residuals refuse torch's convert_sync_batchnorm; the in-place conversion keeps the model's
    parameters, buffers and state-dict keys, and without a process group it computes what BatchNorm does."""
    torch.manual_seed(0)
    model = build_model(image_runs("smoke")["rk4_refined"]).refine()
    params, keys = list(model.parameters()), list(model.state_dict())
    x = torch.randn(6, 3, 32, 32)
    before = model(x)
    D.sync_batchnorm(model)
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    assert len(bns) == 11 and all(type(m) is torch.nn.SyncBatchNorm for m in bns)
    assert all(a is b for a, b in zip(model.parameters(), params)) and list(model.state_dict()) == keys
    assert torch.equal(model(x), before)


@pytest.mark.cuda
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_two_gpus_train_as_one_gpu_on_the_same_global_batches(smoke_data, tmp_path):
    """NEVER RUN YET (no machine with two GPUs has been lent): NCCL, SyncBatchNorm, each rank its own GPU.
    ``torchrun --nproc_per_node=2`` on CUDA against one GPU training the same run eagerly (graphs off, as
    under DDP).  SyncBatchNorm normalises with the statistics of the whole global batch, so the reference is
    the plain one-process run; they differ by float32 round-off (SyncBatchNorm's statistics are computed
    otherwise than cuDNN's, and CUDA's convolution gradients are not deterministic): weights within 1e-3
    after the 16 steps, test accuracies within 2 of the 128 images."""
    from cnet_lib.images.training.train_loop import train

    out = tmp_path / "run"
    proc = _torchrun(["-m", "cnet_lib", "--", "train", "--preset", "smoke", "--run", "rk4_refined", "--data-dir",
                      smoke_data, "--device", "cuda", "--out-dir", str(out), "--quiet"], tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    cfg = image_runs("smoke", data_dir=smoke_data, device="cuda", progress=False, cuda_graphs=False)["rk4_refined"]
    ref = train(cfg)
    gaps = _differing(_state(load_model(out, "cpu")[0]), {k: v.cpu() for k, v in _state(ref.model).items()})
    assert max(gaps.values(), default=0.0) < 1e-3, gaps
    rows = json.loads((out / RESULTS).read_text())["history"]
    assert [r["test_acc"] for r in rows] == pytest.approx([r["test_acc"] for r in ref.history], abs=2 / 128)
    assert rows[1]["replica_digests"][0] == rows[1]["replica_digests"][1]


def test_rank_0_alone_sets_a_damaged_results_file_aside_when_two_ranks_resume(smoke_data, tmp_path):
    """A run folder whose ``results.json`` is damaged (``{"epochs_done": null}``), resumed by two ranks.  Every rank
    used to find the damage and act on it (two renames, the second failing with "cannot be moved aside", or
    moving rank 0's rewritten file aside; the sentence said twice).  Now rank 0 alone sets it aside and writes it
    again; the other ranks resume from the same checkpoint without touching it.  The probe makes a rank that finds
    the damage wait for the others to find it too, so the old race happened every time (tests/ddp_probe.py).
    One epoch in this process first, then one more epoch resumed by two ranks (2 steps each, 64 images)."""
    from cnet_lib.cli import train as train_cli

    out, race = tmp_path / "run", tmp_path / "race"
    race.mkdir()
    command = ["train", "--preset", "smoke", "--run", "rk4_refined", "--data-dir", smoke_data, "--device", "cpu",
               "--out-dir", str(out), "--n-train", "64", "--quiet"]
    assert train_cli.main([*command[1:], "--epochs", "1"]) == 0
    (out / RESULTS).write_text('{"epochs_done": null}')
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                           str(ROOT / "tests" / "ddp_probe.py"), "--", *command, "--epochs", "2", "--resume"],
                          capture_output=True, text=True, cwd=ROOT, timeout=240,
                          env={**os.environ, "CNET_THREADS": "1", "OMP_NUM_THREADS": "1",
                               "CNET_TEST_WRITES": str(tmp_path / "writes"), "CNET_TEST_RACE": str(race)})
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-4000:]
    log = (tmp_path / "writes").read_text().splitlines()
    assert [ln for ln in log if "set aside" in ln] == ["0 set aside"], log
    assert said.count(f"{out / RESULTS} cannot be used") == 1 and "cannot be moved aside" not in said, said[-4000:]
    assert len(list(out.glob(f"{RESULTS}.damaged-*"))) == 1
    assert json.loads(next(out.glob(f"{RESULTS}.damaged-*")).read_text()) == {"epochs_done": None}
    weights = sorted(ln.split()[::2] for ln in log if " weights " in ln)
    assert [r for r, _ in weights] == ["0", "1"] and weights[0][1] == weights[1][1], log
    assert weights[0][1] == D.state_digest(load_model(out, "cpu")[0]), "rank 0 saved the weights both ranks hold"
    rows = json.loads((out / RESULTS).read_text())["history"]
    assert len(rows) == 2 and rows[1]["replica_digests"][0] == rows[1]["replica_digests"][1]  # refined before epoch 2
