"""The live apps of the image chapters: a trained ContinuousNet evaluated on any graph
(:func:`live_sweep_app`) or perturbed (:func:`live_robustness_app`), on test images, while the reader
moves the controls.  :func:`cnet_lib.draw.widgets.live_app` turns their controls into widgets, and the
static book shows the figure given as ``static_fallback_fig`` in their place.
"""
from __future__ import annotations

import copy
import math
import time
from typing import Mapping

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from ..images.batches import normalize
from ..images.checks import check_study_inputs
from ..images.evaluation import Evaluator, evaluate, model_dtype
from ..images.image_presets import sweep_grid
from ..images.perturbations import float_format_copy, input_noise, perturb_coefficients, quantize_theta, quantize_weights
from ..images.robustness_conditions import condition_name
from ..images.study_inputs import study_data
from ..images.study_run import StudyRun
from ..runtime.device import resolve_device
from ..runtime.vocabulary import run_color, run_label
from .widgets import Choice, IntRange, Steps, live_app

__all__ = ["live_sweep_app", "live_robustness_app"]


def live_sweep_app(runs: Mapping[str, StudyRun], static_fallback_fig, device=None, n_images: int = 1000, n_show: int = 12):
    """A live app (model, scheme, N_t, compression) that evaluates the trained model on test
    images on ``device`` (default: the model's) and shows a few of them with their predicted class."""
    check_study_inputs(runs, n_images, n_show)
    first = next(iter(runs.values()))
    dev = resolve_device(device) if device is not None else next(first.model.parameters()).device
    data = study_data(first.config, first.settings, dev, with_train=False)
    x, y = data.test_x[:n_images], data.test_y[:n_images]
    grid = sweep_grid(first.config.preset)
    max_m = max(b.n_basis for r in runs.values() for b in r.model.blocks)
    comp_opts = [("none (trained θ)", 0)] + [(f"M = {m}", m) for m in sorted(set(grid.get("compress", ())) | {1, 2, 4}) if m < max_m]

    def render(model, scheme, n_steps, compress):
        run = runs[model]
        m = run.model.to(dev)
        if compress:
            m = copy.deepcopy(m).project(compress)
        t0 = time.perf_counter()
        with m.manifested(scheme, int(n_steps)):
            acc, _ = evaluate(m, x, y, data.mean, data.std, amp=run.config.amp, graphs=run.config.cuda_graphs)
            with torch.no_grad():
                pred = m(normalize(x[:n_show], data.mean, data.std).to(model_dtype(m))).argmax(1).cpu().tolist()
        sec = time.perf_counter() - t0
        imgs = x[:n_show].cpu()
        cols = min(n_show, 6)
        fig = make_subplots(rows=math.ceil(n_show / cols), cols=cols, horizontal_spacing=0.01, vertical_spacing=0.08,
                            subplot_titles=[f"{'✓' if p == t else '✗'} {data.classes[p]}" for p, t in zip(pred, y[:n_show].cpu().tolist())])
        for i in range(n_show):
            fig.add_trace(go.Image(z=imgs[i].permute(1, 2, 0).numpy()), row=i // cols + 1, col=i % cols + 1)
        fig.update_xaxes(visible=False)
        fig.update_yaxes(visible=False)
        ident = compress and f"θ compressed to M = {compress}, " or ""
        fig.update_layout(title=f"{run_label(model)}: {ident}{scheme}, N_t = {n_steps}: accuracy {acc:.4f} on {len(y)} test "
                                f"images ({sec:.2f} s on {dev.type}); predicted classes of the first {n_show}",
                          height=330, margin=dict(t=90, l=10, r=10, b=10))
        return fig

    schemes = list(grid["schemes"])
    return live_app(
        {"model": Choice([(r.label, k) for k, r in runs.items()], description="model"),
         "scheme": Choice(schemes, schemes[-1], "scheme"),
         "n_steps": IntRange(1, max(grid["n_steps"]), max(grid["n_steps"]) // 2 or 1, "N_t"),
         "compress": Choice(comp_opts, 0, "compress")},
        render, static_fallback_fig, title="Evaluate a trained ContinuousNet on any graph")


def live_robustness_app(runs: Mapping[str, StudyRun], static_fallback_fig, grid: Mapping, device=None,
                        n_images: int = 1000):
    """A live app (model, σ, weight format, scheme, N_t, input noise): evaluates the perturbed model on
    the first ``n_images`` test images and compares it with the clean model on the same images."""
    check_study_inputs(runs, n_images)
    first = next(iter(runs.values()))
    dev = resolve_device(device) if device is not None else next(first.model.parameters()).device
    data = study_data(first.config, first.settings, dev, with_train=False)
    x, y = data.test_x[:n_images], data.test_y[:n_images]
    ev = Evaluator()
    sweep = sweep_grid(first.config.preset)

    def render(model, sigma, fmt, scheme, n_steps, noise):
        base = runs[model].model.to(dev)
        m = perturb_coefficients(base, sigma, 0) if sigma else base
        if fmt in ("bf16", "fp16"):
            m = float_format_copy(m, fmt)
        elif fmt != "float32":
            scope, bits = fmt.split()
            m = (quantize_theta if scope == "theta" else quantize_weights)(m, int(bits))
        with base.manifested(scheme, int(n_steps)), m.manifested(scheme, int(n_steps)):
            clean = ev.correct(base, x, y, data.mean, data.std)[0].double().mean().item()
            hit = ev.correct(m, x, y, data.mean, data.std, transform=input_noise(noise, 0) if noise else None)[0]
        acc = hit.double().mean().item()
        fig = go.Figure(go.Bar(x=["clean", "perturbed"], y=[clean, acc], text=[f"{clean:.3f}", f"{acc:.3f}"],
                               textposition="outside", marker_color=["#888888", run_color(model)]))
        stored = fmt if fmt in ("float32", "bf16", "fp16") else condition_name(f"quantized_{fmt.split()[0]}", int(fmt.split()[1]))
        fig.update_layout(title=f"{run_label(model)}, {scheme} N_t = {n_steps}: σ = {sigma:g}, {stored}, input noise "
                                f"τ = {noise:g} → {100 * (clean - acc):+.1f} points lost on {len(y)} images",
                          yaxis_range=[0, 1.1], yaxis_title="test accuracy", template="plotly_white", height=380)
        return fig

    schemes = list(sweep["schemes"])
    return live_app(
        {"model": Choice([(r.label, k) for k, r in runs.items()], description="model"),
         "sigma": Steps([0.0] + [float(s) for s in grid["sigmas"]], 0.0, "σ"),
         "fmt": Choice([("float32", "float32"), ("bf16", "bf16"), ("fp16", "fp16")]
                       + [(condition_name(f"quantized_{scope}", b), f"{scope} {b}") for scope in ("theta", "weights")
                          for b in (8, 4)], "float32", "weights"),
         "scheme": Choice(schemes, first.model.blocks[0].scheme.name, "scheme"),
         "n_steps": IntRange(1, max(sweep["n_steps"]), first.model.blocks[0].n_steps, "N_t"),
         "noise": Steps([0.0] + [float(t) for t in grid["input_noise"]], 0.0, "input τ")},
        render, static_fallback_fig, title="Perturb a trained ContinuousNet")
