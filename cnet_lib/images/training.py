"""Training ContinuousNets on CIFAR with refinement, checkpoints and resume.

:func:`train` runs SGD (momentum, weight decay) with a per-epoch learning-rate schedule.  At
every epoch listed in ``refine_at`` every OdeBlock doubles M and N_t before that epoch trains
(θ(t) unchanged, SGD momentum mapped along: :meth:`ContinuousNet.refine`).  After each epoch a
checkpoint is written atomically to ``out_dir/checkpoint.pt`` (model, optimizer, RNG states,
history, config) and the history to ``out_dir/results.json``.  ``resume=True`` continues from the
checkpoint — the model is rebuilt at the initial configuration and the refinements up to the
saved epoch are replayed before loading — and gives the same weights as an uninterrupted run;
with a finished checkpoint it just loads the model ("train once, reuse everywhere").

Epoch numbers in ``refine_at`` and ``lr_milestones`` count *completed* epochs: ``refine_at=(20,)``
refines after 20 epochs, before the 21st (index 20) trains; ``lr_milestones=(30,)`` lowers the
rate from the 31st epoch on (like ``torch.optim.lr_scheduler.MultiStepLR``).

The command line is ``python -m cnet_lib.train`` (:mod:`cnet_lib.train`); the presets' runs are in
:mod:`cnet_lib.images.presets`.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Optional

import torch
import torch.nn.functional as F

from ..core.bases import basis_names
from ..core.models import ContinuousNet
from ..core.schemes import get_scheme
from ..core.validation import check_choice, check_float, check_int, check_ints
from ..runtime import cuda_graphs
from ..runtime.checkpoint import atomic_write_text, load_checkpoint, remove_stale_temporaries, save_checkpoint
from ..runtime.cuda_graphs import StepRunner, train_step_key
from ..runtime.device import Precision, environment, precision_for, resolve_device, same_device
from ..runtime.files import check_writable
from ..runtime.locks import FolderBusy, folder_lock
from ..runtime.memory import out_of_memory_hint
from ..runtime.progress import progress_bar, progress_write
from ..runtime.threads import image_step_flops, threads_for, torch_threads
from .data import DATASETS, ImageData, iterate_batches, load_dataset, n_batches
from .evaluation import Evaluator

__all__ = [
    "TrainConfig",
    "TrainResult",
    "SGDStep",
    "TrainingDiverged",
    "interrupted_message",
    "build_model",
    "learning_rate",
    "train",
    "load_model",
    "CHECKPOINT",
    "RESULTS",
]

CHECKPOINT = "checkpoint.pt"
RESULTS = "results.json"
LR_SCHEDULES = ("step", "cosine", "constant")


class TrainingDiverged(FloatingPointError):
    """The training loss became NaN or infinite."""


@dataclass
class TrainConfig:
    """Everything a training run depends on (paper names: n_basis = M, n_steps = N_t, epsilon = ε)."""

    # data
    dataset: str = "cifar10"
    data_dir: Optional[str] = None  # the directory that contains cifar-10-batches-py; default $CNET_DATA_DIR
    n_train: Optional[int] = None  # class-balanced seeded subset; None: all
    n_test: Optional[int] = None
    # model (initial configuration; refinement grows it)
    channels: tuple[int, ...] = (16, 32, 64)
    n_basis: int = 1  # M at the start
    n_steps: Optional[int] = None  # N_t at the start; None: N_t = M
    scheme: str = "rk4_classic"
    basis: str = "piecewise_constant"
    epsilon: float = 1.0
    epsilon_stitch: float = 1.0
    skip_init: bool = True
    # optimisation
    epochs: int = 10
    batch_size: int = 128
    lr: float = 0.1
    momentum: float = 0.9
    weight_decay: float = 5e-4
    lr_schedule: str = "step"  # step | cosine | constant
    lr_milestones: tuple[int, ...] = ()  # step: multiply by lr_decay from these (completed) epochs on
    lr_decay: float = 0.1
    refine_at: tuple[int, ...] = ()  # completed-epoch counts at which every OdeBlock doubles M and N_t
    seed: int = 0
    # execution (not part of the run's identity)
    device: Optional[str] = None  # None: default_device()
    amp: bool = True  # on CUDA: the mixed precision of device.precision_for (channels-last, bf16 where native)
    cuda_graphs: bool = True  # on CUDA: capture each step in a CUDA graph (cnet_lib.cuda_graphs)
    out_dir: Optional[str] = None  # None: nothing written
    resume: bool = False
    eval_batch_size: int = 500
    progress: bool = True
    preset: Optional[str] = None  # recorded in the results
    run_name: Optional[str] = None

    def __post_init__(self) -> None:
        """Check every field before any work (a typo must not cost a data load first)."""
        self.channels = check_ints("channels", self.channels, low=1, example=(16, 32, 64))
        if not self.channels:
            raise ValueError("channels must name at least one width, e.g. channels=(16, 32, 64)")
        self.refine_at = check_ints("refine_at", self.refine_at, low=0, example=(20, 40))
        self.lr_milestones = check_ints("lr_milestones", self.lr_milestones, low=0, example=(30, 60))
        check_choice("dataset", self.dataset, DATASETS)
        check_choice("lr_schedule", self.lr_schedule, LR_SCHEDULES)
        get_scheme(self.scheme)  # unknown or ambiguous names say which ones exist
        check_choice("basis", self.basis, basis_names())
        for name in ("refine_at", "lr_milestones"):
            v = getattr(self, name)
            if list(v) != sorted(set(v)):
                raise ValueError(f"{name} must be increasing, distinct epoch counts; got {v} (e.g. {name}=(20, 40))")
        for name in ("n_train", "n_test"):
            if getattr(self, name) is not None:
                check_int(name, getattr(self, name), low=1, example=2000)
        check_int("n_basis", self.n_basis, low=1, example=1)
        if self.n_steps is not None:
            check_int("n_steps", self.n_steps, low=1, example=4)
        check_int("epochs", self.epochs, low=0, example=10)
        check_int("batch_size", self.batch_size, low=1, example=128)
        check_int("eval_batch_size", self.eval_batch_size, low=1, example=500)
        check_int("seed", self.seed, example=0)
        check_float("lr", self.lr, low=0, low_open=True, example=0.1)
        check_float("momentum", self.momentum, low=0, high=1, high_open=True, example=0.9)
        check_float("weight_decay", self.weight_decay, low=0, example=5e-4)
        check_float("lr_decay", self.lr_decay, low=0, high=1, low_open=True, example=0.1)
        check_float("epsilon", self.epsilon, example=1.0)
        check_float("epsilon_stitch", self.epsilon_stitch, example=1.0)
        if self.device is not None:
            try:
                torch.device(self.device)
            except (RuntimeError, TypeError):
                raise ValueError(f"device {self.device!r} is not a torch device (e.g. device='cpu' or 'cuda')") from None

    def identity(self) -> dict:
        """The fields a checkpoint must match to be resumed by this config.

        Execution settings (device, amp, paths, progress) are left out; ``epochs`` too, so a run
        can be extended, except with the cosine schedule whose shape depends on it.
        """
        skip = {"data_dir", "device", "amp", "cuda_graphs", "out_dir", "resume", "eval_batch_size", "progress", "preset",
                "run_name"}
        if self.lr_schedule != "cosine":
            skip.add("epochs")
        return {k: v for k, v in dataclasses.asdict(self).items() if k not in skip}

    def final_n_steps(self) -> int:
        return (self.n_steps or self.n_basis) * 2 ** sum(e < self.epochs for e in self.refine_at)


# --------------------------------------------------------------------------- pieces
def build_model(cfg: TrainConfig) -> ContinuousNet:
    """The model at the run's *initial* configuration."""
    return ContinuousNet(
        channels=cfg.channels, n_basis=cfg.n_basis, n_steps=cfg.n_steps, scheme=cfg.scheme, basis=cfg.basis,
        epsilon=cfg.epsilon, epsilon_stitch=cfg.epsilon_stitch, num_classes=DATASETS[cfg.dataset].num_classes,
        skip_init=cfg.skip_init,
    )


def learning_rate(cfg: TrainConfig, epoch: int) -> float:
    """The rate for epoch index ``epoch`` (0-based): a pure function, so resuming needs no scheduler state."""
    if cfg.lr_schedule == "constant":
        return cfg.lr
    if cfg.lr_schedule == "step":
        return cfg.lr * cfg.lr_decay ** sum(epoch >= m for m in cfg.lr_milestones)
    return 0.5 * cfg.lr * (1.0 + math.cos(math.pi * epoch / max(cfg.epochs, 1)))


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _rng_state(gen: torch.Generator) -> dict:
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "data": gen.get_state(),
    }


def _set_rng_state(state: dict, gen: torch.Generator) -> None:
    # RNG states must be CPU ByteTensors, whatever map_location the checkpoint was read with
    torch.set_rng_state(state["torch"].cpu())
    if state.get("cuda") and torch.cuda.is_available() and len(state["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])
    gen.set_state(state["data"].cpu())


@dataclass
class TrainResult:
    model: ContinuousNet
    history: list[dict]
    config: TrainConfig
    checkpoint: Optional[Path]
    results: dict = field(default_factory=dict)

    @property
    def final_accuracy(self) -> Optional[float]:
        return self.history[-1]["test_acc"] if self.history else None


def _results(cfg: TrainConfig, history: list[dict], env: dict, started: str, ckpt: Optional[Path]) -> dict:
    return {
        "preset": cfg.preset,
        "run_name": cfg.run_name,
        "seed": cfg.seed,
        "config": dataclasses.asdict(cfg),
        "environment": env,
        "started_utc": started,
        "updated_utc": _now(),
        "epochs_done": len(history),
        "train_seconds_total": sum(h["train_seconds"] for h in history),
        "eval_seconds_total": sum(h["eval_seconds"] for h in history),
        "final_test_acc": history[-1]["test_acc"] if history else None,
        "checkpoint": str(ckpt) if ckpt else None,
        "history": history,
    }


# --------------------------------------------------------------------------- one SGD step
class SGDStep:
    """One SGD step of ``model`` on a batch: forward (at ``precision``), cross-entropy, backward,
    ``optimizer.step()``.  Returns the detached loss, the number of correct predictions and
    whether the loss is finite, as tensors on the device (no host synchronisation).

    With a ``graph_cls`` (:func:`cnet_lib.cuda_graphs.graph_class`: CUDA graphs on CUDA) the whole
    step is captured once and replayed (:class:`cnet_lib.cuda_graphs.StepRunner`); a refinement,
    another manifestation, another learning rate or batch shape captures it again.  The returned
    tensors are then overwritten by the next call: read them before.
    """

    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer, precision: Precision,
                 graph_cls: Optional[type] = None):
        self.model, self.optimizer, self.precision = model, optimizer, precision
        self.runner = StepRunner(self._body, graph_cls)
        self._device = torch.device("cpu")

    def _body(self, xb: torch.Tensor, yb: torch.Tensor):
        self.optimizer.zero_grad(set_to_none=True)
        with self.precision.autocast(self._device, cache_enabled=not self.runner.graphed):
            logits = self.model(self.precision.prepare(xb))
        loss = F.cross_entropy(logits.float(), yb)
        loss.backward()
        self.optimizer.step()
        loss = loss.detach()
        return loss, (logits.detach().argmax(1) == yb).sum(), torch.isfinite(loss)

    def __call__(self, xb: torch.Tensor, yb: torch.Tensor):
        self._device = xb.device
        return self.runner(train_step_key(self.model, self.optimizer, xb, yb), xb, yb)


# --------------------------------------------------------------------------- the loop, in steps
def _check_data(cfg: TrainConfig, data: Optional[ImageData], device: torch.device) -> ImageData:
    """The run's data on ``device``: loaded, or the ``data`` passed after checking it is the config's."""
    if data is None:
        return load_dataset(cfg.dataset, cfg.data_dir, cfg.n_train, cfg.n_test, seed=cfg.seed, device=device,
                            progress=cfg.progress)
    if not same_device(data.device, device):
        raise ValueError(f"data is on {data.device} but training runs on {device}; load it with device={device}")
    if data.name != cfg.dataset or (cfg.n_train is not None and len(data.train_y) != cfg.n_train) or (
            cfg.n_test is not None and len(data.test_y) != cfg.n_test):
        raise ValueError(
            f"the data passed ({data!r}) is not what the config describes ({cfg.dataset}, n_train={cfg.n_train}, "
            f"n_test={cfg.n_test}); load it with load_dataset(cfg.dataset, cfg.data_dir, cfg.n_train, cfg.n_test, "
            "seed=cfg.seed) or pass data=None"
        )
    return data


@dataclass
class _RunState:
    """Where a run stands: the next epoch to train, the optimizer, the history so far."""

    start: int
    optimizer: torch.optim.Optimizer
    history: list
    started: str


def _start_or_resume(cfg: TrainConfig, model: ContinuousNet, ckpt_path: Optional[Path], device: torch.device,
                     gen: torch.Generator) -> _RunState:
    """A fresh optimizer at epoch 0, or the state of ``ckpt_path`` when resuming: the model is
    rebuilt at its initial configuration, the refinements before the saved epoch are replayed,
    then weights, optimizer and random generators are loaded."""
    ck = None
    start = 0
    if cfg.resume and ckpt_path and ckpt_path.exists():
        ck = load_checkpoint(ckpt_path, expected_config=cfg.identity(), map_location=device)
        start = int(ck["extra"]["epoch"])
        for e in cfg.refine_at:  # rebuild the graph the checkpoint was saved from
            if e < start:
                model.refine()
        model.load_state_dict(ck["model"])
    # built after any replayed refinement: refine() replaces the coefficient Parameters
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    if ck is None:
        return _RunState(start, optimizer, [], _now())
    extra = ck["extra"]
    optimizer.load_state_dict(extra["optimizer"])
    _set_rng_state(extra["rng"], gen)
    return _RunState(start, optimizer, list(extra["history"]), extra.get("started_utc", _now()))


def _train_epoch(cfg: TrainConfig, step: SGDStep, data: ImageData, gen: torch.Generator, epoch: int, lr: float,
                 ckpt_path: Optional[Path]) -> dict:
    """Train one epoch; returns the training part of its history row.  Raises TrainingDiverged
    as soon as a (periodically checked) loss is not finite."""
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
    batches = iterate_batches(data.train_x, data.train_y, cfg.batch_size, data.mean, data.std, gen,
                              shuffle=True, train_augment=True, drop_last=True)
    try:
        for i, (xb, yb) in enumerate(batches, 1):
            loss, n_correct, finite = step(xb, yb)
            bad |= ~finite
            loss_sum += loss * len(yb)
            correct += n_correct
            seen += len(yb)
            bar.update(1)
            if i % check_every == 0 or i == steps_per_epoch:
                if bad.item():
                    raise TrainingDiverged(
                        f"the training loss is not finite (nan/inf; last value {loss.item()}) at epoch {epoch + 1}, "
                        f"step {i} (lr {lr:g}; N_t={nts}). Training diverged: lower the learning rate (--lr, e.g. "
                        f"{cfg.lr / 10:g}) and start again in a fresh --out-dir"
                        + (f"; the last good checkpoint is {ckpt_path}" if ckpt_path and ckpt_path.exists() else "")
                    )
                if cfg.progress:
                    bar.set_postfix(loss=f"{loss_sum.item() / seen:.3f}")
        _sync(device)
    finally:
        bar.close()
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


def _save(out: Path, cfg: TrainConfig, model: ContinuousNet, state: _RunState, gen: torch.Generator, env: dict) -> None:
    """Write the checkpoint of the last finished epoch and the results file, each atomically."""
    history = state.history
    ckpt_path = out / CHECKPOINT
    save_checkpoint(ckpt_path, model.state_dict(), cfg.identity(), extra={
        "epoch": history[-1]["epoch"],
        "optimizer": state.optimizer.state_dict(),
        "rng": _rng_state(gen),
        "history": history,
        "model_config": model.config(),
        "manifestation": [list(m) for m in model.manifestation],
        "run_config": dataclasses.asdict(cfg),
        "environment": env,
        "started_utc": state.started,
    })
    atomic_write_text(out / RESULTS, json.dumps(_results(cfg, history, env, state.started, ckpt_path), indent=1))


def _cpu_threads(cfg: TrainConfig, model: ContinuousNet, device: torch.device) -> Optional[int]:
    """On the CPU, the torch threads for this epoch's step size (:func:`cnet_lib.threads.threads_for`);
    ``None`` on a GPU (the host thread count does not matter there)."""
    if device.type != "cpu":
        return None
    stages = model.blocks[0].scheme.stages
    return threads_for(image_step_flops(cfg.channels, cfg.batch_size, stages, [b.n_steps for b in model.blocks]))


def train(config: TrainConfig, data: Optional[ImageData] = None,
          on_epoch: Optional[Callable[[dict], None]] = None) -> TrainResult:
    """Train (or resume, or just load a finished run); see the module docstring.

    Returns the model in eval mode with its history (one dict per epoch).

    ``data`` may be passed to reuse a dataset already on the device (it must be the one the
    config describes); ``on_epoch`` is called with each new history row.

    With an ``out_dir``, the run folder is locked for the whole call
    (:func:`cnet_lib.runtime.locks.folder_lock`): with ``resume`` a second process on the same
    folder waits, saying for whom, and then continues or loads what the first one saved; without
    ``resume`` it stops at once with :class:`cnet_lib.runtime.locks.FolderBusy`.  A folder that
    cannot be written stops before any data is loaded
    (:class:`cnet_lib.runtime.files.FolderNotWritable`), and running out of memory raises
    :class:`cnet_lib.runtime.memory.OutOfMemory` with a smaller batch size to try.
    """
    cfg = config
    device = resolve_device(cfg.device)
    if not cfg.out_dir:
        return _train(cfg, device, None, data, on_epoch)
    out = Path(cfg.out_dir)
    what = f"training {cfg.run_name or out.name}"
    fix = "choose another out_dir (--out-dir) that you can write to"
    try:
        with folder_lock(out, what, wait=cfg.resume, fix=fix):
            check_writable(out, fix)
            return _train(cfg, device, out, data, on_epoch)
    except FolderBusy as err:
        raise FolderBusy(f"{err}: wait until it is done and run again with resume=True (--resume) to use or continue "
                         "its result, or choose another out_dir (--out-dir)") from None


def _train(cfg: TrainConfig, device: torch.device, out: Optional[Path], data: Optional[ImageData],
           on_epoch: Optional[Callable[[dict], None]]) -> TrainResult:
    """:func:`train` once the run folder ``out`` (if any) is held."""
    ckpt_path = out / CHECKPOINT if out else None
    if out and ckpt_path.exists() and not cfg.resume:
        raise FileExistsError(
            f"{ckpt_path} already exists; pass resume=True (--resume) to continue or reload it, or choose "
            "another out_dir (--out-dir), or delete it to start over"
        )
    data = _check_data(cfg, data, device)
    if out:  # what a save killed mid-write left (this folder is held: no other process is writing here)
        remove_stale_temporaries(out, (CHECKPOINT, RESULTS))
    torch.manual_seed(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    model = build_model(cfg).to(device)
    state = _start_or_resume(cfg, model, ckpt_path, device, gen)
    env = environment(device)
    graph_cls = cuda_graphs.graph_class(device, cfg.cuda_graphs)
    precision = precision_for(device, cfg.amp, graphs=graph_cls is not None)
    step = SGDStep(model, state.optimizer, precision, graph_cls)
    evaluator = Evaluator(precision, graph_cls)
    for epoch in range(state.start, cfg.epochs):
        if epoch in cfg.refine_at:
            model.refine(state.optimizer)
        lr = learning_rate(cfg, epoch)
        for g in state.optimizer.param_groups:
            g["lr"] = lr
        model.train()
        threads = _cpu_threads(cfg, model, device)
        saved = (f"; epoch {epoch} is saved in {ckpt_path}" if ckpt_path and epoch else "")
        with torch_threads(threads) if threads else contextlib.nullcontext():
            with out_of_memory_hint(device, f"training epoch {epoch + 1}", cfg.batch_size,
                                    then=f" in a fresh out_dir (--out-dir): the batch size is part of the run{saved}"):
                row = _train_epoch(cfg, step, data, gen, epoch, lr, ckpt_path)
            with out_of_memory_hint(device, f"evaluating after epoch {epoch + 1}", cfg.eval_batch_size,
                                    "--eval-batch-size", "eval_batch_size",
                                    then=" and continue with resume=True (--resume): it is not part of the run"
                                    + (f"; epoch {epoch} is saved in {ckpt_path}" if saved else "")):
                row["test_acc"], row["eval_seconds"] = evaluator(model, data.test_x, data.test_y, data.mean, data.std,
                                                                 cfg.eval_batch_size)
        row["torch_threads"] = threads or torch.get_num_threads()
        state.history.append(row)
        if cfg.progress:
            progress_write(f"epoch {epoch + 1}/{cfg.epochs}: loss {row['train_loss']:.4f}, train acc {row['train_acc']:.3f}, "
                       f"test acc {row['test_acc']:.3f}, {row['train_seconds']:.1f} s, N_t={row['n_steps']}, "
                       f"M={row['n_basis']}")
        if out:
            _save(out, cfg, model, state, gen, env)
        if on_epoch is not None:
            on_epoch(row)
    results = _results(cfg, state.history, env, state.started, ckpt_path)
    return TrainResult(model=model.eval(), history=state.history, config=cfg, checkpoint=ckpt_path, results=results)


def interrupted_message(out_dir: Path, how: str = "rerun the same command with --resume") -> str:
    """What to tell after an interruption: which epoch is safe on disk and how to continue.
    Checkpoints are written atomically, so an interruption leaves the last one whole."""
    ckpt = out_dir / CHECKPOINT
    try:
        done = json.loads((out_dir / RESULTS).read_text())["epochs_done"]
    except (OSError, ValueError, KeyError):
        done = None
    if ckpt.is_file() and done:
        return f"interrupted; epoch {done} is saved in {ckpt} (nothing else was written): {how} to continue"
    return f"interrupted before the first epoch finished; nothing was saved in {out_dir}: {how} to start again"


def load_model(path, device=None) -> tuple[ContinuousNet, dict]:
    """The trained model of a checkpoint (or of ``out_dir/checkpoint.pt``), in its trained manifestation."""
    path = Path(path)
    if path.is_dir():
        path = path / CHECKPOINT
    device = resolve_device(device)
    ck = load_checkpoint(path, map_location=device)
    extra = ck["extra"]
    if "model_config" not in extra:
        raise ValueError(f"{path} holds no model_config; it was not written by cnet_lib.train")
    model = ContinuousNet(**extra["model_config"])
    for block, (scheme, nt) in zip(model.blocks, extra["manifestation"]):
        block.manifest(scheme, nt)
    model.load_state_dict(ck["model"])
    return model.to(device).eval(), ck
