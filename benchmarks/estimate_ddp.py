"""The `paper` preset's training time on one GPU and on 8 GPUs, *estimated* from measured single-GPU step times
(issue 35; the README's "Many GPUs").  Nothing here runs on a GPU: it reads measurements and extrapolates.

Measured (all on one NVIDIA H200, torch 2.11.0+cu130; ``benchmarks/results``):

* ``bench_gpu.json``, ``bench_gpu-h200-preset-v1.json``: ms per SGD step at batch 128, widths 16-32-64, eager
  and CUDA-graphed, float32 and bf16 (RK4-classic N_t = 1, 2, 4, 8; Euler N_t = 4, 8);
* ``gpu_recipe-h200-e24.json``: ms per graphed bf16 step at batch 512, widths 32-64-128 to 64-128-256;
* the `gpu` preset's RK4 training on the H100 (``gpu_session-gpu.json``) against the same on the H200
  (``bench_gpu.json``'s ``measured_train``): how an H100's step compares with the H200's.

The model, with its assumptions:

1. a step's time is a straight line in N_t (least squares over the measured N_t; the paper's N_t = 16 and 32
   lie beyond them);
2. a graphed step's time grows as a power ``p`` of its work (FLOPs: batch × widths², from
   :func:`cnet_lib.runtime.threads.image_step_flops`), fitted over the measured widths and batches; on 8 GPUs
   each runs 1/8 of the batch: ``t × (1/8)**p`` if the power law held below the measured work (the fast end),
   ``t`` if a smaller batch did not help at all (the slow end: a launch- and latency-bound step);
3. an eager step on 1/8 of the batch is launch-bound: its kernels (counted per step, a line in N_t) times
   the host's time per launch, which the measured eager float32 channels-last steps put between their
   smallest and largest ``eager ms / kernels`` (or the graphed GPU time, if longer);
4. the all-reduce of the gradients (12.7 MB a step at 3.18M float32 parameters) and SyncBatchNorm's two
   collectives per BatchNorm call (about 1,500 a step at N_t = 32) are not counted: their cost was not
   measured, so every 8-GPU time here is a lower bound;
5. an H100's GPU runs these steps at the H200's speed times the ratio measured on the `gpu` preset's RK4
   training (the launch cost is the H200 machine's host's);
6. training steps only (the per-epoch evaluation is not counted): 50,000 images, 390 steps an epoch.

    python benchmarks/estimate_ddp.py            # writes benchmarks/results/ddp_estimate-h100x8.json
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
STEP_FILES = ("bench_gpu.json", "bench_gpu-h200-preset-v1.json")
RECIPE_FILE = "gpu_recipe-h200-e24.json"
H100_RUN = "gpu_session-gpu.json"
H100_TRAIN_IMAGES = 45_000  # the data pack's training images (README, "The data pack"), on which the H100 trained
BENCH_TRAIN_IMAGES = 50_000  # bench_gpu.py --train's synthetic CIFAR-sized set
PAPER_TRAIN_IMAGES = 50_000  # CIFAR-10's training split
OUT = "ddp_estimate-h100x8.json"


def line_fit(xs, ys) -> tuple[float, float]:
    """``(a, b)`` of the least-squares line ``y = a + b x`` (two or more distinct ``xs``)."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def power_exponent(work, times) -> float:
    """``p`` of the least-squares fit ``log t = c + p log w``."""
    return line_fit([math.log(w) for w in work], [math.log(t) for t in times])[1]


def epochs_at(cfg) -> dict[int, int]:
    """``{N_t: epochs trained at it}`` of a run: N_t = M doubles at every ``refine_at`` epoch count."""
    out: dict[int, int] = {}
    for epoch in range(cfg.epochs):
        nt = (cfg.n_steps or cfg.n_basis) * 2 ** sum(e <= epoch for e in cfg.refine_at)
        out[nt] = out.get(nt, 0) + 1
    return out


def step_lines(rows, key: str = "median_ms") -> dict:
    """``{(scheme, mode, precision): (a, b)}``: ``key`` (ms per step, or kernels per step) at batch 128 as a
    line in N_t (assumption 1)."""
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["scheme"], r["mode"], r["precision"]), []).append((r["n_steps"], r[key]))
    return {k: line_fit(*zip(*v)) for k, v in groups.items() if len({n for n, _ in v}) > 1}


def launch_us(rows) -> tuple[float, float]:
    """The host's (smallest, largest) microseconds per kernel launch, ``eager ms / kernels`` over the measured
    eager float32 channels-last steps (assumption 3)."""
    per = [1000 * r["median_ms"] / r["kernels_eager_fp32"] for r in rows if (r["mode"], r["precision"]) ==
           ("eager", "fp32_cl")]
    return min(per), max(per)


def work_exponents(rows, recipe_rows, flops) -> dict:
    """``{"scheme N_t": p}``: the power of a graphed bf16 step's time in its work (assumption 2), from the
    batch-128 16-32-64 step and the batch-512 steps at wider widths, for each scheme and N_t measured in both."""
    out = {}
    for scheme, nt in sorted({(r["scheme"], r["n_steps"]) for r in recipe_rows}):
        base = [r["median_ms"] for r in rows if (r["scheme"], r["n_steps"], r["mode"], r["precision"]) ==
                (scheme, nt, "graph", "bf16_cl")]
        if not base:
            continue
        ref = flops((16, 32, 64), 128, scheme, nt)
        points = [(1.0, statistics.fmean(base))] + [
            (flops(tuple(r["channels"]), r["batch"], scheme, nt) / ref, r["median_ms"])
            for r in recipe_rows if (r["scheme"], r["n_steps"]) == (scheme, nt)]
        out[f"{scheme} N_t={nt}"] = power_exponent(*zip(*points))
    return out


def step_ms(lines, scheme: str, nt: int, mode: str, precision: str) -> float:
    a, b = lines[(scheme, mode, precision)]
    return a + b * nt


def run_hours(cfg, ms_per_step, steps_per_epoch: int) -> float:
    """Hours of training steps of run ``cfg`` with ``ms_per_step(N_t)``."""
    return sum(n * steps_per_epoch * ms_per_step(nt) for nt, n in epochs_at(cfg).items()) / 3.6e6


def estimate(cfgs: dict, lines: dict, kernels: dict, launch: tuple, p: float, h100_factor: float,
             gpus: int = 8) -> dict:
    """Hours of training steps of each run in ``cfgs`` (16-32-64 models): one GPU with CUDA graphs and bf16
    (``python -m cnet_lib train``), and ``gpus`` GPUs data-parallel at the same global batch, eager in float32
    (what ``torchrun`` runs today) and, for comparison, graphed in bf16 (what capturing the step with its
    collectives could give).  Each ``gpus``-GPU time is a range ``[fast, slow]`` (assumptions 2 and 3) and a
    lower bound (assumption 4)."""
    shrink = (1 / gpus) ** p
    out = {}
    for run, cfg in cfgs.items():
        steps, scheme = PAPER_TRAIN_IMAGES // cfg.batch_size, cfg.scheme

        def graph(nt, prec="bf16_cl"):
            return h100_factor * step_ms(lines, scheme, nt, "graph", prec)

        def eager(nt, us):
            host = step_ms(kernels, scheme, nt, "eager", "fp32_cl") * us / 1000
            return max(host, shrink * graph(nt, "fp32_cl"))

        out[run] = {
            "epochs_at_n_steps": {str(k): v for k, v in epochs_at(cfg).items()},
            "one_gpu_graph_bf16_hours": run_hours(cfg, graph, steps),
            f"{gpus}_gpus_ddp_eager_fp32_hours": [run_hours(cfg, lambda nt: eager(nt, us), steps) for us in launch],
            f"{gpus}_gpus_ddp_graph_bf16_hours": [run_hours(cfg, lambda nt: s * graph(nt), steps)
                                                  for s in (shrink, 1.0)],
        }
    return out


def h100_over_h200(results: Path) -> float:
    """An H100's time per step over the H200's, from the `gpu` preset's RK4 training on each (assumption 5)."""
    from cnet_lib.images.runs.image_presets import image_runs

    cfg = image_runs("gpu")["rk4_refined"]
    h100 = json.loads((results / H100_RUN).read_text())["seeds"]["0"]["runs"]["rk4_refined"]["train_seconds"]
    h200 = json.loads((results / STEP_FILES[0]).read_text())["measured_train"]["rk4_refined"]["train_seconds"]
    per_step = lambda seconds, images: seconds / (cfg.epochs * (images // cfg.batch_size))
    return per_step(h100, H100_TRAIN_IMAGES) / per_step(h200, BENCH_TRAIN_IMAGES)


def compute(results: Path = RESULTS, gpus: int = 8) -> dict:
    """The whole estimate from the measured files in ``results``."""
    from cnet_lib.core.schemes import get_scheme
    from cnet_lib.images.runs.image_presets import image_runs
    from cnet_lib.runtime.threads import image_step_flops

    rows = [r for f in STEP_FILES for r in json.loads((results / f).read_text())["rows"]]
    recipe = json.loads((results / RECIPE_FILE).read_text())["timing"]
    flops = lambda ch, batch, scheme, nt: image_step_flops(ch, batch, get_scheme(scheme).stages, [nt] * len(ch))
    exponents = work_exponents(rows, recipe, flops)
    p = statistics.median(exponents.values())
    factor = h100_over_h200(results)
    cfgs = {k: v for k, v in image_runs("paper").items() if tuple(v.channels) == (16, 32, 64)}  # Table 1's runs
    lines, kernels, launch = step_lines(rows), step_lines(rows, "kernels_eager_fp32"), launch_us(rows)
    return {"estimate": f"the paper preset's CIFAR-10 runs on one H100 and on {gpus} H100s, not measured",
            "gpus": gpus, "measured_files": [*STEP_FILES, RECIPE_FILE, H100_RUN], "work_exponents": exponents,
            "work_exponent": p, "h100_over_h200": factor, "launch_us": list(launch),
            "ms_per_step_at_batch_128": {" ".join(k): v for k, v in lines.items()},
            "kernels_per_step": {" ".join(k): v for k, v in kernels.items() if k[1:] == ("eager", "fp32_cl")},
            "runs": estimate(cfgs, lines, kernels, launch, p, factor, gpus)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--out", default=str(RESULTS / OUT))
    args = ap.parse_args(argv)
    result = compute(RESULTS, args.gpus)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
