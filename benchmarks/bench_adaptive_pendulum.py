"""The adaptive-step chapter's pendulum cells in one preset, timed part by part on this machine.

Those cells train their ODE-Nets and integrate them on the CPU in every preset, with or without a GPU, so
this is what a reader of that preset waits for in them on a machine with this CPU (Colab gives 2 cores;
the chapter's image part runs on the GPU there and is timed by scripts/gpu_session.py).  The same calls as
the chapter, in order: training (``pendulum_flows``: the three ODE-Nets, and the coarse-Δt_data controls
where the preset has them), the adaptive solves with their equal-cost fixed-step rows (``flow_rows``), each
ODE-Net on its own graph (``own_rows``) and torchdiffeq's solves (``torchdiffeq_rows``).  The card of the
adaptive chapter quotes the total (``cnet_lib.book.measurements.gpu_preset_on_cpu``, checked by
tests/test_chapter_cards.py).

    python benchmarks/bench_adaptive_pendulum.py gpu     # ~7 min on 2 idle cores
    python benchmarks/bench_adaptive_pendulum.py smoke   # seconds

Writes benchmarks/results/adaptive_pendulum-<preset>.json with the machine and the load average.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import write_result  # noqa: E402

from cnet_lib import pendulum  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("preset", choices=["smoke", "cpu", "gpu", "paper"])
    args = p.parse_args(argv)
    load_before = os.getloadavg()[0]
    cfg, table = pendulum.config_for(args.preset), pendulum.adaptive_table_for(args.preset)
    seconds, t = {}, time.perf_counter()

    def lap(name):
        nonlocal t
        now = time.perf_counter()
        seconds[name] = round(now - t, 1)
        t = now
        print(f"{name:12s} {seconds[name]:7.1f} s", flush=True)

    flows = pendulum.pendulum_flows(cfg, table)
    lap("training")
    pendulum.flow_rows(flows, cfg, table)
    lap("flow_rows")
    pendulum.own_rows(flows, cfg)
    lap("own_rows")
    pendulum.torchdiffeq_rows(flows, cfg, table["tolerances"])
    lap("torchdiffeq")
    total = round(sum(seconds.values()), 1)
    print(f"{'total':12s} {total:7.1f} s ({len(flows)} flows)")
    out = write_result(f"adaptive_pendulum-{args.preset}", {
        "preset": args.preset, "table": {k: list(v) if isinstance(v, tuple) else v for k, v in table.items()},
        "n_flows": len(flows), "seconds": seconds, "total_seconds": total,
        "load_average_1min": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)}})
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
