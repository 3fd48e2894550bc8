"""Refinement-training speedup over fixed-depth RK4 (issue 4 benchmark).

Trains the same ContinuousNet twice with the same data and epochs: once refined
(N_t = M: 1 -> 2 -> 4 -> ...) and once at the final depth from the start, and compares the
training wall time (evaluation excluded).  The ideal speedup is the ratio of Σ N_t over the
epochs (fixed / refined); the paper-style goal is measured/ideal >= 0.95 (the authors' code
reaches 0.96 on 2 CPU cores at 8-16-32, 50k images).  The two runs advance one epoch at a time
in turn (round robin, through their checkpoints), so a slow spell of a shared machine hits both.
Tiny models are dominated by fixed per-batch costs (stem, stitches, augmentation, Python), so
--quick can show a lower efficiency.

    python benchmarks/bench_refinement.py --quick          # ~20 s on 2 cores, synthetic data
    python benchmarks/bench_refinement.py                  # ~21 min on 2 cores: 8-16-32 on 5,000 images
    python benchmarks/bench_refinement.py --data-dir ../shared/data-large --n-train 45000
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

from cnet_lib.images.data.download import write_fake_cifar
from cnet_lib.images.data.image_data import load_dataset
from cnet_lib.runtime.device import default_device, environment
from cnet_lib.images import TrainConfig, train

RESULTS = Path(__file__).resolve().parent / "results"

SETTINGS = {
    "quick": dict(channels=(4, 8, 8), n_train=256, n_test=64, batch_size=64, epochs=4, refine_at=(1, 2, 3)),
    "full": dict(channels=(8, 16, 32), n_train=5000, n_test=500, batch_size=128, epochs=8, refine_at=(2, 4, 6)),
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="tiny model and data: a smoke check of the benchmark")
    p.add_argument("--data-dir", help="directory containing cifar-10-batches-py (default: synthetic data)")
    p.add_argument("--n-train", type=int)
    p.add_argument("--scheme", default="rk4_classic")
    p.add_argument("--device")
    p.add_argument("--threads", type=int, help="torch CPU threads (e.g. 1 on a machine shared with other jobs)")
    p.add_argument("--out", help="JSON path (default benchmarks/results/bench_refinement[-quick].json)")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    s = dict(SETTINGS["quick" if args.quick else "full"])
    if args.n_train:
        s["n_train"] = args.n_train
    device = torch.device(args.device) if args.device else default_device()
    tmp = None
    data_dir = args.data_dir
    if data_dir is None:
        tmp = tempfile.TemporaryDirectory()
        data_dir = tmp.name
        write_fake_cifar(data_dir, n_train=s["n_train"], n_test=s["n_test"])
    data = load_dataset("cifar10", data_dir, s["n_train"], s["n_test"], device=device)
    common = dict(dataset="cifar10", data_dir=data_dir, n_train=s["n_train"], n_test=s["n_test"],
                  channels=s["channels"], batch_size=s["batch_size"], epochs=s["epochs"], scheme=args.scheme,
                  lr=0.05, lr_schedule="constant", device=str(device), progress=False, seed=0)
    final = 2 ** len(s["refine_at"])
    runs = {
        "refined": TrainConfig(**common, n_basis=1, refine_at=s["refine_at"]),
        "fixed": TrainConfig(**common, n_basis=final),
    }
    # Round robin: epoch e of the refined run, then epoch e of the fixed run, each continuing from
    # its checkpoint (resume gives the same weights as an uninterrupted run).  Drifts in the
    # machine's speed then hit both runs alike instead of whichever ran second.
    ckpt_root = tempfile.TemporaryDirectory()
    wall = {name: 0.0 for name in runs}  # seconds spent in each run's train() calls
    results = {}
    for epoch in range(1, s["epochs"] + 1):
        for name, cfg in runs.items():
            t = time.perf_counter()
            step = dataclasses.replace(cfg, epochs=epoch, resume=True, out_dir=str(Path(ckpt_root.name) / name))
            results[name] = train(step, data=data)
            wall[name] += time.perf_counter() - t
    ckpt_root.cleanup()
    out = {}
    for name, res in results.items():
        out[name] = {
            "train_seconds": sum(h["train_seconds"] for h in res.history),
            "epoch_seconds": [h["train_seconds"] for h in res.history],
            "train_cpu_seconds": sum(h["train_cpu_seconds"] for h in res.history),
            "n_steps": [h["n_steps"][0] for h in res.history],
            "final_test_acc": res.history[-1]["test_acc"],
            "wall_seconds": wall[name],
        }
        print(f"{name:8s} N_t per epoch {out[name]['n_steps']}: {out[name]['train_seconds']:.2f} s training "
              f"({', '.join(f'{x:.2f}' for x in out[name]['epoch_seconds'])})")
    measured = out["fixed"]["train_seconds"] / out["refined"]["train_seconds"]
    ideal = sum(out["fixed"]["n_steps"]) / sum(out["refined"]["n_steps"])
    cpu = out["fixed"]["train_cpu_seconds"] / out["refined"]["train_cpu_seconds"]
    print(f"speedup {measured:.2f}x wall clock ({cpu:.2f}x in process CPU time), ideal (Σ N_t ratio) {ideal:.2f}x, "
          f"efficiency {measured / ideal:.2f} (goal >= 0.95)")
    print("(wall-clock ratios are only meaningful on an otherwise idle machine; compare the CPU-time ratio)")
    result = {"benchmark": "refinement", "mode": "quick" if args.quick else "full", "settings": s,
              "scheme": args.scheme, "order": "round robin: one epoch of each run in turn", "data": "synthetic" if tmp else str(data_dir), "runs": out,
              "speedup": measured, "speedup_cpu_time": cpu, "ideal": ideal, "efficiency": measured / ideal, "environment": environment(device),
              "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    path = Path(args.out) if args.out else RESULTS / f"bench_refinement{'-quick' if args.quick else ''}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1))
    print(f"written {path}")
    if tmp:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
