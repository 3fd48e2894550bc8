"""Throughput candidates for the GPU session's training (issue 45, item 2), each timed against today's SGD step.

Today's step is the library's (:class:`cnet_lib.images.training.train_loop.SGDStep`: the whole step captured in one
CUDA graph by :class:`cnet_lib.runtime.cuda_graphs.StepRunner`, bf16 autocast channels-last where the GPU has bf16,
:func:`cnet_lib.runtime.device.precision_for`) on the ContinuousNet of the recipe the GPU session trains next
(``image_presets.NEXT_GPU_RECIPE``: 64-128-256, batch 512, SGD with Nesterov momentum, label smoothing 0.1).  On the
H200 that step was measured bound by per-kernel cost, not arithmetic (about 20% of the bf16 peak at 64 wide): the
candidates below attack that.  Each is timed in alternating rounds with today's step (``bench_gpu.alternating_ms``),
so that load falls on both alike:

    batch     batch 1024 and 2048 (the learning rate would be scaled with it, which does not change a step's time):
              images per second against batch 512.  Whether the accuracy holds at the larger batch is for a training
              run to show (``bench_gpu_recipe.py``), not this timing.
    compile   ``torch.compile`` of the model (inductor: each BatchNorm fused with its ReLU and the elementwise work
              around it), the whole step still captured in one CUDA graph; the compile's seconds are recorded (paid
              again at every refinement, which changes the graph).
    streams   k = 2 and 3 models (several training seeds in one process), each step replayed on its own CUDA stream,
              against the same k steps one after another on one stream: images per second of all of them.
    data      the data pipeline of a training epoch (random crop, flip and cutout of each batch, on the GPU, drawn
              from a CPU generator: ``iterate_batches``) with the step, against the step alone on a batch already
              made: what the pipeline adds to each step, the most moving it onto the GPU's graph could save.

Every row says ms per step (the median of the rounds), images per second and the speed-up over today's step; a
candidate that fails records its error and the others go on; no candidate starts once ``--max-seconds`` is spent
(it says so).  The JSON is written again after every row, so a stopped run keeps the finished rows.

    python benchmarks/bench_gpu_throughput.py --out throughput.json --max-seconds 150   # on the GPU (the session's stage)
    python benchmarks/bench_gpu_throughput.py --dry-run --out /tmp/throughput.json      # CPU, tiny sizes: checks the script

The GPU session runs it first when ``GPU_SESSION_THROUGHPUT=1`` (``scripts/gpu_session.sh``); ``session_files.py
accept`` keeps a GPU's file as ``benchmarks/results/gpu_throughput-<gpu>.json``.  Nothing is chosen here: the session
after it picks the fastest candidate that keeps the exactness tests green, by these numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _timing import machine  # noqa: E402
from bench_gpu import alternating_ms  # noqa: E402

from cnet_lib.core.models import ContinuousNet  # noqa: E402
from cnet_lib.images.data.batches import iterate_batches  # noqa: E402
from cnet_lib.images.runs.image_presets import GPU_RECIPES, NEXT_GPU_RECIPE  # noqa: E402
from cnet_lib.images.training.train_loop import SGDStep  # noqa: E402
from cnet_lib.runtime import cuda_graphs as CG  # noqa: E402
from cnet_lib.runtime.device import precision_for  # noqa: E402

ROUNDS = 5
"""Alternating rounds per comparison (each times both, the order reversed every other round)."""


class OutOfTime(Exception):
    """``--max-seconds`` is spent: no further row starts."""


class Bench:
    """What every row shares: the device, the graph type, the recipe's sizes, the clock and the JSON."""

    def __init__(self, args):
        self.dry = args.dry_run
        self.device = torch.device("cpu") if self.dry else torch.device("cuda", torch.cuda.current_device())
        self.graph_cls = None if self.dry else CG.graph_class(self.device)
        common = GPU_RECIPES[NEXT_GPU_RECIPE]["common"]
        self.channels = (2, 4, 4) if self.dry else tuple(common["channels"])
        self.batch = 8 if self.dry else int(common["batch_size"])
        self.recipe = {k: common[k] for k in ("lr", "momentum", "weight_decay", "nesterov", "label_smoothing")}
        self.per_round = 1 if self.dry else 10
        self.rounds = 1 if self.dry else ROUNDS
        self.t_end = time.perf_counter() + args.max_seconds
        self.out = Path(args.out)
        self.payload = {"benchmark": "bench_gpu_throughput", "date": time.strftime("%Y-%m-%d"), "machine": machine(),
                        "dry_run": self.dry, "recipe": NEXT_GPU_RECIPE, "channels": list(self.channels),
                        "batch": self.batch, "rounds": self.rounds, "rows": []}

    def write(self) -> None:
        tmp = self.out.with_name(self.out.name + ".tmp")
        tmp.write_text(json.dumps(self.payload, indent=1))
        os.replace(tmp, self.out)

    def check_time(self) -> None:
        if time.perf_counter() > self.t_end:
            raise OutOfTime

    def step(self, scheme: str, n: int, batch: int, seed: int = 0, compiled: str = ""):
        """Today's step (``compiled``: a torch.compile backend for the candidate) and a batch for it."""
        torch.manual_seed(seed)
        model = ContinuousNet(channels=self.channels, n_basis=n, scheme=scheme).to(self.device).train()
        opt = torch.optim.SGD(model.parameters(), **{k: self.recipe[k] for k in ("lr", "momentum", "weight_decay",
                                                                                  "nesterov")})
        precision = precision_for(self.device, True, graphs=self.graph_cls is not None)
        step = SGDStep(model, opt, precision, self.graph_cls, self.recipe["label_smoothing"])
        if compiled:
            step.net = torch.compile(model, backend=compiled)
        x = torch.randn(batch, 3, 32, 32, device=self.device)
        y = torch.randint(0, 10, (batch,), device=self.device)
        return step, x, y

    def row(self, candidate: str, scheme: str, n: int, fn) -> None:
        """One row: ``fn()`` returns its numbers; an error is recorded and the next row goes on."""
        self.check_time()
        t0 = time.perf_counter()
        try:
            numbers = fn()
        except OutOfTime:
            raise
        except Exception as err:  # a measurement, not a test: say what failed and go on
            numbers = {"error": f"{type(err).__name__}: {err}"[:500]}
        row = {"candidate": candidate, "scheme": scheme, "n_steps": n, **numbers,
               "seconds_of_this_row": round(time.perf_counter() - t0, 1)}
        self.payload["rows"].append(row)
        self.write()
        said = row.get("error") or f"{row.get('speedup', float('nan')):.2f}x today's step"
        print(f"  {candidate:8s} {scheme:11s} N_t={n}: {said}", flush=True)
        if self.device.type == "cuda":
            torch.cuda.empty_cache()


def _vs_today(b: Bench, today, other, images_today: int, images_other: int, extra: dict | None = None) -> dict:
    timed = alternating_ms({"today": today, "candidate": other}, b.device, b.rounds, b.per_round, 1 if b.dry else 2)
    t, c = timed["today"]["median_ms"], timed["candidate"]["median_ms"]
    return {"today_ms": t, "candidate_ms": c, "images_per_s_today": images_today / t * 1000,
            "images_per_s": images_other / c * 1000, "speedup": (images_other / c) / (images_today / t),
            **(extra or {})}


def batch_rows(b: Bench, scheme: str, n: int) -> None:
    for factor in (2,) if b.dry else (2, 4):
        def measure(factor=factor):
            step, x, y = b.step(scheme, n, b.batch)
            big, xb, yb = b.step(scheme, n, b.batch * factor)
            return _vs_today(b, lambda: step(x, y), lambda: big(xb, yb), b.batch, b.batch * factor,
                             {"batch": b.batch * factor, "lr_scaled_to": b.recipe["lr"] * factor})
        b.row("batch", scheme, n, measure)


def compile_row(b: Bench, scheme: str, n: int) -> None:
    def measure():
        backend = "eager" if b.dry else "inductor"  # the dry run checks the plumbing, not inductor's code
        step, x, y = b.step(scheme, n, b.batch)
        fused, xc, yc = b.step(scheme, n, b.batch, compiled=backend)
        first = {"today": step(x, y)[0].item()}  # the same model and batch (seed 0): the first losses agree
        t0 = time.perf_counter()
        first["compiled"] = fused(xc, yc)[0].item()
        for _ in range(1 if b.dry else 2):  # compiles (forward and backward), warms up and captures the graph
            fused(xc, yc)
        if b.device.type == "cuda":
            torch.cuda.synchronize(b.device)
        compile_s = time.perf_counter() - t0
        return _vs_today(b, lambda: step(x, y), lambda: fused(xc, yc), b.batch, b.batch,
                         {"backend": backend, "compile_and_capture_s": compile_s, "batch": b.batch,
                          "first_loss": first})
    b.row("compile", scheme, n, measure)


def streams_rows(b: Bench, scheme: str, n: int) -> None:
    for k in (2,) if b.dry else (2, 3):
        def measure(k=k):
            steps = [b.step(scheme, n, b.batch, seed=i) for i in range(k)]
            cuda = b.device.type == "cuda"
            streams = [torch.cuda.Stream(b.device) for _ in range(k)] if cuda else [None] * k

            def one_after_another():
                for step, x, y in steps:
                    step(x, y)

            def side_by_side():
                if not cuda:  # no streams on the CPU: the dry run times the plumbing
                    return one_after_another()
                here = torch.cuda.current_stream(b.device)
                for st in streams:
                    st.wait_stream(here)
                for st, (step, x, y) in zip(streams, steps):
                    with torch.cuda.stream(st):
                        step(x, y)
                for st in streams:
                    here.wait_stream(st)

            for _ in range(1 if b.dry else 3):  # warm-up and capture, each graph on the stream it replays on
                side_by_side()
            return _vs_today(b, one_after_another, side_by_side, k * b.batch, k * b.batch,
                             {"models": k, "batch": b.batch, "today_is": f"{k} steps one after another"})
        b.row("streams", scheme, n, measure)


def data_row(b: Bench, scheme: str, n: int) -> None:
    def measure():
        n_batches = 2 if b.dry else 20
        step, x, y = b.step(scheme, n, b.batch)
        images = torch.randint(0, 256, (n_batches * b.batch, 3, 32, 32), dtype=torch.uint8, device=b.device)
        labels = torch.randint(0, 10, (n_batches * b.batch,), device=b.device)
        mean = torch.tensor([0.49, 0.48, 0.45], device=b.device)
        std = torch.tensor([0.25, 0.24, 0.26], device=b.device)
        gen = torch.Generator().manual_seed(0)

        def steps_alone():
            for _ in range(n_batches):
                step(x, y)

        def with_pipeline():
            for xb, yb in iterate_batches(images, labels, b.batch, mean, std, gen, shuffle=True, train_augment=True,
                                          drop_last=True, cutout=8):
                step(xb, yb)

        out = _vs_today(b, with_pipeline, steps_alone, n_batches * b.batch, n_batches * b.batch,
                        {"batch": b.batch, "batches_per_call": n_batches,
                         "today_is": "the step with the pipeline; the candidate the step alone (the bound)"})
        out["pipeline_ms_per_step"] = (out["today_ms"] - out["candidate_ms"]) / n_batches
        return out
    b.row("data", scheme, n, measure)


PLAN = (("batch", "euler", 4), ("batch", "rk4_classic", 4), ("data", "euler", 4), ("streams", "euler", 4),
        ("streams", "rk4_classic", 1), ("compile", "euler", 4), ("compile", "rk4_classic", 4))
"""The rows in the order they run: the cheap ones first, the compiles (tens of seconds each) last."""
RUNNERS = {"batch": batch_rows, "compile": compile_row, "streams": streams_rows, "data": data_row}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--max-seconds", type=float, default=150.0, help="no row starts after this many seconds")
    p.add_argument("--dry-run", action="store_true", help="CPU, tiny sizes: checks the script")
    args = p.parse_args(argv)
    if not args.dry_run and not torch.cuda.is_available():
        print("bench_gpu_throughput needs a CUDA GPU (or --dry-run on the CPU)", file=sys.stderr)
        return 2
    b = Bench(args)
    t0 = time.perf_counter()
    print(f"bench_gpu_throughput on {b.payload['machine'].get('cuda') or 'CPU (dry run)'}: "
          f"{'-'.join(map(str, b.channels))}, batch {b.batch}", flush=True)
    plan = [row for i, row in enumerate(PLAN) if not b.dry or row[0] not in [r[0] for r in PLAN[:i]]]
    for candidate, scheme, n in plan:
        if b.dry:  # the plumbing of every candidate once, at the cheapest graph: seconds on a CPU
            scheme, n = "euler", 1
        try:
            RUNNERS[candidate](b, scheme, n)
        except OutOfTime:
            b.payload["stopped"] = f"--max-seconds {args.max_seconds:g} spent before {candidate} {scheme} N_t={n}"
            break
    b.payload["total_seconds"] = time.perf_counter() - t0
    b.write()
    print(f"wrote {args.out} after {b.payload['total_seconds']:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
