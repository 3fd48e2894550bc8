"""Inference speedup of compressed manifestations (issue 4 benchmark).

A model at M = N_t = M_full with rk4_classic (the trained graph) is timed against copies whose
θ(t) is projected onto fewer basis functions and evaluated with another scheme at N_t = M
(paper Table 1: rk4_38 at 6-6-6 is 5.2x faster than rk4_classic at 32-32-32).  Timing does not
depend on the weights' values, so random weights are used unless --checkpoint is given; the
ideal speedup is the ratio of residual evaluations ("units" = stages × N_t over blocks).

    python benchmarks/bench_compression.py --quick     # seconds: 8-16-32, M 8 -> 1, 2, 4
    python benchmarks/bench_compression.py             # paper sizes: 16-32-64, M 32 -> 4, 6, 8, 16
    python benchmarks/bench_compression.py --checkpoint runs/gpu-rk4_refined/checkpoint.pt
"""
from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from cnet_lib.runtime.device import default_device, environment
from cnet_lib.core.models import ContinuousNet
from cnet_lib.images import load_model

RESULTS = Path(__file__).resolve().parent / "results"
SETTINGS = {
    "quick": dict(channels=(8, 16, 32), n_basis=8, compress=(1, 2, 4), batch=64, repeats=5),
    "full": dict(channels=(16, 32, 64), n_basis=32, compress=(4, 6, 8, 16), batch=128, repeats=7),
}


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@torch.no_grad()
def time_forwards(models, x, repeats: int) -> list[dict]:
    """Seconds of one forward pass of ``x`` for each model: min and median over ``repeats``.

    The models are timed round-robin (one pass each, ``repeats`` rounds, after a warm-up pass),
    so a burst of load from other processes hits all of them alike; the minimum is the
    estimate least disturbed by such interference.
    """
    for m in models:
        m(x)
    times = [[] for _ in models]
    for _ in range(repeats):
        for i, m in enumerate(models):
            _sync(x.device)
            t0 = time.perf_counter()
            m(x)
            _sync(x.device)
            times[i].append(time.perf_counter() - t0)
    return [{"min": min(t), "median": statistics.median(t)} for t in times]


def _units(model) -> int:
    return sum(b.scheme.stages * b.n_steps for b in model.blocks)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--checkpoint", help="time a trained model instead of random weights")
    p.add_argument("--scheme", default="rk4_38", help="scheme of the compressed manifestations")
    p.add_argument("--device")
    p.add_argument("--threads", type=int, help="torch CPU threads (e.g. 1 on a machine shared with other jobs)")
    p.add_argument("--out")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    s = dict(SETTINGS["quick" if args.quick else "full"])
    device = torch.device(args.device) if args.device else default_device()
    if args.checkpoint:
        model, _ = load_model(args.checkpoint, device)
        s["n_basis"] = model.blocks[0].n_basis
        s["compress"] = tuple(m for m in s["compress"] if m < s["n_basis"]) or (max(1, s["n_basis"] // 2),)
    else:
        torch.manual_seed(0)
        model = ContinuousNet(s["channels"], n_basis=s["n_basis"], scheme="rk4_classic").to(device)
    model.eval()
    x = torch.randn(s["batch"], 3, 32, 32, device=device)
    models = [model]
    for m in s["compress"]:
        small = copy.deepcopy(model).project(m)
        models.append(small.manifest(args.scheme))
    timing = time_forwards(models, x, s["repeats"])
    base_t, base_units = timing[0]["min"], _units(model)
    rows = []
    for m, t in zip(models, timing):
        b = m.blocks[0]
        rows.append({"scheme": b.scheme.name, "n_steps": b.n_steps, "n_basis": b.n_basis, "units": _units(m),
                     "ms_per_batch": 1000 * t["min"], "ms_per_batch_median": 1000 * t["median"],
                     "speedup": base_t / t["min"], "ideal": base_units / _units(m), "n_parameters": m.n_parameters()})
    print(f"{'scheme':12s} {'N_t=M':>5s} {'units':>6s} {'params':>8s} {'ms/batch':>9s} {'speedup':>8s} {'ideal':>6s}")
    for r in rows:
        print(f"{r['scheme']:12s} {r['n_steps']:5d} {r['units']:6d} {r['n_parameters']:8d} {r['ms_per_batch']:9.1f} "
              f"{r['speedup']:7.2f}x {r['ideal']:5.2f}x")
    result = {"benchmark": "compression", "mode": "quick" if args.quick else "full", "settings": s,
              "weights": args.checkpoint or "random", "rows": rows, "environment": environment(device),
              "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    path = Path(args.out) if args.out else RESULTS / f"bench_compression{'-quick' if args.quick else ''}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1))
    print(f"written {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
