"""``cnet train`` (or ``python -m cnet_lib train``): train a ContinuousNet on CIFAR with refinement, checkpoints and resume.

    python -m cnet_lib train --list                                          # the presets' runs
    python -m cnet_lib train --preset cpu --run rk4_refined --out-dir runs/rk4
    python -m cnet_lib train --preset cpu --run rk4_refined --out-dir runs/rk4 --resume
    torchrun --standalone --nproc_per_node=8 -m cnet_lib -- train --preset paper --run rk4_refined

Under ``torchrun`` (several processes) it trains data-parallel with DistributedDataParallel
(:mod:`cnet_lib.runtime.distributed`): rank 0 alone writes and prints.

The training itself is :func:`cnet_lib.images.training.train_loop.train`; the presets' runs are in
:mod:`cnet_lib.images.runs.image_presets`.  The data folder, device, CUDA graphs and CPU threads not given
as options come from the environment's settings (:class:`cnet_lib.runtime.settings.Settings`).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path
from typing import Optional, Sequence

from ..images.data.datasets import DATASETS
from ..images.runs.image_presets import image_runs
from ..images.training.train_config import LR_SCHEDULES, TrainConfig
from ..images.training.train_loop import train
from ..images.training.train_state import RESULTS, interrupted_message
from ..runtime.device import out_of_memory_hint
from ..runtime.settings import PRESETS, Settings
from ..runtime import distributed
from .command_line import UsageError, command_main

__all__ = ["SUMMARY", "add_arguments", "run", "interrupted", "main"]

SUMMARY = "Train a ContinuousNet on CIFAR with refinement; checkpoints every epoch (--resume continues)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options: a preset's run or plain TrainConfig defaults, each config field as an option."""
    p.add_argument("--preset", choices=PRESETS, help="start from a preset run (default: plain TrainConfig defaults)")
    p.add_argument("--run", help="which run of the preset (see --list)")
    p.add_argument("--list", action="store_true", help="print the preset runs and exit")
    p.add_argument("--out-dir", help="where checkpoint.pt and results.json go (default runs/<preset>-<run>)")
    p.add_argument("--resume", action="store_true", help="continue from out-dir/checkpoint.pt (or load it when finished)")
    p.add_argument("--data-dir", help="directory containing cifar-10-batches-py (default: $CNET_DATA_DIR, else "
                   "~/.cache/cnet_lib/data)")
    p.add_argument("--dataset", choices=list(DATASETS))
    p.add_argument("--n-train", type=int)
    p.add_argument("--n-test", type=int)
    p.add_argument("--channels", type=int, nargs="+")
    p.add_argument("--n-basis", type=int, help="initial M")
    p.add_argument("--n-steps", type=int, help="initial N_t (default M)")
    p.add_argument("--scheme")
    p.add_argument("--basis")
    p.add_argument("--epsilon", type=float)
    p.add_argument("--epsilon-stitch", type=float)
    p.add_argument("--no-skip-init", dest="skip_init", action="store_false", default=None)
    p.add_argument("--epochs", type=int)
    p.add_argument("--batch-size", type=int)
    p.add_argument("--eval-batch-size", type=int, help="images per batch when evaluating (not part of the run)")
    p.add_argument("--lr", type=float)
    p.add_argument("--momentum", type=float)
    p.add_argument("--weight-decay", type=float)
    p.add_argument("--lr-schedule", choices=LR_SCHEDULES)
    p.add_argument("--lr-milestones", type=int, nargs="*")
    p.add_argument("--lr-decay", type=float)
    p.add_argument("--warmup-epochs", type=int, help="onecycle: epochs of linear warm-up")
    p.add_argument("--nesterov", action="store_true", default=None, help="SGD with Nesterov momentum")
    p.add_argument("--label-smoothing", type=float, help="of the training cross-entropy, e.g. 0.1")
    p.add_argument("--cutout", type=int, help="side in pixels of a random square set to the mean colour, e.g. 8")
    p.add_argument("--refine-at", type=int, nargs="*", help="completed-epoch counts at which M and N_t double")
    p.add_argument("--seed", type=int)
    p.add_argument("--device", help="e.g. cpu, cuda (default: $CNET_DEVICE, else CUDA when available)")
    p.add_argument("--no-amp", dest="amp", action="store_false", default=None, help="CUDA: no bf16 autocast, no channels-last inputs")
    p.add_argument("--no-cuda-graphs", dest="cuda_graphs", action="store_false", default=None,
                   help="CUDA: run every step eagerly instead of replaying a CUDA graph")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


_CLI_FIELDS = ("data_dir", "dataset", "n_train", "n_test", "channels", "n_basis", "n_steps", "scheme", "basis",
               "epsilon", "epsilon_stitch", "skip_init", "epochs", "batch_size", "eval_batch_size", "lr", "momentum",
               "weight_decay", "lr_schedule", "lr_milestones", "lr_decay", "warmup_epochs", "nesterov", "label_smoothing",
               "cutout", "refine_at", "seed", "device", "amp", "cuda_graphs")


def _out_dir(args: argparse.Namespace) -> str:
    return args.out_dir or os.path.join("runs", f"{args.preset}-{args.run}" if args.preset else "train")


def interrupted(args: argparse.Namespace) -> str:
    """Which epoch is safe on disk, and how to continue."""
    return interrupted_message(Path(_out_dir(args)))


def _list_runs() -> int:
    for name in PRESETS:
        for run, cfg in image_runs(name).items():
            print(f"{name:6s} {run:22s} {cfg.dataset} channels={list(cfg.channels)} {cfg.scheme} "
                  f"M=N_t {cfg.n_basis}->{cfg.final_n_steps()} refine_at={list(cfg.refine_at)} epochs={cfg.epochs}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Train (or list the presets' runs); 0 when done."""
    if args.list:
        return _list_runs()
    overrides = {k: getattr(args, k) for k in _CLI_FIELDS if getattr(args, k) is not None}
    base = {}
    if args.preset:
        runs = image_runs(args.preset)
        if args.run not in runs:
            raise UsageError(f"--preset {args.preset} needs --run, one of: {', '.join(runs)}")
        base = dataclasses.asdict(runs[args.run])
    settings = Settings.from_environment()
    device = args.device or str(settings.device)
    try:
        # every config error, a busy, damaged or unwritable folder, a full disk, damaged data: one line
        # (command_line); under torchrun every rank says its own, and the ranks that wait for a failed one stop quietly
        with distributed.process_group(device, dict(settings.launch)) as world, out_of_memory_hint(
                args.device or "the device", "training", {**base, **overrides}.get("batch_size", 128)):
            execution = dict(data_dir=str(settings.data_dir), device=device, cuda_graphs=settings.cuda_graphs,
                             threads=settings.threads)
            cfg = TrainConfig(**{**base, **execution, **overrides, "out_dir": _out_dir(args), "resume": args.resume,
                                 "progress": not args.quiet})
            result = train(cfg, source=settings.download_source(cfg.dataset))
    except distributed.PeerFailed:
        return 1  # rank 0 said why
    if not world.main:
        return 0
    if result.history:
        h = result.history[-1]
        print(f"done: {len(result.history)} epochs, test acc {h['test_acc']:.4f}, "
              f"{result.results['train_seconds_total']:.1f} s training; {cfg.out_dir}/{RESULTS}")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command alone (:func:`cnet_lib.cli.command_line.command_main`); returns its exit status (0 done,
    1 an error said in one line, 2 a wrong option, 130 interrupted)."""
    return command_main(sys.modules[__name__], argv)
