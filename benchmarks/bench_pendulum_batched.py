"""Every ODE-Net of a pendulum study trained at once against one after another, in one run (issue 31).

The ODE-Nets of a preset's study (the three training schemes at Δt_data, ``n_iters`` iterations, and the
coarse-Δt_data controls, ``control_iters``) are trained in each of these modes, in this order, and timed:

* ``train_odenet``: one after another with :func:`cnet_lib.pendulum.train_odenet` on the CPU, one thread
  (what the chapters did before the batched training: the status quo, whatever ``--device``);
* ``train_odenet_all_cores`` (a CPU with several cores): the same with a thread per core, so that the
  batched training on every core is also compared with the sequential one given the same cores;
* ``one_at_a_time``: one after another with :func:`cnet_lib.pendulum.train_batched`, one model per call, on
  ``--device``;
* ``batched``: all at once with ``train_batched`` on ``--device``, eagerly (one CPU thread);
* ``batched_all_cores`` (a CPU with several cores): the same with a thread per core, which the chapters use
  where a short probe measures it faster (:func:`cnet_lib.pendulum.choose_threads`);
* ``batched_graph`` (CUDA only): all at once, each phase's iteration recorded as a CUDA graph and replayed.

The ratios (``train_odenet`` / ``batched`` ...) come from this one run; ``ratio_best_sequential_over_best_batched``
is the fastest sequential mode over the fastest batched one (each given the thread count that suits it).  The batched results are compared
with ``train_odenet``'s (float64): the largest relative difference of the final losses and of the weights.

The whole study may take minutes per mode; ``--max-seconds`` bounds the run: a short calibration run of every
mode (2% of the iterations) predicts each mode's time, and every iteration count is scaled by one fraction
so that the predicted total fits (``fraction`` in the record; the full-preset times are the measured ones
divided by it, ``full_preset_seconds``).  ``--dry-run`` trains 10 iterations per model, in seconds.

    python benchmarks/bench_pendulum_batched.py --preset gpu --device cpu            # the 2-core CPU
    python benchmarks/bench_pendulum_batched.py --preset gpu --device cuda --out X.json
    python benchmarks/bench_pendulum_batched.py --dry-run                            # seconds

Writes ``benchmarks/results/pendulum_batched-<preset>-<device>.json`` (or ``--out``), with the machine and
the load average before and after.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # cnet_lib from this checkout, installed or not
from _timing import machine  # noqa: E402

from cnet_lib import pendulum  # noqa: E402
from cnet_lib.runtime.device import available_cores, torch_threads  # noqa: E402

CALIBRATION = 0.02
"""The fraction of the iterations the calibration run trains, to predict each mode's time."""


def study_jobs(preset: str) -> list:
    """The preset's study as :class:`cnet_lib.pendulum.TrainingJob` s (main models, then the controls)."""
    cfg = pendulum.config_for(preset)
    return [pendulum.job_for(sub, s) for sub, schemes in pendulum.study_configs(cfg) for s in schemes]


def scaled(jobs: list, fraction: float) -> list:
    """The jobs with every iteration count scaled by ``fraction`` (at least 1 each)."""
    return [dataclasses.replace(j, n_iters=max(1, round(j.n_iters * fraction))) for j in jobs]


def _train_odenet(jobs, threads: int = 1):
    with torch_threads(threads):
        return [pendulum.train_odenet(j.data(), j.scheme, j.n_iters, lr=j.lr, lr_final=j.lr_final, seed=j.seed,
                                      hidden=j.hidden, progress=False) for j in jobs]


def modes(device: torch.device) -> dict:
    """Mode name -> ``train(jobs) -> [ODENetFit]`` (module doc)."""
    out = {
        "train_odenet": _train_odenet,
        "one_at_a_time": lambda jobs: [pendulum.train_batched([j], device=device, progress=False, graphs=False)[0]
                                       for j in jobs],
        "batched": lambda jobs: pendulum.train_batched(jobs, device=device, progress=False, graphs=False),
    }
    if device.type == "cpu" and available_cores() > 1:
        out["train_odenet_all_cores"] = lambda jobs: _train_odenet(jobs, available_cores())
        out["batched_all_cores"] = lambda jobs: pendulum.train_batched(jobs, device=device, progress=False, graphs=False,
                                                                       threads=available_cores())
    if device.type == "cuda":
        out["batched_graph"] = lambda jobs: pendulum.train_batched(jobs, device=device, progress=False, graphs=True)
    return out


def timed(train, jobs, device) -> tuple:
    """``(seconds, fits)`` of one training, synchronised with the device."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    fits = train(jobs)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - t0, fits


def agreement(fits: list, reference: list) -> dict:
    """The largest relative differences between two trainings of the same jobs: final loss and weights."""
    loss = max(abs(a.final_loss - b.final_loss) / abs(b.final_loss) for a, b in zip(fits, reference))
    weights = max(float((p - q).abs().max() / q.abs().max()) for a, b in zip(fits, reference)
                  for p, q in zip(a.model.state_dict().values(), b.model.state_dict().values()))
    return {"final_loss_rel": loss, "weights_rel": weights}


def choose_fraction(jobs, runs: dict, device, budget: float) -> tuple:
    """``(fraction, predicted seconds per mode at fraction 1)`` from a calibration run of every mode."""
    small = scaled(jobs, CALIBRATION)
    predicted = {}
    for name, train in runs.items():
        timed(train, scaled(jobs, 0), device)  # warm-up: imports, CUDA context and kernels, first allocations
        seconds, _ = timed(train, small, device)
        predicted[name] = seconds / CALIBRATION
        print(f"  calibration {name:14s} {seconds:7.2f} s -> full preset about {predicted[name]:7.1f} s", flush=True)
    return min(1.0, budget / max(sum(predicted.values()), 1e-9)), predicted


def _args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="gpu", choices=["smoke", "cpu", "gpu", "paper"])
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--out", default=None, help="the JSON record (default benchmarks/results/pendulum_batched-"
                                               "<preset>-<device>.json; a dry run writes only with --out)")
    p.add_argument("--max-seconds", type=float, default=300.0, help="the budget of the timed run (after calibration)")
    p.add_argument("--dry-run", action="store_true", help="10 iterations per model: checks the script in seconds")
    return p.parse_args(argv)


def run(args) -> dict:
    """Calibrate, choose the fraction, time every mode once, compare the batched weights with train_odenet's."""
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: CUDA is not available on this machine; use --device cpu")
    device = torch.device(args.device)
    jobs, runs = study_jobs(args.preset), modes(device)
    print(f"pendulum_batched: preset {args.preset}, {len(jobs)} ODE-Nets, device {device}"
          f"{' (' + torch.cuda.get_device_name(device) + ')' if device.type == 'cuda' else ''}, "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    if args.dry_run:
        fraction, predicted = 10 / max(j.n_iters for j in jobs), {}
    else:
        fraction, predicted = choose_fraction(jobs, runs, device, args.max_seconds)
    work = scaled(jobs, fraction)
    print(f"fraction of the iterations timed: {fraction:.3g} ({max(j.n_iters for j in work)} iterations at most)",
          flush=True)
    seconds, fits = {}, {}
    for name, train in runs.items():
        seconds[name], fits[name] = timed(train, work, device)
        print(f"  {name:14s} {seconds[name]:8.2f} s", flush=True)
    base = seconds["batched_graph" if "batched_graph" in seconds else "batched"]
    return {
        "preset": args.preset, "device": str(device), "dry_run": bool(args.dry_run), "fraction": fraction,
        "jobs": [dataclasses.asdict(j) for j in work], "model_iterations": sum(j.n_iters for j in work),
        "seconds": {k: round(v, 3) for k, v in seconds.items()},
        "full_preset_seconds": {k: round(v / fraction, 1) for k, v in seconds.items()},
        "calibration_predicted_full_seconds": {k: round(v, 1) for k, v in predicted.items()},
        "ratios_to_fastest_batched": {k: round(v / base, 2) for k, v in seconds.items()},
        "ratio_train_odenet_over_batched": round(seconds["train_odenet"] / seconds["batched"], 2),
        "ratio_one_at_a_time_over_batched": round(seconds["one_at_a_time"] / seconds["batched"], 2),
        **({"ratio_train_odenet_over_batched_all_cores": round(seconds["train_odenet"] / seconds["batched_all_cores"], 2),
            "cores": available_cores()} if "batched_all_cores" in seconds else {}),
        "ratio_best_sequential_over_best_batched": round(
            min(v for k, v in seconds.items() if k.startswith("train_odenet"))
            / min(v for k, v in seconds.items() if k.startswith("batched")), 2),
        "agreement_with_train_odenet": {k: agreement(v, fits["train_odenet"]) for k, v in fits.items()
                                        if k != "train_odenet"},
    }


def main(argv=None) -> int:
    args = _args(argv)
    load_before = os.getloadavg()
    record = run(args)
    record = {"benchmark": f"pendulum_batched-{args.preset}-{args.device}", "date": time.strftime("%Y-%m-%d"),
              "machine": machine(), **record,
              "load_average": {"before": [round(x, 2) for x in load_before],
                               "after": [round(x, 2) for x in os.getloadavg()]},
              "command": "python benchmarks/bench_pendulum_batched.py " + " ".join(argv or sys.argv[1:])}
    print(json.dumps({k: record[k] for k in ("seconds", "full_preset_seconds", "ratios_to_fastest_batched",
                                             "agreement_with_train_odenet")}, indent=1))
    out = args.out or (None if args.dry_run else
                       Path(__file__).parent / "results" / f"pendulum_batched-{args.preset}-{args.device}.json")
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(record, indent=2))
        print(f"written to {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
