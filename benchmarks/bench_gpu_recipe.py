"""Toward the paper's accuracy: wider ContinuousNets trained with a fast recipe on a GPU, each trained alone, their
accuracy on the held-out images and their training time (the probe the book's page *On a GPU* and the introduction's
comparison with the paper's Table 1 read).

The candidate recipes of ``TRIALS`` (or ``NEXT_TRIALS``) are trained one after the other in this process by
:func:`cnet_lib.images.training.train_loop.train` on the data ``CNET_DATA_DIR`` names, the data loaded once.  After
every epoch the JSON is written again, so a run stopped at ``--deadline-s`` still brings back every epoch it finished;
a trial that would start after the deadline is skipped and says so.

    python benchmarks/bench_gpu_recipe.py --out benchmarks/results/gpu_recipe-<gpu>.json --deadline-s 3600
    python benchmarks/bench_gpu_recipe.py --trials next --out benchmarks/results/gpu_recipe-next-<gpu>.json
    python benchmarks/bench_gpu_recipe.py --dry-run --out /tmp/recipe.json       # CPU, tiny sizes, fake data

Each recipe is also one command line of ``cnet train`` (the book's page *On a GPU*).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _timing import machine  # noqa: E402

from cnet_lib.images.data.download import write_fake_cifar  # noqa: E402
from cnet_lib.images.data.image_data import TEST_SUBSET_SEED, load_dataset  # noqa: E402
from cnet_lib.images.training.train_config import TrainConfig  # noqa: E402
from cnet_lib.images.training.train_loop import train  # noqa: E402
from cnet_lib.runtime.settings import Settings  # noqa: E402

# What every trial shares: SGD with Nesterov momentum, one learning-rate cycle over the epochs (linear up over
# the warm-up, linear down), label smoothing 0.1, batch 512, random crop and flip (the library's augmentation).
RECIPE = dict(batch_size=512, lr=0.4, lr_schedule="onecycle", warmup_epochs=5, epochs=24, momentum=0.9,
              nesterov=True, weight_decay=5e-4, label_smoothing=0.1)
TRIALS = {  # in the order they run; the first is the candidate the preset is most likely to take
    "rk4_refined-64": dict(channels=(64, 128, 256), scheme="rk4_classic", n_basis=1, refine_at=(6, 12)),
    "euler_fixed-64": dict(channels=(64, 128, 256), scheme="euler", n_basis=4),
    "rk4_refined-32": dict(channels=(32, 64, 128), scheme="rk4_classic", n_basis=1, refine_at=(6, 12)),
}
_E40 = dict(epochs=40, warmup_epochs=6, cutout=8)
NEXT_TRIALS = {  # the next probe (``--trials next``): 40 epochs as in gpu_recipe-h200-e40.json, with cutout 8 px;
    # by the H200's step times (gpu_recipe-h200-e24.json) about 175 + 70 + 160 s of training there
    "rk4_refined-64-e40-cutout8": dict(_E40, channels=(64, 128, 256), scheme="rk4_classic", n_basis=1, refine_at=(10, 20)),
    "euler_fixed-64-e40-cutout8": dict(_E40, channels=(64, 128, 256), scheme="euler", n_basis=4),
    "rk4_refined-48-e40-cutout8": dict(_E40, channels=(48, 96, 192), scheme="rk4_classic", n_basis=1, refine_at=(10, 20)),
}
PLANS = {"first": TRIALS, "next": NEXT_TRIALS}


class Deadline(Exception):
    """The probe's deadline passed during a trial."""


def _write(path: Path, payload: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(payload, indent=1))
    os.replace(tmp, path)


def run_trials(trials: dict, base: dict, data, t_end: float, payload: dict, out: Path) -> None:
    """Train each trial in turn (its history in ``payload['trials']``, the JSON rewritten after every epoch)."""
    for name, spec in trials.items():
        cfg = TrainConfig(**{**base, **spec, "preset": "probe", "run_name": name})
        rec = {"config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in cfg.identity().items()},
               "epochs": [], "status": "running"}
        payload["trials"][name] = rec
        if time.perf_counter() > t_end:
            rec["status"] = "skipped: the deadline had passed"
            _write(out, payload)
            continue
        t0 = time.perf_counter()

        def on_epoch(row, rec=rec):
            rec["epochs"].append({k: row[k] for k in ("epoch", "lr", "train_loss", "train_acc", "test_acc",
                                                      "train_seconds", "eval_seconds", "n_steps", "n_parameters")})
            rec["wall_seconds"] = time.perf_counter() - t0
            _write(out, payload)
            print(f"  {name} epoch {row['epoch']}/{cfg.epochs}: held-out acc {row['test_acc']:.4f}, "
                  f"{row['train_seconds']:.1f} s, N_t={row['n_steps']}", flush=True)
            if time.perf_counter() > t_end and row["epoch"] < cfg.epochs:
                raise Deadline

        try:
            res = train(cfg, data=data, on_epoch=on_epoch)
            rec["status"] = "finished"
            rec["final_held_out_accuracy"] = res.history[-1]["test_acc"]
            rec["train_seconds"] = sum(h["train_seconds"] for h in res.history)
        except Deadline:
            rec["status"] = f"stopped at the deadline after epoch {len(rec['epochs'])}"
        except Exception as err:  # a probe records a failed trial and goes on to the next
            rec["status"] = f"failed: {type(err).__name__}: {err}"
            print(f"  {name}: {rec['status']}", flush=True)
        rec["wall_seconds"] = time.perf_counter() - t0
        _write(out, payload)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--deadline-s", type=float, default=300.0, help="no trial epoch starts after this many seconds")
    p.add_argument("--dry-run", action="store_true", help="CPU, tiny sizes, fake data: checks the script")
    p.add_argument("--trials", choices=sorted(PLANS), default="first",
                   help="first: TRIALS (the probe of gpu_recipe-h200-e24.json); next: NEXT_TRIALS (cutout, 40 epochs)")
    args = p.parse_args(argv)
    plan = PLANS[args.trials]
    t_start = time.perf_counter()
    base = dict(RECIPE, dataset="cifar10", n_train=None, n_test=None, progress=False, seed=0)
    if args.dry_run:
        device = torch.device("cpu")
        tmp = tempfile.mkdtemp()
        write_fake_cifar(tmp, n_train=64, n_test=32, seed=0)
        base.update(data_dir=tmp, batch_size=16, epochs=3, warmup_epochs=1, device="cpu")
        tiny = dict(channels=(2, 4, 4), epochs=3, warmup_epochs=1)
        trials = {k: {**v, **tiny, "refine_at": (1, 2)} if "refine_at" in v else {**v, **tiny} for k, v in plan.items()}
    else:
        if not torch.cuda.is_available():
            print("bench_gpu_recipe needs a CUDA GPU (or --dry-run on the CPU)", file=sys.stderr)
            return 2
        device = torch.device("cuda", torch.cuda.current_device())
        trials = plan
        base.update(device=str(device), data_dir=str(Settings.from_environment().data_dir))
    payload = {"benchmark": "bench_gpu_recipe", "date": time.strftime("%Y-%m-%d"), "machine": machine(),
               "dry_run": args.dry_run, "recipe": RECIPE, "trials": {}}
    print(f"bench_gpu_recipe on {payload['machine'].get('cuda') or 'CPU (dry run)'}", flush=True)
    t0 = time.perf_counter()
    data = load_dataset("cifar10", base.get("data_dir"), None, None, seed=0, device=device, progress=False,
                        test_seed=TEST_SUBSET_SEED)
    payload["data"] = {"train": len(data.train_y), "held_out": len(data.test_y), "load_seconds": time.perf_counter() - t0,
                       "folder": "fake (dry run)" if args.dry_run else "CNET_DATA_DIR" if os.environ.get("CNET_DATA_DIR")
                       else "the default folder"}
    print(f"  data: {payload['data']}", flush=True)
    run_trials(trials, base, data, t_start + args.deadline_s, payload, args.out)
    payload["total_seconds"] = time.perf_counter() - t_start
    _write(args.out, payload)
    print(f"wrote {args.out} after {payload['total_seconds']:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
