"""GPU benchmark: eager vs CUDA graphs, bf16 vs float32, per SGD step of the `gpu` preset's models.

For the `gpu` image preset's width (16-32-64) and batch (128), every N_t its two runs train at
(RK4-classic refined 1 -> 8, Euler at 8) is timed with the project's own training step
(:class:`cnet_lib.images.training.train_loop.SGDStep`) in each precision (float32 NCHW, float32 channels-last, bf16
channels-last where the GPU has it) and each mode (eager, CUDA graph).  Per configuration it also
records the kernels one eager step launches and its floating-point operations, which give the
step-cost model:

    eager step ≈ max(GPU time, kernels × host time per launch)      graph step ≈ GPU time

It also times the library's alternative to :class:`cnet_lib.runtime.cuda_graphs.StepRunner`,
``torch.cuda.make_graphed_callables`` (the model's forward and backward graphed, the loss and the SGD
step eager), against StepRunner's one graph of the whole step (:func:`time_graphed_callables`; CUDA
only: it waits for a GPU session).

From the per-step times it extrapolates the preset's training time on 50,000 images (both
models, plus the per-epoch evaluation), and with ``--train`` it also *measures* it: the preset's
two runs trained by ``cnet_lib.images.training.train_loop.train`` on synthetic CIFAR-sized data of the same size
(timings do not depend on pixel values; the accuracies are meaningless).  ``estimate_t4`` turns
the recorded numbers into an estimate for a T4-class GPU (stated as an estimate, see its
docstring).

    python benchmarks/bench_gpu.py                  # ~1 min on an H100/H200
    python benchmarks/bench_gpu.py --train          # + the preset's real training time (minutes)
    python benchmarks/bench_gpu.py --dry-run        # CPU: tiny sizes, stand-in graphs (checks the script)

Writes benchmarks/results/bench_gpu.json (``--out`` to change it).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _timing import machine  # noqa: E402

from cnet_lib.runtime import cuda_graphs as CG  # noqa: E402
from cnet_lib.images.data.fake_data import write_fake_cifar  # noqa: E402
from cnet_lib.runtime.device import Precision, amp_dtype  # noqa: E402
from cnet_lib.core.models import ContinuousNet  # noqa: E402
from cnet_lib.images.runs.image_presets import IMAGE_PRESETS, image_runs  # noqa: E402
from cnet_lib.images import SGDStep, train  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"

# Published peak rates, for the T4 estimate only (NVIDIA datasheets): float32 without tensor cores,
# and memory bandwidth.  The H200 line is the machine the numbers were measured on here.
DATASHEET = {
    "T4": {"fp32_tflops": 8.1, "bandwidth_tbs": 0.32},
    "H100 SXM": {"fp32_tflops": 67.0, "bandwidth_tbs": 3.35},
    "H200": {"fp32_tflops": 67.0, "bandwidth_tbs": 4.8},
}


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _median_ms(fn, device, steps: int, warmup: int) -> dict:
    for _ in range(warmup):
        fn()
    _sync(device)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        fn()
        _sync(device)
        times.append(1000 * (time.perf_counter() - t0))
    return {"median_ms": statistics.median(times), "min_ms": min(times), "n": steps}


def alternating_ms(fns: dict, device, rounds: int, per_round: int, warmup: int) -> dict:
    """ms per call of each function in ``fns``, measured in alternating rounds: each round times
    ``per_round`` calls of every function in turn (the order reversed every other round), so that load from
    other work on the device falls on all of them alike.  ``{name: {"median_ms", "min_ms", "rounds"}}``, the
    median and the least of the rounds' means."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    _sync(device)
    names = list(fns)
    per = {name: [] for name in names}
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            t0 = time.perf_counter()
            for _ in range(per_round):
                fns[name]()
            _sync(device)
            per[name].append(1000 * (time.perf_counter() - t0) / per_round)
    return {name: {"median_ms": statistics.median(v), "min_ms": min(v), "rounds": rounds} for name, v in per.items()}


def _step(channels, scheme, n_steps, batch, device, precision, graph_cls):
    torch.manual_seed(0)
    model = ContinuousNet(channels=channels, n_basis=n_steps, scheme=scheme).to(device).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    step = SGDStep(model, opt, precision, graph_cls)
    x = torch.randn(batch, 3, 32, 32, device=device)
    y = torch.randint(0, 10, (batch,), device=device)
    return model, opt, step, x, y


def count_kernels(channels, scheme, n_steps, batch, device, precision) -> int:
    """Kernels (CUDA) or operators (CPU dry run) one eager SGD step launches, by the profiler."""
    from torch.profiler import ProfilerActivity, profile

    _, _, step, x, y = _step(channels, scheme, n_steps, batch, device, precision, None)
    step(x, y)
    _sync(device)
    act = [ProfilerActivity.CUDA] if device.type == "cuda" else [ProfilerActivity.CPU]
    with profile(activities=act) as prof:
        step(x, y)
        _sync(device)
    if device.type == "cuda":
        return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CPU)


def count_flops(channels, scheme, n_steps, batch, device) -> int:
    """Floating-point operations of one SGD step's forward and backward (torch's FlopCounterMode:
    convolutions and matrix products, which are nearly all of it)."""
    from torch.utils.flop_counter import FlopCounterMode

    model, _, _, x, y = _step(channels, scheme, n_steps, batch, device, Precision(), None)
    with FlopCounterMode(display=False) as fc:
        torch.nn.functional.cross_entropy(model(x), y).backward()
    return int(fc.get_total_flops())


def precisions(device) -> dict:
    """The precisions timed on ``device``.  On the CPU (the dry run) only NCHW float32, the one the
    library uses there: channels-last is a GPU layout, and on AVX2 CPUs it meets oneDNN issue 6035
    (cnet_lib/core/conv_guard.py)."""
    out = {"fp32": Precision(None, channels_last=False)}
    if device.type != "cuda":
        return out
    out["fp32_cl"] = Precision(None, channels_last=True)
    if device.type == "cuda" and amp_dtype(device) is not None:
        out["bf16_cl"] = Precision(torch.bfloat16, channels_last=True)
    return out


def time_steps(configs, channels, batch, device, graph_cls, steps, warmup) -> list[dict]:
    rows = []
    for scheme, n in configs:
        kernels = count_kernels(channels, scheme, n, batch, device, Precision())
        flops = count_flops(channels, scheme, n, batch, device)
        for pname, prec in precisions(device).items():
            for mode, gcls in (("eager", None), ("graph", graph_cls)):
                _, _, step, x, y = _step(channels, scheme, n, batch, device, prec, gcls)
                t = _median_ms(lambda: step(x, y), device, steps, warmup)
                rows.append({"scheme": scheme, "n_steps": n, "precision": pname, "mode": mode, **t,
                             "kernels_eager_fp32": kernels, "flops": flops})
                print(f"  {scheme:12s} N_t={n:<3d} {pname:8s} {mode:6s} {t['median_ms']:8.2f} ms "
                      f"(min {t['min_ms']:.2f})", flush=True)
            if device.type == "cuda":
                torch.cuda.empty_cache()
    return rows


@torch.no_grad()
def time_evaluation(channels, device, graph_cls, n_images: int, batch: int) -> list[dict]:
    """Seconds to evaluate ``n_images`` with RK4-classic N_t = 8, eager and graphed (what a sweep does
    once per manifestation)."""
    from cnet_lib.images.training.evaluation import Evaluator

    torch.manual_seed(0)
    model = ContinuousNet(channels=channels, n_basis=8, scheme="rk4_classic").to(device).eval()
    x = torch.randint(0, 255, (n_images, 3, 32, 32), dtype=torch.uint8, device=device)
    y = torch.randint(0, 10, (n_images,), device=device)
    mean, std = torch.full((3,), 0.5, device=device), torch.full((3,), 0.25, device=device)
    rows = []
    for mode, gcls in (("eager", None), ("graph", graph_cls)):
        ev = Evaluator(Precision(), gcls)
        ev(model, x[:batch], y[:batch], mean, std, batch)  # lazy initialisation
        _, sec = ev(model, x, y, mean, std, batch)
        rows.append({"mode": mode, "n_images": n_images, "batch": batch, "seconds": sec})
        print(f"  evaluation of {n_images} images, rk4_classic N_t=8, {mode}: {sec:.3f} s", flush=True)
    return rows


def time_graphed_callables(channels, scheme, n_steps, batch, device, steps, warmup) -> dict:
    """ms per SGD step (float32 NCHW) with ``torch.cuda.make_graphed_callables(model)``, whose two graphs
    replay the model's forward and backward while the loss and the SGD step run eagerly, against
    :class:`cnet_lib.runtime.cuda_graphs.StepRunner`'s one graph of the whole step.  CUDA only; an error
    is recorded, never raised (it must not stop the GPU check)."""
    if device.type != "cuda":
        return {"skipped": "torch.cuda.make_graphed_callables needs CUDA"}
    try:
        model, opt, _, x, y = _step(channels, scheme, n_steps, batch, device, Precision(), None)
        graphed = torch.cuda.make_graphed_callables(model, (x,))

        def step():
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(graphed(x), y).backward()
            opt.step()

        _, _, ours, x2, y2 = _step(channels, scheme, n_steps, batch, device, Precision(), CG.graph_class(device))
        rounds = 5
        timed = alternating_ms({"theirs": step, "ours": lambda: ours(x2, y2)}, device, rounds,
                               max(1, steps // rounds), warmup)
        theirs, mine = timed["theirs"], timed["ours"]
    except Exception as err:  # a measurement, not a test: say what failed and go on
        return {"scheme": scheme, "n_steps": n_steps, "error": f"{type(err).__name__}: {err}"[:400]}
    out = {"scheme": scheme, "n_steps": n_steps, "make_graphed_callables_ms": theirs["median_ms"],
           "step_runner_ms": mine["median_ms"], "ratio": theirs["median_ms"] / mine["median_ms"],
           "min_ms": {"make_graphed_callables": theirs["min_ms"], "step_runner": mine["min_ms"]},
           "rounds": rounds, "timed": "alternating rounds (bench_gpu.alternating_ms)"}
    print(f"  {scheme} N_t={n_steps} fp32: make_graphed_callables {out['make_graphed_callables_ms']:.2f} ms, "
          f"StepRunner {out['step_runner_ms']:.2f} ms per step", flush=True)
    return out


def best(rows, scheme, n, mode) -> dict:
    cands = [r for r in rows if r["scheme"] == scheme and r["n_steps"] == n and r["mode"] == mode]
    return min(cands, key=lambda r: r["median_ms"])


def extrapolate(rows, preset: str, n_train: int, mode: str, precision: str) -> dict:
    """Training seconds of the preset's runs on ``n_train`` images from the per-step times
    (evaluation excluded): Σ over epochs of steps per epoch × ms per step at that epoch's N_t."""
    out = {}
    for name, cfg in image_runs(preset).items():
        steps = n_train // cfg.batch_size
        total = 0.0
        n = cfg.n_steps or cfg.n_basis
        for epoch in range(cfg.epochs):
            if epoch in cfg.refine_at:
                n *= 2
            r = [x for x in rows if x["scheme"] == cfg.scheme and x["n_steps"] == n and x["mode"] == mode
                 and x["precision"] == precision]
            if not r:
                return {}
            total += steps * r[0]["median_ms"] / 1000
        out[name] = total
    return out


def _units(scheme: str, n_steps: int) -> int:
    from cnet_lib.core.schemes import get_scheme

    return get_scheme(scheme).stages * n_steps


def step_cost_model(rows) -> dict:
    """The measured step-cost model, per configuration (float32 NCHW): GPU time = the graph step
    (one launch), host time per launch = (eager - graph) / kernels; the eager step is the larger of
    the two when the host cannot keep ahead of the GPU."""
    out = {}
    for r in rows:
        if r["precision"] != "fp32" or r["mode"] != "graph":
            continue
        eager = next(x for x in rows if x["scheme"] == r["scheme"] and x["n_steps"] == r["n_steps"]
                     and x["precision"] == "fp32" and x["mode"] == "eager")
        k = r["kernels_eager_fp32"]
        out[f"{r['scheme']} N_t={r['n_steps']}"] = {
            "gpu_ms": r["median_ms"], "eager_ms": eager["median_ms"], "kernels": k,
            "launch_overhead_ms": eager["median_ms"] - r["median_ms"],
            "host_us_per_kernel": 1000 * max(eager["median_ms"] - r["median_ms"], 0.0) / k,
            "achieved_tflops": r["flops"] / (r["median_ms"] / 1000) / 1e12}
    return out


def estimate_t4(rows, evals, preset: str, n_train: int, n_test: int, host_slowdown: float = 2.0) -> dict:
    """An ESTIMATE (not a measurement) of the preset's image chapters on a T4 in float32.

    Model: the measured GPU time of a step (float32, graph replay, on the measuring GPU) scaled by
    the ratio of the two GPUs' float32 peaks, i.e. the T4 is assumed to reach the same fraction
    of its peak on these small convolutions as the measuring GPU did (its achieved TFLOP/s are in
    ``step_cost_model``).  Without graphs a step takes at least kernels × the measured host time per
    launch × ``host_slowdown`` (Colab's host CPU is slower).  Training = Σ epochs × steps × step
    time; evaluation after every epoch and the two sweeps scale the measured graphed evaluation
    (RK4-classic, N_t = 8) by their residual evaluations ("units").
    """
    meas = machine().get("cuda") or ""
    ref = next((v for k, v in DATASHEET.items() if k != "T4" and k.split()[0] in meas), DATASHEET["H200"])
    t4 = DATASHEET["T4"]
    ratio = ref["fp32_tflops"] / t4["fp32_tflops"]
    cost = step_cost_model(rows)
    eval_graph = next((e for e in evals if e["mode"] == "graph"), evals[0])
    # seconds per image and per residual evaluation of the whole model (3 blocks), on a T4
    eval_per_unit_image = eval_graph["seconds"] / eval_graph["n_images"] / (3 * _units("rk4_classic", 8)) * ratio

    def step_ms(scheme, n, mode):
        c = cost.get(f"{scheme} N_t={n}")
        if c is None:
            return None
        gpu = c["gpu_ms"] * ratio
        return gpu if mode == "graph" else max(gpu, c["kernels"] * c["host_us_per_kernel"] * host_slowdown / 1000)

    out = {"assumptions": {"fp32_peak_ratio": ratio, "host_slowdown": host_slowdown, "t4": t4,
                           "reference": {"name": meas, **ref}},
           "step_cost_model": cost}
    for mode in ("graph", "eager"):
        chapters = 0.0
        runs = {}
        for name, cfg in image_runs(preset).items():
            steps = n_train // cfg.batch_size
            n = cfg.n_steps or cfg.n_basis
            train_s = eval_s = 0.0
            for epoch in range(cfg.epochs):
                if epoch in cfg.refine_at:
                    n *= 2
                ms = step_ms(cfg.scheme, n, mode)
                if ms is None:
                    return {**out, "error": f"no measurement for {cfg.scheme} N_t={n}"}
                train_s += steps * ms / 1000
                eval_s += n_test * 3 * _units(cfg.scheme, n) * eval_per_unit_image  # 3 blocks
            grid = select_sweep(preset)
            sweep_units = sum(_units(sch, nt) for sch in grid["schemes"] for nt in grid["n_steps"])
            sweep_units += sum(_units(sch, m) for sch in grid["compress_schemes"] for m in grid["compress"])
            sweep_units += 2 * _units(cfg.scheme, n)  # the trained graph, with its warm-up
            sweep_s = n_test * 3 * sweep_units * eval_per_unit_image
            runs[name] = {"train_s": train_s, "eval_s": eval_s, "sweep_s": sweep_s}
            chapters += train_s + eval_s + sweep_s
        out[mode] = {"runs": runs, "image_chapters_minutes": chapters / 60}
    return out


def select_sweep(preset: str) -> dict:

    return IMAGE_PRESETS[preset]["sweep"]


def train_preset(preset: str, device, n_train: int, n_test: int) -> dict:
    """Train the preset's two runs with cnet_lib.images.training.train_loop.train on synthetic data of the real size; wall seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        write_fake_cifar(tmp, n_train=n_train, n_test=n_test, seed=0)
        out = {}
        for name, cfg in image_runs(preset, data_dir=tmp, device=str(device), progress=False).items():
            t0 = time.perf_counter()
            res = train(cfg)
            out[name] = {"wall_seconds": time.perf_counter() - t0,
                         "train_seconds": sum(h["train_seconds"] for h in res.history),
                         "eval_seconds": sum(h["eval_seconds"] for h in res.history),
                         "seconds_per_epoch": [round(h["train_seconds"], 3) for h in res.history]}
            print(f"  {preset} {name}: {out[name]['wall_seconds']:.1f} s wall ({out[name]['train_seconds']:.1f} s "
                  f"training, {out[name]['eval_seconds']:.1f} s evaluation)", flush=True)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--train", action="store_true", help="also train the preset's two runs on synthetic data (minutes)")
    p.add_argument("--preset", default="gpu")
    p.add_argument("--dry-run", action="store_true", help="CPU, tiny sizes, stand-in graphs: checks the script")
    p.add_argument("--steps", type=int, default=30, help="timed steps per configuration")
    p.add_argument("--out", type=Path, default=RESULTS / "bench_gpu.json")
    args = p.parse_args(argv)
    if args.dry_run:
        device, graph_cls, channels, batch, n_train, n_test = torch.device("cpu"), CG.EagerGraph, (2, 4, 4), 8, 64, 32
        steps, warmup, eval_images = 3, 3, 64
    else:
        if not torch.cuda.is_available():
            print("bench_gpu needs a CUDA GPU (or --dry-run on the CPU)", file=sys.stderr)
            return 2
        device, graph_cls = torch.device("cuda", torch.cuda.current_device()), CG.graph_class(torch.device("cuda"))
        channels, batch, n_train, n_test = (16, 32, 64), 128, 50000, 10000
        steps, warmup, eval_images = args.steps, 5, 10000
    runs = image_runs(args.preset)
    configs = []
    for cfg in runs.values():
        n = cfg.n_steps or cfg.n_basis
        for epoch in range(cfg.epochs):
            if epoch in cfg.refine_at:
                n *= 2
            if (cfg.scheme, n) not in configs:
                configs.append((cfg.scheme, n))
    print(f"bench_gpu on {machine().get('cuda') or 'CPU (dry run)'}: channels {channels}, batch {batch}, "
          f"configurations {configs}", flush=True)
    rows = time_steps(configs, channels, batch, device, graph_cls, steps, warmup)
    evals = time_evaluation(channels, device, graph_cls, eval_images, 500 if not args.dry_run else 16)
    scheme, n = max(configs, key=lambda c: (c[0] != "euler", c[1]))  # the costliest step: RK4 at its largest N_t
    graphed_callables = time_graphed_callables(channels, scheme, n, batch, device, steps, warmup)
    summary = {}
    for scheme, n in configs:
        e, g = best(rows, scheme, n, "eager"), best(rows, scheme, n, "graph")
        summary[f"{scheme} N_t={n}"] = {"eager_best_ms": e["median_ms"], "eager_best": e["precision"],
                                         "graph_best_ms": g["median_ms"], "graph_best": g["precision"],
                                         "speedup": e["median_ms"] / g["median_ms"],
                                         "kernels": e["kernels_eager_fp32"], "gflops": e["flops"] / 1e9}
    payload = {"benchmark": "bench_gpu", "date": time.strftime("%Y-%m-%d"), "machine": machine(),
               "dry_run": args.dry_run, "preset": args.preset, "channels": list(channels), "batch": batch,
               "rows": rows, "evaluation": evals, "summary": summary, "graphed_callables": graphed_callables,
               "extrapolated_train_seconds": {
                   f"{mode}_{prec}": extrapolate(rows, args.preset, n_train, mode, prec)
                   for mode in ("eager", "graph") for prec in precisions(device)},
               "t4_estimate": estimate_t4(rows, evals, args.preset, n_train, n_test)}
    if args.train:
        payload["measured_train"] = train_preset(args.preset, device, n_train, n_test)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1))
    print("\nbest per configuration (ms per SGD step):")
    for k, v in summary.items():
        print(f"  {k:20s} eager {v['eager_best_ms']:8.2f} ({v['eager_best']})  graph {v['graph_best_ms']:8.2f} "
              f"({v['graph_best']})  {v['speedup']:.2f}x  {v['kernels']} kernels, {v['gflops']:.1f} GFLOP")
    for k, v in payload["extrapolated_train_seconds"].items():
        print(f"  extrapolated {args.preset} training, {k}: " + ", ".join(f"{n} {s:.0f} s" for n, s in v.items()))
    for k, v in payload["t4_estimate"]["step_cost_model"].items():
        print(f"  step cost {k:20s}: GPU {v['gpu_ms']:.2f} ms, eager {v['eager_ms']:.2f} ms, {v['kernels']} kernels, "
              f"{v['host_us_per_kernel']:.1f} µs host per launch, {v['achieved_tflops']:.1f} TFLOP/s")
    t4 = payload["t4_estimate"]
    if "error" in t4:
        print(f"  T4 estimate: {t4['error']}")
    else:
        for mode in ("graph", "eager"):
            print(f"  T4 ESTIMATE (float32, {mode}): image chapters {t4[mode]['image_chapters_minutes']:.1f} min; "
                  + ", ".join(f"{n}: train {r['train_s'] / 60:.1f} + eval {r['eval_s'] / 60:.1f} + sweep "
                              f"{r['sweep_s'] / 60:.1f} min" for n, r in t4[mode]["runs"].items()))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
