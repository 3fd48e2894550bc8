"""What a training run of the image study is: :class:`TrainConfig`, the model it starts from, and its
learning-rate schedule.

Epoch numbers in ``refine_at`` and ``lr_milestones`` count *completed* epochs: ``refine_at=(20,)``
refines after 20 epochs, before the 21st (index 20) trains; ``lr_milestones=(30,)`` lowers the
rate from the 31st epoch on (like ``torch.optim.lr_scheduler.MultiStepLR``).  The schedule is a
``torch.optim.lr_scheduler.LambdaLR`` over :func:`lr_factor`, a pure function of the epoch, so
resuming needs no scheduler state (:func:`lr_scheduler`).  The presets' runs are in
:mod:`cnet_lib.images.runs.image_presets`; the loop is :mod:`cnet_lib.images.training.train_loop`.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Optional

import torch

from ...core.bases import basis_names
from ...core.models import ContinuousNet
from ...core.schemes import get_scheme
from ...core.validation import check_choice, check_float, check_int, check_ints
from ..data.datasets import DATASETS

__all__ = ["TrainConfig", "LR_SCHEDULES", "build_model", "lr_factor", "learning_rate", "lr_scheduler"]

LR_SCHEDULES = ("step", "cosine", "constant", "onecycle")

# recipe fields added after runs shipped: left out of a run's identity while at these defaults, so every
# checkpoint and shipped model written before them keeps its identity (and its hash)
RECIPE_DEFAULTS = {"nesterov": False, "label_smoothing": 0.0, "warmup_epochs": 0, "cutout": 0}


@dataclass
class TrainConfig:
    """Everything a training run depends on (paper names: n_basis = M, n_steps = N_t, epsilon = ε)."""

    # data
    dataset: str = "cifar10"
    data_dir: Optional[str] = None  # the directory that contains cifar-10-batches-py; None: the default folder
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
    lr_schedule: str = "step"  # step | cosine | constant | onecycle (linear up over warmup_epochs, linear down)
    lr_milestones: tuple[int, ...] = ()  # step: multiply by lr_decay from these (completed) epochs on
    lr_decay: float = 0.1
    warmup_epochs: int = 0  # onecycle: epochs of linear warm-up to lr; the rest decays linearly towards 0
    nesterov: bool = False  # SGD with Nesterov momentum
    label_smoothing: float = 0.0  # of the cross-entropy (training only; accuracy is unaffected)
    cutout: int = 0  # side in pixels of a random square set to the mean colour in each training image; 0: none
    refine_at: tuple[int, ...] = ()  # completed-epoch counts at which every OdeBlock doubles M and N_t
    seed: int = 0  # the training seed: initial weights, batch order, augmentation (and the n_train subset)
    # execution (not part of the run's identity)
    device: Optional[str] = None  # None: default_device()
    amp: bool = True  # on CUDA: the mixed precision of device.precision_for (channels-last, bf16 where native)
    cuda_graphs: bool = True  # on CUDA: capture each step in a CUDA graph (cnet_lib.runtime.cuda_graphs)
    threads: Optional[int] = None  # CPU threads per step; None: chosen from the step's work (runtime.threads)
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
        check_int("warmup_epochs", self.warmup_epochs, low=0, example=2)
        if self.lr_schedule == "onecycle" and self.epochs and self.warmup_epochs >= self.epochs:
            raise ValueError(f"warmup_epochs ({self.warmup_epochs}) must be fewer than epochs ({self.epochs}) "
                             "for the onecycle schedule, e.g. warmup_epochs=2")
        check_float("label_smoothing", self.label_smoothing, low=0, high=1, high_open=True, example=0.1)
        if not isinstance(self.nesterov, bool):
            raise ValueError(f"nesterov must be True or False, got {self.nesterov!r}")
        if self.nesterov and self.momentum == 0:
            raise ValueError("nesterov=True needs momentum > 0 (e.g. momentum=0.9)")
        check_int("cutout", self.cutout, low=0, high=31, example=8)
        check_int("batch_size", self.batch_size, low=1, example=128)
        check_int("eval_batch_size", self.eval_batch_size, low=1, example=500)
        check_int("seed", self.seed, example=0)
        check_float("lr", self.lr, low=0, low_open=True, example=0.1)
        check_float("momentum", self.momentum, low=0, high=1, high_open=True, example=0.9)
        check_float("weight_decay", self.weight_decay, low=0, example=5e-4)
        check_float("lr_decay", self.lr_decay, low=0, high=1, low_open=True, example=0.1)
        check_float("epsilon", self.epsilon, example=1.0)
        check_float("epsilon_stitch", self.epsilon_stitch, example=1.0)
        if self.threads is not None:
            check_int("threads", self.threads, low=1, example=1)
        if self.device is not None:
            try:
                torch.device(self.device)
            except (RuntimeError, TypeError):
                raise ValueError(f"device {self.device!r} is not a torch device (e.g. device='cpu' or 'cuda')") from None

    def identity(self) -> dict:
        """The fields a checkpoint must match to be resumed by this config.

        Execution settings (device, amp, graphs, threads, paths, progress) are left out; ``epochs`` too, so a run
        can be extended, except with the cosine and onecycle schedules whose shapes depend on it.  The recipe
        fields of ``RECIPE_DEFAULTS`` are left out while at their defaults (runs from before them keep their
        identity).
        """
        skip = {"data_dir", "device", "amp", "cuda_graphs", "threads", "out_dir", "resume", "eval_batch_size", "progress",
                "preset", "run_name"}
        if self.lr_schedule not in ("cosine", "onecycle"):
            skip.add("epochs")
        skip.update(k for k, v in RECIPE_DEFAULTS.items() if getattr(self, k) == v)
        return {k: v for k, v in dataclasses.asdict(self).items() if k not in skip}

    def final_n_steps(self) -> int:
        return (self.n_steps or self.n_basis) * 2 ** sum(e < self.epochs for e in self.refine_at)


def build_model(cfg: TrainConfig) -> ContinuousNet:
    """The model at the run's *initial* configuration."""
    return ContinuousNet(
        channels=cfg.channels, n_basis=cfg.n_basis, n_steps=cfg.n_steps, scheme=cfg.scheme, basis=cfg.basis,
        epsilon=cfg.epsilon, epsilon_stitch=cfg.epsilon_stitch, num_classes=DATASETS[cfg.dataset].num_classes,
        skip_init=cfg.skip_init,
    )


def lr_factor(cfg: TrainConfig, epoch: int) -> float:
    """The learning rate of epoch index ``epoch`` (0-based) as a multiple of ``cfg.lr``: 1 (constant),
    ``lr_decay`` to the number of milestones reached (step), half a cosine over the epochs, or one cycle:
    ``(e + 1) / (w + 1)`` over the ``w = warmup_epochs`` first epochs, 1 at epoch ``w``, then down in a
    straight line to ``1 / (epochs - w)`` at the last epoch."""
    if cfg.lr_schedule == "constant":
        return 1.0
    if cfg.lr_schedule == "step":
        return cfg.lr_decay ** sum(epoch >= m for m in cfg.lr_milestones)
    if cfg.lr_schedule == "onecycle":
        w = cfg.warmup_epochs
        if epoch <= w:
            return (epoch + 1) / (w + 1)
        return max(cfg.epochs - epoch, 1) / max(cfg.epochs - w, 1)
    return 0.5 * (1.0 + math.cos(math.pi * epoch / max(cfg.epochs, 1)))


def learning_rate(cfg: TrainConfig, epoch: int) -> float:
    """The rate of epoch index ``epoch`` (0-based): ``cfg.lr * lr_factor(cfg, epoch)``, what
    :func:`lr_scheduler` sets for that epoch."""
    return cfg.lr * lr_factor(cfg, epoch)


def lr_scheduler(cfg: TrainConfig, optimizer: torch.optim.Optimizer, start: int = 0) -> torch.optim.lr_scheduler.LambdaLR:
    """The run's schedule on ``optimizer``, positioned at epoch index ``start`` (the rate of that epoch is
    set at once; ``step()`` after each epoch moves to the next).  Its base rate is ``cfg.lr`` whatever
    rate a resumed optimizer state carries, and a LambdaLR multiplies it by :func:`lr_factor`, so a
    resumed run gets the rates of an uninterrupted one, to the bit.  (``MultiStepLR`` multiplies the
    rate by the decay at each milestone instead: after four milestones of 0.1 from 0.1 it gives
    1.0000000000000004e-05 where ``0.1 * 0.1**4`` is 1.0000000000000003e-05.)"""
    for group in optimizer.param_groups:
        group["initial_lr"] = cfg.lr
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda epoch: lr_factor(cfg, epoch), last_epoch=start - 1)
