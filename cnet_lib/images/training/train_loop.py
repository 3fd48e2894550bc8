"""Training ContinuousNets on CIFAR with refinement: SGD (momentum, weight decay) with a per-epoch
learning-rate schedule, one (graph-captured) step at a time.

At every epoch listed in ``refine_at`` every OdeBlock doubles M and N_t before that epoch trains (θ(t)
unchanged, SGD momentum mapped along: :meth:`ContinuousNet.refine`).  The run's configuration is
:class:`cnet_lib.images.training.train_config.TrainConfig`; its checkpoints and resume are
:mod:`cnet_lib.images.training.train_state`.  The command line is ``python -m cnet_lib train``.

Inside a process group of several ranks (``torchrun``, :mod:`cnet_lib.runtime.distributed`) the same loop
trains data-parallel: each rank its slice of every global batch, the model in DistributedDataParallel (built
again after every refinement, the replicas compared), rank 0 alone writing and printing, steps eager.
"""
from __future__ import annotations

import contextlib
import dataclasses
import gc
import time
from pathlib import Path
from typing import Callable, Mapping, Optional

import torch
import torch.nn.functional as F

from ...core.models import ContinuousNet
from ...runtime.checkpoint import remove_stale_temporaries
from ...runtime.cuda_graphs import StepRunner, train_step_key
from ...runtime.device import (Precision, available_cores, environment, image_step_flops, out_of_memory_hint,
    precision_for, resolve_device, same_device, threads_for, torch_threads)
from ...runtime.distributed import World
from ...runtime.files import FolderBusy, check_creatable, check_writable, folder_lock
from ...runtime.progress import progress_bar, progress_write
from ...runtime import cuda_graphs, distributed
from ..data.batches import iterate_batches, n_batches
from ..data.image_data import ImageData, TEST_SUBSET_SEED, load_dataset
from .evaluation import Evaluator
from .train_config import TrainConfig, build_model
from .train_state import CHECKPOINT, RESULTS, TrainResult, results_record, save_epoch, start_or_resume

__all__ = ["TrainingDiverged", "SGDStep", "train"]


class TrainingDiverged(FloatingPointError):
    """The training loss became NaN or infinite."""


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# --------------------------------------------------------------------------- one SGD step
class SGDStep:
    """One SGD step of ``model`` on a batch: forward (at ``precision``), cross-entropy (with
    ``label_smoothing``), backward,
    ``optimizer.step()``.  Returns the detached loss, the number of correct predictions and
    whether the loss is finite, as tensors on the device (no host synchronisation).

    With a ``graph_cls`` (:func:`cnet_lib.runtime.cuda_graphs.graph_class`: CUDA graphs on CUDA) the whole
    step is captured once and replayed (:class:`cnet_lib.runtime.cuda_graphs.StepRunner`); a refinement,
    another manifestation, another learning rate or batch shape captures it again.  The returned
    tensors are then overwritten by the next call: read them before.

    The forward pass calls :attr:`net`: the model itself, or its DistributedDataParallel wrapper.
    """

    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer, precision: Precision,
                 graph_cls: Optional[type] = None, label_smoothing: float = 0.0):
        self.model, self.optimizer, self.precision = model, optimizer, precision
        self.net: torch.nn.Module = model
        self.label_smoothing = float(label_smoothing)
        self.runner = StepRunner(self._body, graph_cls)
        self._device = torch.device("cpu")

    def _body(self, xb: torch.Tensor, yb: torch.Tensor):
        self.optimizer.zero_grad(set_to_none=True)
        with self.precision.autocast(self._device, cache_enabled=not self.runner.graphed):
            logits = self.net(self.precision.prepare(xb))
        loss = F.cross_entropy(logits.float(), yb, label_smoothing=self.label_smoothing)
        loss.backward()
        self.optimizer.step()
        loss = loss.detach()
        return loss, (logits.detach().argmax(1) == yb).sum(), torch.isfinite(loss)

    def __call__(self, xb: torch.Tensor, yb: torch.Tensor):
        self._device = xb.device
        return self.runner(train_step_key(self.model, self.optimizer, xb, yb), xb, yb)


# --------------------------------------------------------------------------- the loop, in steps
def _check_data(cfg: TrainConfig, data: Optional[ImageData], device: torch.device,
                source: Optional[Mapping[str, Optional[str]]]) -> ImageData:
    """The run's data on ``device``: loaded (a missing data set downloaded from ``source``), or the
    ``data`` passed after checking it is the config's."""
    if data is None:
        return load_dataset(cfg.dataset, cfg.data_dir, cfg.n_train, cfg.n_test, seed=cfg.seed, device=device,
                            progress=cfg.progress, test_seed=TEST_SUBSET_SEED, **dict(source or {}))
    if not same_device(data.device, device):
        raise ValueError(f"data is on {data.device} but training runs on {device}; load it with device={device}")
    if data.name != cfg.dataset or (cfg.n_train is not None and len(data.train_y) != cfg.n_train) or (
            cfg.n_test is not None and len(data.test_y) != cfg.n_test):
        raise ValueError(
            f"the data passed ({data!r}) is not what the config describes ({cfg.dataset}, n_train={cfg.n_train}, "
            f"n_test={cfg.n_test}); load it with load_dataset(cfg.dataset, cfg.data_dir, cfg.n_train, cfg.n_test, "
            "seed=cfg.seed, test_seed=TEST_SUBSET_SEED) or pass data=None"
        )
    return data


def _diverged(cfg: TrainConfig, loss: torch.Tensor, epoch: int, i: int, lr: float, nts: list,
              ckpt_path: Optional[Path]) -> TrainingDiverged:
    """The error of a loss that is not finite at step ``i``: what to do, and what is saved."""
    return TrainingDiverged(
        f"the training loss is not finite (nan/inf; last value {loss.item()}) at epoch {epoch + 1}, "
        f"step {i} (lr {lr:g}; N_t={nts}). Training diverged: lower the learning rate (--lr, e.g. "
        f"{cfg.lr / 10:g}) and start again in a fresh --out-dir"
        + (f"; the last good checkpoint is {ckpt_path}" if ckpt_path and ckpt_path.exists() else "")
    )


def _train_epoch(cfg: TrainConfig, step: SGDStep, data: ImageData, gen: torch.Generator, epoch: int, lr: float,
                 ckpt_path: Optional[Path], world: World = World()) -> dict:
    """Train one epoch (this rank's slice of every batch); returns the training part of its history row
    (losses and accuracies over the whole global batches).  Raises TrainingDiverged as soon as a
    (periodically checked) loss is not finite on any rank."""
    model, device = step.model, data.device
    nts = [b.n_steps for b in model.blocks]
    steps_per_epoch = n_batches(len(data.train_x), cfg.batch_size, drop_last=True)
    check_every = 1 if device.type == "cpu" else 50  # a check synchronises host and device
    loss_sum = torch.zeros((), device=device)
    correct = torch.zeros((), dtype=torch.long, device=device)
    bad = torch.zeros((), dtype=torch.bool, device=device)
    seen = 0
    bar = progress_bar(total=steps_per_epoch, desc=f"epoch {epoch + 1}/{cfg.epochs} N_t={nts}", leave=False,
                       disable=not cfg.progress)
    _sync(device)
    t0, c0 = time.perf_counter(), time.process_time()
    batches = iterate_batches(data.train_x, data.train_y, cfg.batch_size, data.mean, data.std, gen, shuffle=True,
                              train_augment=True, drop_last=True, cutout=cfg.cutout,
                              shard=(world.rank, world.size) if world.parallel else None)
    try:
        for i, (xb, yb) in enumerate(batches, 1):
            loss, n_correct, finite = step(xb, yb)
            bad |= ~finite
            loss_sum += loss * len(yb)
            correct += n_correct
            seen += len(yb)
            bar.update(1)
            if i % check_every == 0 or i == steps_per_epoch:
                if distributed.any_rank(bad).item():
                    raise _diverged(cfg, loss, epoch, i, lr, nts, ckpt_path)
                if cfg.progress:
                    bar.set_postfix(loss=f"{loss_sum.item() / seen:.3f}")
        _sync(device)
    finally:
        bar.close()
    if world.parallel:  # every rank trained on equal slices
        loss_sum, correct, seen = distributed.all_sum(loss_sum), distributed.all_sum(correct), seen * world.size
    return {
        "epoch": epoch + 1,
        "lr": lr,
        "refined": epoch in cfg.refine_at,
        "train_loss": loss_sum.item() / max(seen, 1),
        "train_acc": correct.item() / max(seen, 1),
        "train_seconds": time.perf_counter() - t0,  # wall clock, evaluation excluded
        "train_cpu_seconds": time.process_time() - c0,  # CPU time of this process (all threads)
        "n_steps": nts,
        "n_basis": [b.n_basis for b in model.blocks],
        "n_parameters": model.n_parameters(),
    }


def _cpu_threads(cfg: TrainConfig, model: ContinuousNet, device: torch.device, world: World = World()) -> Optional[int]:
    """On the CPU, the torch threads for this epoch's step size (:func:`cnet_lib.runtime.device.threads_for`,
    ``cfg.threads`` when set; with several ranks, each rank's slice of the batch on its share of the node's
    cores); ``None`` on a GPU (the host thread count does not matter there)."""
    if device.type != "cpu":
        return None
    stages = model.blocks[0].scheme.stages
    flops = image_step_flops(cfg.channels, cfg.batch_size // world.size, stages, [b.n_steps for b in model.blocks])
    cores = max(1, available_cores() // world.local_size) if world.parallel else None
    return threads_for(flops, cores, override=cfg.threads)


def train(config: TrainConfig, data: Optional[ImageData] = None,
          on_epoch: Optional[Callable[[dict], None]] = None, *,
          source: Optional[Mapping[str, Optional[str]]] = None) -> TrainResult:
    """Train (or resume, or just load a finished run); see :mod:`cnet_lib.images.training.train_state`.

    Returns the model in eval mode with its history (one dict per epoch).

    ``data`` may be passed to reuse a dataset already on the device (it must be the one the
    config describes); otherwise it is loaded from ``cfg.data_dir``, and a missing data set is
    downloaded from ``source`` (``{"url", "md5"}``: a session's
    :meth:`cnet_lib.runtime.settings.Settings.download_source`; ``None``: the published archive).
    ``on_epoch`` is called with each new history row.

    With an ``out_dir``, the run folder is locked for the whole call
    (:func:`cnet_lib.runtime.files.folder_lock`): with ``resume`` a second process on the same
    folder waits, saying for whom, and then continues or loads what the first one saved; without
    ``resume`` it stops at once with :class:`cnet_lib.runtime.files.FolderBusy`.  A folder that
    cannot be written stops before any data is loaded
    (:class:`cnet_lib.runtime.files.FolderNotWritable`); the data is read and checked before the run folder,
    the folder around it or its lock file is made, so a run the data refuses (a subset larger than the data
    set, damaged or missing data) writes nothing; running out of memory raises
    :class:`cnet_lib.runtime.device.OutOfMemory` with a smaller batch size to try.

    Called on every rank of a process group of several (``torchrun``; :mod:`cnet_lib.runtime.distributed`),
    it trains data-parallel: ``batch_size`` is the global batch (the number of ranks must divide it), each
    rank trains on the GPU of its local rank (on CUDA), rank 0 alone locks the folder, writes, shows
    progress and calls ``on_epoch``, and CUDA graphs are off (every step eager).  ``out_dir`` must be on a
    file system every node sees (every rank reads the checkpoint when resuming).
    """
    cfg = config
    world = distributed.world()
    device = distributed.rank_device(resolve_device(cfg.device), world)
    if world.parallel:
        distributed.check_divides(cfg.batch_size, world)
        if device.type == "cuda":  # the GPU NCCL's object collectives use
            torch.cuda.set_device(device)
        if not world.main:  # rank 0 alone shows progress
            cfg = dataclasses.replace(cfg, progress=False)
    if not cfg.out_dir:
        return _train(cfg, device, None, _check_data(cfg, data, device, source), on_epoch, world)
    out = Path(cfg.out_dir)
    what = f"training {cfg.run_name or out.name}"
    fix = "choose another out_dir (--out-dir) that you can write to"
    with distributed.main_first(lambda: _startable(out, cfg.resume, fix)):
        pass  # what can be checked without writing, before the data is read
    data = _check_data(cfg, data, device, source)  # before the lock: a run the data refuses writes nothing
    try:
        with distributed.main_first(lambda: _held(out, what, cfg.resume, fix)):
            return _train(cfg, device, out, data, on_epoch, world)
    except FolderBusy as err:
        raise FolderBusy(f"{err}: wait until it is done and run again with resume=True (--resume) to use or continue "
                         "its result, or choose another out_dir (--out-dir)") from None


def _refuse_existing(ckpt_path: Path, resume: bool) -> None:
    if ckpt_path.exists() and not resume:
        raise FileExistsError(
            f"{ckpt_path} already exists; pass resume=True (--resume) to continue or reload it, or choose "
            "another out_dir (--out-dir), or delete it to start over"
        )


@contextlib.contextmanager
def _startable(out: Path, resume: bool, fix: str):
    """The checks of the run folder ``out`` that create nothing (rank 0 makes them, before the data is read):
    it can be written or made (:func:`cnet_lib.runtime.files.check_creatable`), and without ``resume`` it holds
    no checkpoint."""
    check_creatable(out, fix)
    _refuse_existing(out / CHECKPOINT, resume)
    yield


@contextlib.contextmanager
def _held(out: Path, what: str, wait: bool, fix: str):
    """The run folder ``out`` locked and checked writable."""
    with folder_lock(out, what, wait=wait, fix=fix):
        check_writable(out if out.exists() else out.parent, fix)  # out itself is made by the first save
        yield


def _replicate(step: SGDStep, device: torch.device, what: str) -> list[str]:
    """Check that every rank holds the same model and optimizer state after ``what`` (their digests, gathered),
    then wrap the model in a new DistributedDataParallel: its parameters may have been replaced (refinement),
    and the old wrapper's gradient hooks go with it."""
    digests = distributed.check_replicas(what, step.model, step.optimizer)
    step.net = step.model
    gc.collect()  # the old wrapper, and its reducer's hooks on the parameters refinement kept, freed now
    step.net = distributed.wrap(step.model, device)
    return digests


def _train(cfg: TrainConfig, device: torch.device, out: Optional[Path], data: ImageData,
           on_epoch: Optional[Callable[[dict], None]], world: World = World()) -> TrainResult:
    """:func:`train` once the data is checked and the run folder ``out`` (if any) is held."""
    ckpt_path = out / CHECKPOINT if out else None
    if out:
        _refuse_existing(ckpt_path, cfg.resume)
    if out and world.main:  # what a save killed mid-write left (this folder is held: no other process is writing here)
        remove_stale_temporaries(out, (CHECKPOINT, RESULTS))
    torch.manual_seed(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    model = build_model(cfg).to(device)
    state = start_or_resume(cfg, model, ckpt_path, device, gen, writes=world.main)  # rank 0 alone fixes results.json
    env = environment(device)
    graph_cls = None if world.parallel else cuda_graphs.graph_class(device, cfg.cuda_graphs)
    precision = precision_for(device, cfg.amp, graphs=graph_cls is not None)
    step = SGDStep(model, state.optimizer, precision, graph_cls, cfg.label_smoothing)
    evaluator = Evaluator(precision, graph_cls)
    if world.parallel:
        env["world_size"] = world.size
        _replicate(step, device, "resuming" if state.history else "the start")
        if cfg.progress and cfg.cuda_graphs and device.type == "cuda":
            progress_write(f"{world.size} processes: CUDA graphs are off under DistributedDataParallel, every step "
                           "runs eagerly (README: Many GPUs)")
    for epoch in range(state.start, cfg.epochs):
        digests = None
        if epoch in cfg.refine_at:
            model.refine(state.optimizer)
            if world.parallel:
                digests = _replicate(step, device, f"the refinement before epoch {epoch + 1}")
        row = _epoch(cfg, step, evaluator, data, gen, epoch, state.scheduler.get_last_lr()[0], ckpt_path, world)
        if world.parallel:
            row.update(world_size=world.size, **({"replica_digests": digests} if digests else {}))
        state.history.append(row)
        if cfg.progress:
            progress_write(f"epoch {epoch + 1}/{cfg.epochs}: loss {row['train_loss']:.4f}, train acc {row['train_acc']:.3f}, "
                           f"test acc {row['test_acc']:.3f}, {row['train_seconds']:.1f} s, N_t={row['n_steps']}, "
                           f"M={row['n_basis']}")
        if out and world.main:
            save_epoch(out, cfg, model, state, gen, env)
        state.scheduler.step()  # the next epoch's rate (what a resumed run starts from)
        if on_epoch is not None and world.main:
            on_epoch(row)
    results = results_record(cfg, state.history, env, state.started, ckpt_path)
    return TrainResult(model=model.eval(), history=state.history, config=cfg, checkpoint=ckpt_path, results=results)


def _evaluate(cfg: TrainConfig, evaluator: Evaluator, model: ContinuousNet, data: ImageData,
              world: World) -> tuple[float, float]:
    """(test accuracy, seconds): with several ranks each evaluates its slice of the test images and the
    counts are summed."""
    if not world.parallel:
        return evaluator(model, data.test_x, data.test_y, data.mean, data.std, cfg.eval_batch_size)
    lo, hi = distributed.shard_bounds(len(data.test_y), world.rank, world.size)
    hits, seconds = evaluator.correct(model, data.test_x[lo:hi], data.test_y[lo:hi], data.mean, data.std,
                                      cfg.eval_batch_size)
    return distributed.all_sum(hits.sum()).item() / max(len(data.test_y), 1), seconds


def _epoch(cfg: TrainConfig, step: SGDStep, evaluator: Evaluator, data: ImageData, gen: torch.Generator, epoch: int,
           lr: float, ckpt_path: Optional[Path], world: World = World()) -> dict:
    """One epoch at rate ``lr``, trained and then evaluated, on the CPU threads its step size calls for;
    running out of memory says which batch size to try and what is saved.  Returns its history row.
    With several ranks, rank 0's BatchNorm statistics are copied to every rank before the evaluation."""
    model, device = step.model, data.device
    model.train()
    threads = _cpu_threads(cfg, model, device, world)
    saved = (f"; epoch {epoch} is saved in {ckpt_path}" if ckpt_path and epoch else "")
    with torch_threads(threads) if threads else contextlib.nullcontext():
        with out_of_memory_hint(device, f"training epoch {epoch + 1}", cfg.batch_size,
                                then=f" in a fresh out_dir (--out-dir): the batch size is part of the run{saved}"):
            row = _train_epoch(cfg, step, data, gen, epoch, lr, ckpt_path, world)
        distributed.broadcast_buffers(model)
        with out_of_memory_hint(device, f"evaluating after epoch {epoch + 1}", cfg.eval_batch_size,
                                "--eval-batch-size", "eval_batch_size",
                                then=" and continue with resume=True (--resume): it is not part of the run"
                                + (f"; epoch {epoch} is saved in {ckpt_path}" if saved else "")):
            row["test_acc"], row["eval_seconds"] = _evaluate(cfg, evaluator, model, data, world)
    row["torch_threads"] = threads or torch.get_num_threads()
    return row
