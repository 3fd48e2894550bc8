"""Seconds per interaction of every live app of the book, and the inference paths behind them.

For each app (the manifestation chapter's sweep app, the robustness chapter's app, the pendulum rollout
app, the first chapter's solver app) a fixed list of interactions is rendered the way a moved control
renders it (``LiveApp.render``); each is timed ``--repeats`` times and the minimum kept (other jobs on a
shared machine only ever add time).  A :class:`cnet_lib.draw.progressive.Progressive` answer is timed in
its two parts: ``first_s`` (what the reader waits for) and ``refine_s`` (the background refinement);
``images_first`` counts the images the first answer pushed through a ContinuousNet (a forward pre-hook),
and ``before_s`` is what the interaction cost before the redesign: the model on all of the app's images.

The inference paths of the costliest interaction (RK4-classic at N_t = 8 on 1,000 images): ``torch.no_grad``
against ``torch.inference_mode``, batch sizes, and, on the CPU, 1 against 2 threads (channels-last is not
tried on the CPU: unsafe on AVX2 for narrow convolutions, cnet_lib/core/conv_guard.py).

    CNET_PRESET=cpu CNET_DATA_DIR=../shared/data-large python benchmarks/bench_live_apps.py
    python benchmarks/bench_live_apps.py --preset gpu --device cuda --runs-dir DIR --out FILE   # the GPU session
    python benchmarks/bench_live_apps.py --quick   # smoke sizes, one repeat (checks the script)

Writes benchmarks/results/live_apps-<device>.json (``--out`` to change it) with the machine, after every group
of apps (image apps, solver app, pendulum app: ``--apps`` picks some), so a run stopped at a deadline keeps
the groups it finished (``complete`` says whether every asked group is in).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _timing import machine  # noqa: E402

from cnet_lib import draw, images, pendulum  # noqa: E402
from cnet_lib.book import demos  # noqa: E402
from cnet_lib.core.models import ContinuousNet  # noqa: E402
from cnet_lib.draw.progressive import Progressive, Refiner  # noqa: E402
from cnet_lib.images.training.evaluation import Evaluator  # noqa: E402
from cnet_lib.runtime.settings import Settings  # noqa: E402
from cnet_lib.runtime.threads import torch_threads  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
GROUPS = ("image", "solver", "pendulum")
"""The groups of apps, in the order they are timed (the GPU's own first, the CPU-bound pendulum app last)."""
COUNT = {"images": 0}


def _count(module, inputs):
    if isinstance(module, ContinuousNet) and inputs and torch.is_tensor(inputs[0]):
        COUNT["images"] += int(inputs[0].shape[0])


def time_interaction(app, values: dict, repeats: int) -> dict:
    """Minimum seconds of the first answer and of its refinement over ``repeats``, the images the first
    answer evaluated, and where its number came from."""
    first, refine, images_first, source = [], [], 0, ""
    for _ in range(repeats):
        COUNT["images"] = 0
        t0 = time.perf_counter()
        out = app.render(**values)
        first.append(time.perf_counter() - t0)
        images_first = COUNT["images"]
        if isinstance(out, Progressive):
            t0 = time.perf_counter()
            out.refine(lambda: False)
            refine.append(time.perf_counter() - t0)
            out = out.first  # its title says the sample and its ±
        title = getattr(getattr(out, "layout", None), "title", None)
        source = (getattr(title, "text", "") or "")[:220]
    row = {"values": values, "first_s": min(first), "refine_s": min(refine) if refine else None,
           "images_first": images_first, "title": source}
    print(f"  {json.dumps(values)}: first {row['first_s']:.3f} s ({images_first} images)"
          + (f", refined in {row['refine_s']:.2f} s" if row["refine_s"] else ""), flush=True)
    return row


def before_s(run, data, scheme, n_steps, n_images: int, repeats: int) -> float:
    """The interaction before the redesign: the model on all ``n_images`` images, batches of 500."""
    x, y = data.test_x[:n_images], data.test_y[:n_images]
    ev = Evaluator()
    best = float("inf")
    with run.model.manifested(scheme, n_steps):
        for _ in range(repeats):
            best = min(best, ev.correct(run.model, x, y, data.mean, data.std, 500)[1])
    return best


def inference_paths(run, data, device, n_images: int, repeats: int) -> list:
    """RK4-classic at N_t = 8 (the costliest graph) on ``n_images`` images: ``torch.no_grad``, batches of 500,
    the default threads, against one change at a time: ``torch.inference_mode``, batches of 250 and 1,000,
    and on the CPU one thread (the apps refine in chunks of 200 under ``no_grad``)."""
    x, y = data.test_x[:n_images], data.test_y[:n_images]
    m = run.model
    variants = [("no_grad", 500, None), ("inference_mode", 500, None), ("no_grad", 250, None), ("no_grad", 1000, None)]
    if device.type == "cpu":
        variants.append(("no_grad", 500, 1))
    rows = []
    with m.manifested("rk4_classic", 8):
        for mode, batch, threads in variants:
            def once():
                ctx = torch.inference_mode() if mode == "inference_mode" else torch.no_grad()
                with ctx, (torch_threads(threads) if threads else _null()):
                    for i in range(0, len(y), batch):
                        m(images.data.batches.normalize(x[i:i + batch], data.mean, data.std))
                if device.type == "cuda":
                    torch.cuda.synchronize()
            once()
            best = float("inf")
            for _ in range(repeats):
                t0 = time.perf_counter()
                once()
                best = min(best, time.perf_counter() - t0)
            rows.append({"mode": mode, "batch": batch, "threads": threads or torch.get_num_threads(), "seconds": best,
                         "n_images": len(y)})
            print(f"inference path {rows[-1]}", flush=True)
    return rows


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def image_apps(settings: Settings, repeats: int, n_images: int) -> dict:
    runs = images.trained_runs(settings, verbose=False)
    sweeps = images.sweep_runs(runs, verbose=False)
    study = images.robustness_runs(runs, verbose=False)
    grid = images.robustness_grid(settings.preset)
    data = images.study_data(runs["rk4_refined"].config, settings, with_train=False)
    with contextlib.redirect_stdout(io.StringIO()):  # an app's first render, displayed outside a kernel, prints
        sweep_app = draw.live_sweep_app(runs, draw.fig_sweep_explorer(sweeps), device=settings.device, n_images=n_images,
                                        sweeps=sweeps)
    with contextlib.redirect_stdout(io.StringIO()):
        robust_app = draw.live_robustness_app(runs, draw.fig_robustness_explorer(study), grid, device=settings.device,
                                              n_images=n_images, study=study)
    Refiner.pool().submit(lambda: None).result()  # the apps' first answers are refined in the background: not while timing
    sweep_cases = [("rk4_refined", "rk4_classic", 4, 0), ("rk4_refined", "rk4_classic", 8, 0),
                   ("euler_fixed", "rk4_classic", 5, 0), ("rk4_refined", "rk4_38", 7, 0), ("rk4_refined", "rk4_classic", 2, 2)]
    out = {"sweep_app": [], "robustness_app": []}
    print("sweep app", flush=True)
    for model, scheme, nt, comp in sweep_cases:
        row = time_interaction(sweep_app, dict(model=model, scheme=scheme, n_steps=nt, compress=comp), repeats)
        row["before_s"] = before_s(runs[model], data, scheme, nt, n_images, repeats) if not comp else None
        out["sweep_app"].append(row)
    own = runs["rk4_refined"].model.blocks[0]
    sigma = float(grid["sigmas"][-1])
    robust_cases = [dict(model="rk4_refined", sigma=0.0, fmt="float32", scheme=own.scheme.name, n_steps=own.n_steps, noise=0.0),
                    dict(model="rk4_refined", sigma=sigma, fmt="float32", scheme=own.scheme.name, n_steps=own.n_steps, noise=0.0),
                    dict(model="euler_fixed", sigma=sigma, fmt="theta 4", scheme="euler",
                         n_steps=runs["euler_fixed"].model.blocks[0].n_steps, noise=0.0),
                    dict(model="rk4_refined", sigma=0.0, fmt="float32", scheme="rk4_classic", n_steps=8,
                         noise=float(grid["input_noise"][0]))]
    print("robustness app", flush=True)
    for values in robust_cases:
        out["robustness_app"].append(time_interaction(robust_app, values, repeats))
    out["inference_paths"] = inference_paths(runs["rk4_refined"], data, torch.device(settings.device), n_images, repeats)
    return out


def pendulum_apps(preset: str, repeats: int) -> dict:
    cfg = pendulum.config_for(preset)
    models = pendulum.train_models(cfg, progress=False)
    rows = pendulum.rollout_rows(models, cfg.eval_schemes, cfg.h_values, cfg, keep_paths=True)  # as the chapter does
    with contextlib.redirect_stdout(io.StringIO()):
        app = draw.live_rollout_app(models, cfg, static_fallback_fig=_blank(), rows=rows)
        before = draw.live_rollout_app(models, cfg, static_fallback_fig=_blank())  # rolled out on every move, as before
    cases = [dict(h=h, scheme=s, trained=t) for h in (min(cfg.h_values), 1.0, max(cfg.h_values))
             for s in cfg.eval_schemes[:2] for t in list(models)[:1]]
    out = []
    for c in cases:
        row = time_interaction(app, c, repeats)
        row["before_s"] = time_interaction(before, c, repeats)["first_s"]
        out.append(row)
    return {"rollout_app": out}


def solver_app(repeats: int) -> dict:
    import math

    def rate(t, y):
        return (-1.0 + 0.5 * math.sin(4.0 * t)) * y

    def exact(t):
        return math.exp(-t + (1.0 - math.cos(4.0 * t)) / 8.0)

    with contextlib.redirect_stdout(io.StringIO()):
        app = demos.live_solver_app(rate, exact, ["euler", "midpoint", "rk4_classic"], 2.0, _blank(), max_steps=64)
    return {"solver_app": [time_interaction(app, dict(scheme=s, n_steps=n), repeats)
                           for s in ("euler", "rk4_classic") for n in (4, 64)]}


def _blank():
    import plotly.graph_objects as go

    return go.Figure()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", help="default: the environment's (CNET_PRESET)")
    p.add_argument("--device", help="default: the environment's")
    p.add_argument("--runs-dir", help="default: the environment's runs folder")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--n-images", type=int, default=1000)
    p.add_argument("--quick", action="store_true", help="smoke sizes, one repeat: checks the script")
    p.add_argument("--out")
    p.add_argument("--apps", nargs="+", choices=GROUPS, default=list(GROUPS), help="which groups, in this order")
    args = p.parse_args(argv)
    changes = {k: v for k, v in dict(preset=args.preset, device=args.device, runs_dir=args.runs_dir).items() if v}
    if args.quick:
        changes.setdefault("preset", "smoke")
    settings = Settings.from_environment(**changes)
    repeats = 1 if args.quick else args.repeats
    n_images = min(args.n_images, 128) if args.quick else args.n_images
    out = Path(args.out) if args.out else RESULTS / f"live_apps-{torch.device(settings.device).type}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"benchmark": "bench_live_apps", "date": time.strftime("%Y-%m-%d"), "machine": machine(),
               "preset": settings.preset, "device": str(settings.device), "n_images": n_images, "repeats": repeats,
               "quick": args.quick, "groups": [], "complete": False}
    jobs = {"image": lambda: image_apps(settings, repeats, n_images), "solver": lambda: solver_app(repeats),
            "pendulum": lambda: pendulum_apps(settings.preset, repeats)}
    result = {}
    hook = torch.nn.modules.module.register_module_forward_pre_hook(_count)
    try:
        for group in args.apps:
            result.update(jobs[group]())
            payload.update(result, groups=payload["groups"] + [group], complete=len(payload["groups"]) + 1 == len(args.apps))
            tmp = out.with_name(out.name + ".tmp")
            tmp.write_text(json.dumps(payload, indent=1))
            tmp.replace(out)  # after every group: a stopped run keeps what it measured
    finally:
        hook.remove()
    for app, rows in result.items():
        if app == "inference_paths":
            best = min(rows, key=lambda r: r["seconds"])
            print(f"inference paths: best {best}")
            continue
        for r in rows:
            print(f"{app:15s} {json.dumps(r['values']):80s} first {r['first_s']:.3f} s ({r['images_first']} images)"
                  + (f", refined in {r['refine_s']:.2f} s" if r['refine_s'] else "")
                  + (f", before {r['before_s']:.2f} s" if r.get('before_s') else ""))
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
