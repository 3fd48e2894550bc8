"""Core benchmarks (issue 2). Prints ratios and writes benchmarks/results/core.json.

1. ContinuousNet (Euler, piecewise constant, M = N_t) train step / the hand-written plain
   pre-activation ResNet with the same graph and weights (goal <= 1.10 on CPU).
2. rk4_classic / euler train step at equal N_t (goal <= 4.2; four stages cost ~4x).
3. cnet_lib.integrate / torchdiffeq.odeint, forward + backward, on the pendulum MLP
   2 -> 50 -> 2 with one thread (goal <= 1.0).
4. The same ContinuousNet train step with the residual called through torch.func.functional_call
   / with the OdeBlock's own call (which sets R's tensors as plain attributes): the library keeps
   the faster one (tests/test_core_odeblock.py checks that both give the same bits).

    python benchmarks/bench_core.py [--quick]
"""
from __future__ import annotations

import argparse
import copy
import sys
import types
from pathlib import Path

import torch
import torchdiffeq
from torch.func import functional_call

sys.path.insert(0, str(Path(__file__).parent))
from _timing import interleaved_median, write_result  # noqa: E402

from cnet_lib import ContinuousNet, integrate, step_times  # noqa: E402
from cnet_lib.core.models import resnet_from_continuousnet  # noqa: E402


def train_step(model, x, y, opt):
    def step():
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return step


def with_functional_call(model):
    """A copy of ``model`` whose OdeBlocks call their residual through torch.func.functional_call."""
    out = copy.deepcopy(model)
    for block in out.blocks:
        block._call_residual = types.MethodType(lambda self, tensors, x: functional_call(self.residual, tensors, (x,)),
                                                block)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small batch and few repeats")
    args = p.parse_args(argv)
    torch.manual_seed(0)
    batch, repeats = (32, 3) if args.quick else (128, 7)
    n = 4
    x = torch.randn(batch, 3, 32, 32)
    y = torch.randint(0, 10, (batch,))

    cnet = ContinuousNet(channels=(16, 32, 64), n_basis=n, scheme="euler")
    resnet = resnet_from_continuousnet(cnet)
    fcall = with_functional_call(cnet)
    t = interleaved_median(
        {
            "continuousnet_euler": train_step(cnet, x, y, torch.optim.SGD(cnet.parameters(), lr=0.01, momentum=0.9)),
            "plain_resnet": train_step(resnet, x, y, torch.optim.SGD(resnet.parameters(), lr=0.01, momentum=0.9)),
            "continuousnet_euler_functional_call": train_step(
                fcall, x, y, torch.optim.SGD(fcall.parameters(), lr=0.01, momentum=0.9)),
        },
        repeats=repeats,
    )
    rk4 = ContinuousNet(channels=(16, 32, 64), n_basis=n, scheme="rk4_classic")
    t.update(interleaved_median(
        {"continuousnet_rk4_classic": train_step(rk4, x, y, torch.optim.SGD(rk4.parameters(), lr=0.01, momentum=0.9))},
        repeats=repeats,
    ))

    # the pendulum MLP, one thread (tiny models are far faster so)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        mlp = torch.nn.Sequential(torch.nn.Linear(2, 50), torch.nn.Tanh(), torch.nn.Linear(50, 2)).double()
        f = lambda t_, z: mlp(z)
        z0 = torch.randn(1000, 2, dtype=torch.float64)
        n_pend = 10
        grid = torch.tensor(step_times(n_pend, (0.0, 0.1)), dtype=torch.float64)

        def ours():
            integrate(f, z0, "rk4_38", n_pend, (0.0, 0.1)).pow(2).sum().backward()

        def theirs():
            torchdiffeq.odeint(f, z0, grid, method="rk4")[-1].pow(2).sum().backward()

        t.update(interleaved_median({"integrate_mlp": ours, "torchdiffeq_mlp": theirs}, repeats=5 * repeats))
    finally:
        torch.set_num_threads(threads)

    ratios = {
        "continuousnet_euler / plain_resnet": t["continuousnet_euler"] / t["plain_resnet"],
        "rk4_classic / euler": t["continuousnet_rk4_classic"] / t["continuousnet_euler"],
        "integrate / torchdiffeq (pendulum MLP)": t["integrate_mlp"] / t["torchdiffeq_mlp"],
        "functional_call / own residual call": t["continuousnet_euler_functional_call"] / t["continuousnet_euler"],
    }
    goals = {"continuousnet_euler / plain_resnet": 1.10, "rk4_classic / euler": 4.2,
             "integrate / torchdiffeq (pendulum MLP)": 1.0, "functional_call / own residual call": None}
    for k, r in ratios.items():
        goal = goals[k]
        print(f"{k:42s} {r:6.3f}   " + (f"(goal <= {goal}) {'ok' if r <= goal else 'MISSED'}" if goal else "(measured)"))
    for k, v in t.items():
        print(f"  {k:40s} {1000 * v:8.2f} ms")
    path = write_result("core", {"batch": batch, "n_steps": n, "seconds": t, "ratios": ratios, "goals": goals,
                                 "quick": args.quick})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
