"""One ODE-Net training iteration: cnet_lib's integrator ÷ torchdiffeq (issue 5 benchmark).

An iteration is what :func:`cnet_lib.pendulum.train_odenet` does per step: the one-step
model F(x_k) = step(G, x_k, Δt_data) on all pairs (the paper's 1000 at Δt_data = 0.01 over
T_data = 10), the loss, backward, and one Adam update; float64, one torch thread.  The two
backends compute the same numbers (tests/test_pendulum.py); this measures their overhead.
A ratio below 1 means cnet_lib is faster.

    python benchmarks/bench_pendulum.py            # ~20 s
    python benchmarks/bench_pendulum.py --quick    # a few seconds

Writes benchmarks/results/pendulum.json (or pendulum-quick.json).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import interleaved_median, write_result  # noqa: E402

from cnet_lib.pendulum import ODENet, make_data, one_step  # noqa: E402
from cnet_lib.runtime.device import torch_threads  # noqa: E402

SCHEMES = ("euler", "midpoint", "rk4_38")  # the schemes torchdiffeq and cnet_lib both have


def _iteration(model, opt, x_in, x_out, scheme, dt, backend):
    def run():
        opt.zero_grad(set_to_none=True)
        pred = one_step(model, x_in, scheme, dt, backend=backend)
        loss = ((pred - x_out) ** 2).sum(-1).mean() / dt**2
        loss.backward()
        opt.step()

    return run


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer repeats")
    args = p.parse_args(argv)
    iters, repeats = (20, 5) if args.quick else (50, 9)

    data = make_data(0.01, 10.0)
    x_in, x_out = data.pairs()
    results = {}
    with torch_threads(1):
        for scheme in SCHEMES:
            fns = {}
            for backend in ("cnet", "torchdiffeq"):
                torch.manual_seed(0)
                model = ODENet(50).double()
                opt = torch.optim.Adam(model.parameters(), lr=1e-3)
                step = _iteration(model, opt, x_in, x_out, scheme, data.dt_data, backend)

                def block(step=step):
                    for _ in range(iters):
                        step()

                fns[backend] = block
            med = interleaved_median(fns, repeats=repeats, warmup=1)
            per_iter = {k: v / iters for k, v in med.items()}
            ratio = per_iter["cnet"] / per_iter["torchdiffeq"]
            results[scheme] = {
                "cnet_ms_per_iter": 1e3 * per_iter["cnet"],
                "torchdiffeq_ms_per_iter": 1e3 * per_iter["torchdiffeq"],
                "ratio_cnet_over_torchdiffeq": ratio,
            }
            print(f"{scheme:>9}: cnet_lib {1e3 * per_iter['cnet']:.3f} ms/iter, torchdiffeq "
                  f"{1e3 * per_iter['torchdiffeq']:.3f} ms/iter, ratio cnet/torchdiffeq = {ratio:.2f}")
    name = "pendulum-quick" if args.quick else "pendulum"
    out = write_result(name, {
        "what": "one ODE-Net training iteration (1000 pairs, hidden 50, float64, 1 thread): forward, backward, Adam step",
        "iters_per_timing": iters,
        "repeats": repeats,
        "results": results,
    })
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
