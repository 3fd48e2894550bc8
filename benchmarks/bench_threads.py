"""CPU threads under contention: ms per training step with 1 and 2 torch threads, idle and beside a
competing job, with OpenMP's default (spinning) and passive waiting.

Models: the `smoke` image preset's (4-8-8, batch 32) and the `cpu` preset's (8-16-32, batch 128),
each RK4-classic and Euler at the N_t they train at.  Every cell of the table is measured in a
fresh process (OMP_WAIT_POLICY is read when the OpenMP runtime starts); the competing job is
another process running the same kind of step with 2 threads, as a second training or a test
run would.  The numbers choose the policy of :mod:`cnet_lib.runtime.threads`.

    python benchmarks/bench_threads.py [--quick]

Writes benchmarks/results/bench_threads.json.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _timing import write_result  # noqa: E402

CASES = {
    "smoke rk4_classic N_t=2": dict(channels=(4, 8, 8), batch=32, scheme="rk4_classic", n=2),
    "smoke euler N_t=2": dict(channels=(4, 8, 8), batch=32, scheme="euler", n=2),
    "cpu rk4_classic N_t=1": dict(channels=(8, 16, 32), batch=128, scheme="rk4_classic", n=1),
    "cpu rk4_classic N_t=4": dict(channels=(8, 16, 32), batch=128, scheme="rk4_classic", n=4),
    "cpu euler N_t=4": dict(channels=(8, 16, 32), batch=128, scheme="euler", n=4),
}

WORKER = r"""
import json, statistics, sys, time, torch
from cnet_lib.core.models import ContinuousNet
spec = json.loads(sys.argv[1]); threads = int(sys.argv[2]); seconds = float(sys.argv[3])
torch.set_num_threads(threads)
torch.manual_seed(0)
m = ContinuousNet(channels=spec["channels"], n_basis=spec["n"], scheme=spec["scheme"])
opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(spec["batch"], 3, 32, 32); y = torch.randint(0, 10, (spec["batch"],))
def step():
    opt.zero_grad(set_to_none=True)
    torch.nn.functional.cross_entropy(m(x), y).backward()
    opt.step()
step(); step()
times = []
t_end = time.perf_counter() + seconds
while time.perf_counter() < t_end or len(times) < 3:
    t0 = time.perf_counter(); step(); times.append(time.perf_counter() - t0)
print(json.dumps({"median_ms": 1000 * statistics.median(times), "steps": len(times)}))
"""

COMPETITOR = r"""
import sys, time, torch
from cnet_lib.core.models import ContinuousNet
torch.set_num_threads(2)
m = ContinuousNet(channels=(8, 16, 32), n_basis=2, scheme="rk4_classic")
x = torch.randn(64, 3, 32, 32); y = torch.randint(0, 10, (64,))
t_end = time.perf_counter() + float(sys.argv[1])
while time.perf_counter() < t_end:
    torch.nn.functional.cross_entropy(m(x), y).backward()
"""


def run(spec: dict, threads: int, wait_policy: str, contended: bool, seconds: float) -> dict:
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    env.pop("OMP_NUM_THREADS", None)
    if wait_policy != "default":
        env["OMP_WAIT_POLICY"] = wait_policy
    rival = None
    if contended:  # the rival keeps OpenMP's default waiting, as an unrelated job would
        renv = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")}
        rival = subprocess.Popen([sys.executable, "-c", COMPETITOR, str(seconds + 30)], env=renv)
        time.sleep(2.0)
    try:
        out = subprocess.run([sys.executable, "-c", WORKER, json.dumps(spec), str(threads), str(seconds)], env=env,
                             capture_output=True, text=True, timeout=600)
    finally:
        if rival is not None:
            rival.kill()
            rival.wait()
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="1 s per cell instead of 4, smoke cases only")
    args = p.parse_args(argv)
    seconds = 1.0 if args.quick else 4.0
    cases = {k: v for k, v in CASES.items() if not args.quick or k.startswith("smoke")}
    rows = []
    for name, spec in cases.items():
        for contended in (False, True):
            for policy in ("default", "PASSIVE"):
                for threads in (1, 2):
                    r = run(spec, threads, policy, contended, seconds)
                    rows.append({"case": name, "threads": threads, "omp_wait_policy": policy, "contended": contended, **r})
                    print(f"{name:24s} {'contended' if contended else 'idle':9s} {policy:8s} {threads} thread(s): "
                          f"{r['median_ms']:9.2f} ms/step ({r['steps']} steps)", flush=True)
    path = write_result("bench_threads" + ("-quick" if args.quick else ""), {"seconds_per_cell": seconds, "rows": rows})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
