"""cnet_lib.integrate against torchdiffeq.odeint on a small MLP field: fixed grid, forward + backward, one thread.

For every fixed-grid method of torchdiffeq that cnet_lib also has (``euler``, ``midpoint``, ``heun`` = its
``heun2``, ``rk4_38`` = its ``rk4``, Kutta's 3/8 rule) the same problem is solved both ways on the same grid and
the time of one forward + backward pass is compared (medians of interleaved rounds, so that load from other
processes hits both alike).  The ratio printed is torchdiffeq's time / cnet_lib's: at least 1 means cnet_lib is at
least as fast (the goal).  The schemes without a torchdiffeq counterpart (``rk4_classic``, ``rk3``, ``ralston``)
are timed against the torchdiffeq method with the same number of stages, for scale.

The field is ``f(t, x) = W2 tanh(W1 x + b1) + b2`` (16 -> 64 -> 16), the state 256 x 16, 64 steps on [0, 1],
float32, ``torch.set_num_threads(1)``.  Results go to ``benchmarks/results/odeint.json`` with the machine and its
load.

    python benchmarks/bench_odeint.py [--quick]
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch
import torchdiffeq

sys.path.insert(0, str(Path(__file__).parent))
from _timing import interleaved_median, write_result  # noqa: E402

from cnet_lib import integrate, step_times  # noqa: E402

SAME_METHOD = {"euler": "euler", "midpoint": "midpoint", "heun": "heun2", "rk4_38": "rk4"}
"""cnet_lib's scheme -> torchdiffeq's fixed-grid method with the same tableau."""
SAME_STAGES = {"rk4_classic": "rk4", "rk3": "heun3", "ralston": "heun2"}
"""Schemes torchdiffeq lacks -> its method with as many stages (a cost reference, not the same method)."""


def field(width: int = 16, hidden: int = 64) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(width, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, width))


def passes(mlp: torch.nn.Module, x0: torch.Tensor, scheme: str, method: str, n_steps: int) -> tuple:
    """(ours, theirs): one forward + backward pass each, on the same grid."""
    f = lambda t, x: mlp(x)
    grid = torch.tensor(step_times(n_steps, (0.0, 1.0)), dtype=x0.dtype)

    def ours():
        integrate(f, x0, scheme, n_steps).pow(2).sum().backward()

    def theirs():
        torchdiffeq.odeint(f, x0, grid, method=method)[-1].pow(2).sum().backward()

    return ours, theirs


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="few repeats")
    p.add_argument("--n-steps", type=int, default=64)
    p.add_argument("--batch", type=int, default=256)
    args = p.parse_args(argv)
    repeats = 5 if args.quick else 41
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    load_before = os.getloadavg()[0]
    try:
        mlp = field()
        x0 = torch.randn(args.batch, 16)
        seconds, ratios = {}, {}
        for table, kind in ((SAME_METHOD, "same method"), (SAME_STAGES, "same stage count")):
            for scheme, method in table.items():
                ours, theirs = passes(mlp, x0, scheme, method, args.n_steps)
                t = interleaved_median({"ours": ours, "theirs": theirs}, repeats=repeats, warmup=3)
                key = f"{scheme} / torchdiffeq {method}"
                seconds[key] = {"cnet_lib": t["ours"], "torchdiffeq": t["theirs"]}
                ratios[key] = t["theirs"] / t["ours"]
                print(f"{key:36s} ({kind:16s}) torchdiffeq / cnet_lib = {ratios[key]:5.2f}   "
                      f"({1e3 * t['ours']:6.2f} ms vs {1e3 * t['theirs']:6.2f} ms)")
    finally:
        torch.set_num_threads(threads)
    load = {"loadavg_1min_before": load_before, "loadavg_1min_after": os.getloadavg()[0]}
    payload = {"problem": {"field": "16 -> 64 -> 16 MLP, tanh", "state": [args.batch, 16], "n_steps": args.n_steps,
                           "dtype": "float32", "threads": 1, "pass": "forward + backward"},
               "same_method": sorted(f"{s} / torchdiffeq {m}" for s, m in SAME_METHOD.items()),
               "seconds": seconds, "ratios_torchdiffeq_over_cnet_lib": ratios, "load": load, "repeats": repeats,
               "goal": "ratio >= 1 for every scheme with the same method"}
    if not args.quick:
        path = write_result("odeint", payload)
        print(f"wrote {path} (load average {load_before:.2f} before, {load['loadavg_1min_after']:.2f} after)")
    return payload


if __name__ == "__main__":
    main()
