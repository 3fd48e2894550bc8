"""``cnet robustness`` (or ``python -m cnet_lib robustness``): the robustness study of trained ContinuousNets
(:mod:`cnet_lib.studies.robustness`).

    python -m cnet_lib robustness RK4_CHECKPOINT EULER_CHECKPOINT --graph rk4_classic --out robustness.json

Every model is evaluated on the same test images (those of the first checkpoint's run) under
weight noise, per-channel quantization (θ̂ only, and every weight) and input noise, on its own
graph and, with ``--graph``, also on that scheme (and N_t).  The rows and the packed per-image outcomes go to a JSON file; with
two checkpoints the verdict of the first against the second is printed.  The device and the data folder
(when neither ``--data-dir`` nor the run names one) come from the environment's settings
(:class:`cnet_lib.runtime.settings.Settings`).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional, Sequence

from ..images.data.image_data import load_dataset
from ..images.training.train_state import load_model
from ..core.validation import check_int
from ..runtime.checkpoint import atomic_write_text
from ..runtime.device import environment, out_of_memory_hint
from ..runtime.rich_text import format_table
from ..runtime.settings import PRESETS, Settings
from ..studies import robustness
from .command_line import UsageError, command_main

__all__ = ["SUMMARY", "INTERRUPTED", "add_arguments", "run", "main"]

SUMMARY = "The robustness study of trained ContinuousNets: weight noise, quantization, input noise, the verdict"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options: the checkpoints, the grid (any part of it), the test images, where the rows go."""
    p.add_argument("checkpoints", nargs="+", help="checkpoint.pt files written by python -m cnet_lib train (or their out-dirs)")
    p.add_argument("--graph", nargs="+", metavar=("SCHEME", "N_STEPS"),
                   help="also evaluate every model on this scheme (and N_t; default its own N_t)")
    p.add_argument("--sigmas", type=float, nargs="+", help="relative weight noise levels")
    p.add_argument("--seeds", type=int, nargs="+", help="seeds of the weight noise")
    p.add_argument("--bits", type=int, nargs="*", help="integer bit widths")
    p.add_argument("--quantization", nargs="*", choices=robustness.study.QUANTIZATION_SCHEMES,
                   help="integer schemes: theta (the blocks' coefficients only), weights (every conv and linear weight)")
    p.add_argument("--float-formats", nargs="*", choices=tuple(robustness.study.FLOAT_FORMATS))
    p.add_argument("--input-noise", type=float, nargs="*", help="input noise levels (normalised pixel units)")
    p.add_argument("--noise-seeds", type=int, nargs="+")
    p.add_argument("--n-test", type=int, help="test images (default: the first run's subset)")
    p.add_argument("--data-dir", help="directory containing cifar-10-batches-py (default: the run's, else "
                   "$CNET_DATA_DIR, else ~/.cache/cnet_lib/data)")
    p.add_argument("--batch-size", type=int, default=500)
    p.add_argument("--device", help="e.g. cpu, cuda (default: $CNET_DEVICE, else CUDA when available)")
    p.add_argument("--out", help="JSON file (default: robustness.json beside the first checkpoint)")
    p.add_argument("--quiet", action="store_true")


def _label(path: Path) -> str:
    """A checkpoint's label: the name of its run folder."""
    return (path if path.is_dir() else path.parent).name


def _study(args: argparse.Namespace, paths: list, settings: Settings) -> tuple:
    """``(models, grid, graphs, data, study)``: the checkpoints loaded, the grid checked, the study done."""
    check_int("--batch-size", args.batch_size, low=1, example=500)
    if args.n_test is not None:
        check_int("--n-test", args.n_test, low=1, example=2000)
    loaded = [load_model(p, args.device or settings.device) for p in paths]
    models = {_label(p): m for p, (m, _) in zip(paths, loaded)}
    if len(models) != len(paths):
        raise ValueError("give checkpoints of differently named run folders (the folder names label the rows)")
    run = loaded[0][1]["extra"].get("run_config", {})
    preset = run.get("preset")
    grid = robustness.preset_grid(preset) if preset in PRESETS else dict(robustness.study.DEFAULT_GRID)
    grid.update({k: getattr(args, k) for k in robustness.study.DEFAULT_GRID if getattr(args, k, None) is not None})
    robustness.study.check_grid(grid)
    dataset = run.get("dataset", "cifar10")
    data_dir = args.data_dir or run.get("data_dir") or settings.data_dir
    data = load_dataset(dataset, data_dir, n_train=None, n_test=args.n_test if args.n_test else run.get("n_test"),
                        seed=run.get("seed", 0), device=next(loaded[0][0].parameters()).device,
                        progress=not args.quiet, **settings.download_source(dataset))
    graphs = {name: (name, None, None) for name in models}
    if args.graph:
        scheme, n_steps = args.graph[0], (int(args.graph[1]) if len(args.graph) > 1 else None)
        graphs.update({f"{name} on {scheme}": (name, scheme, n_steps) for name in models})
    say = None if args.quiet else (lambda what: print(f"  {what}", flush=True))
    study = robustness.study.robustness_study(models, data.test_x, data.test_y, data.mean, data.std, graphs=graphs, grid=grid,
                             batch_size=args.batch_size, progress=say)
    return models, grid, graphs, data, study


INTERRUPTED = ("interrupted; nothing was written (the rows are written once, when the study ends): run the same "
               "command again")


def run(args: argparse.Namespace) -> int:
    """Run the study, print its rows and verdict, write them; 0 when done."""
    if args.graph and (len(args.graph) > 2 or not all(n.isdigit() and int(n) >= 1 for n in args.graph[1:])):
        raise UsageError(f"--graph {' '.join(args.graph)}: it takes a scheme and, optionally, N_t as a whole number "
                         ">= 1, e.g. --graph rk4_classic 8")
    paths = [Path(c) for c in args.checkpoints]
    with out_of_memory_hint(args.device or "the device", "computing the robustness study", args.batch_size):
        models, grid, graphs, data, study = _study(args, paths, Settings.from_environment())
    for label, conds in study.items():
        print(f"\n{label}")
        print(format_table(robustness.study.summarise(conds), [("kind", "kind", "{}"), ("level", "level", "{}"),
                                              ("accuracy", "accuracy", "{:.4f}"), ("min", "min", "{:.4f}"),
                                              ("max", "max", "{:.4f}"), ("seeds", "seeds", "{}"),
                                              ("bytes", "bytes", "{}")], left=2))
    names = list(models)
    if len(names) == 2:
        print("\n" + robustness.word_verdict(robustness.judge(study, names[0], names[1]), width=None))
    out = Path(args.out) if args.out else (paths[0] if paths[0].is_dir() else paths[0].parent) / "robustness.json"
    payload = {"checkpoints": [str(p) for p in paths], "grid": grid, "graphs": graphs, "n_test": len(data.test_y),
               "environment": environment(data.test_x.device), "rows": {k: robustness.study.summarise(v) for k, v in study.items()},
               "study": {k: robustness.study.conditions_to_json(v) for k, v in study.items()}}
    atomic_write_text(out, json.dumps(payload, indent=1))
    print(f"rows written to {out}")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command alone (:func:`cnet_lib.cli.command_line.command_main`); returns its exit status (0 done,
    1 an error said in one line, 2 a wrong option, 130 interrupted)."""
    return command_main(sys.modules[__name__], argv)
