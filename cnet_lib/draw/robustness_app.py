"""The live app of the robustness chapter: a trained ContinuousNet perturbed (weight noise, a weight format,
input noise) on any graph, against the clean model on the same images (:func:`live_robustness_app`).

Every interaction answers at once (:mod:`cnet_lib.draw.quick_answers`): from the cached robustness study
when the graph is one the study measured and at most one perturbation is on (the study's mean over its
noise draws, with their range), else from the first images a fixed budget of floating-point operations
allows, with the ± of that sample, refined to all of the app's images in the background
(:class:`cnet_lib.draw.progressive.Progressive`).
"""
from __future__ import annotations

import copy
import time
from typing import Mapping, Optional

import plotly.graph_objects as go
import torch

from ..images.runs.image_presets import live_images, sweep_grid
from ..images.runs.study_run import StudyRun, study_device
from ..images.studies.checks import check_study_inputs
from ..images.studies.robustness_measure import condition_name
from ..images.studies.robustness_perturbations import (float_format_copy, input_noise, perturb_coefficients, quantize_theta,
                                                      quantize_weights)
from ..images.training.evaluation import Evaluator
from ..runtime.vocabulary import run_color, run_label
from .html_figures import below_modebar
from .image_apps import app_data, evaluate_in_chunks
from .progressive import Progressive
from .quick_answers import Estimate, estimate_from, follow_text, quick_size, study_answer
from .widgets import Choice, IntRange, Steps, live_app

__all__ = ["live_robustness_app", "study_label", "active_conditions"]


def study_label(runs: Mapping[str, StudyRun], model: str, scheme: str, n_steps: int) -> Optional[str]:
    """The label under which the robustness study measured ``model`` on (``scheme``, ``n_steps``): the
    model itself on its own graph, ``"euler_fixed on rk4_classic"`` for the Euler model run with
    RK4-classic at its own N_t; ``None`` for any other graph."""
    own = runs[model].model.blocks[0]
    if (scheme, int(n_steps)) == (own.scheme.name, own.n_steps):
        return model
    if model == "euler_fixed" and scheme == "rk4_classic" and int(n_steps) == own.n_steps:
        return "euler_fixed on rk4_classic"
    return None


def active_conditions(sigma: float, fmt: str, noise: float) -> list:
    """The study's ``(kind, level)`` of every perturbation the controls turn on."""
    out = []
    if sigma:
        out.append(("weight_noise", float(sigma)))
    if fmt in ("bf16", "fp16"):
        out.append(("float_format", fmt))
    elif fmt != "float32":
        scope, bits = fmt.split()
        out.append((f"quantized_{scope}", int(bits)))
    if noise:
        out.append(("input_noise", float(noise)))
    return out


def _perturbed(base, sigma: float, fmt: str):
    m = perturb_coefficients(base, sigma, 0) if sigma else base
    if fmt in ("bf16", "fp16"):
        return float_format_copy(m, fmt)
    if fmt != "float32":
        scope, bits = fmt.split()
        return (quantize_theta if scope == "theta" else quantize_weights)(m, int(bits))
    return m


def _figure(model: str, scheme: str, n_steps, sigma, fmt: str, noise, clean: Estimate, hit: Estimate,
            follow: str = "") -> go.Figure:
    fig = go.Figure(go.Bar(x=["clean", "perturbed"], y=[clean.accuracy, hit.accuracy],
                           error_y=dict(type="data", array=[1.96 * clean.se, 1.96 * hit.se]),
                           text=[f"{clean.accuracy:.3f}", f"{hit.accuracy:.3f}"], textposition="outside",
                           marker_color=["#888888", run_color(model)]))
    stored = fmt if fmt in ("float32", "bf16", "fp16") else condition_name(f"quantized_{fmt.split()[0]}", int(fmt.split()[1]))
    more = f"; {follow}" if follow and not hit.final else ""
    fig.update_layout(title=f"{run_label(model)}, {scheme} N_t = {n_steps}: σ = {sigma:g}, {stored}, input noise τ = "
                            f"{noise:g} → {100 * (clean.accuracy - hit.accuracy):+.1f} points lost<br><sup>clean "
                            f"{clean.text()}; perturbed {hit.text()}{more}</sup>",
                      yaxis_range=[0, 1.1], yaxis_title="held-out accuracy (bars: 95% interval)", template="plotly_white",
                      height=400, margin=dict(t=50))
    return below_modebar(fig, grow=True)


def live_robustness_app(runs: Mapping[str, StudyRun], static_fallback_fig, grid: Mapping, device=None,
                        n_images: Optional[int] = None, study: Optional[Mapping[str, list]] = None):
    """A live app (model, σ, weight format, scheme, N_t, input noise): the perturbed model against the clean
    one, each accuracy with its ±.  Answered from ``study`` (the cached robustness study,
    :func:`cnet_lib.images.robustness_runs`) where it measured that graph and perturbation, else from a
    sample of the first ``n_images`` held-out images (default :func:`cnet_lib.images.live_images` of the preset)
    refined to all of them in the background (the first answer says within how many seconds)."""
    check_study_inputs(runs, n_images)
    first = next(iter(runs.values()))
    dev = study_device(first, device)
    data, x, y, note = app_data(first, dev, n_images or live_images(first.config.preset))
    ev = Evaluator()
    sweep = sweep_grid(first.config.preset)

    def render(model, sigma, fmt, scheme, n_steps, noise):
        label, active = study_label(runs, model, scheme, n_steps), active_conditions(sigma, fmt, noise)
        if study and label in study and len(active) <= 1:
            clean = study_answer(study, label, "clean", None)
            hit = clean if not active else study_answer(study, label, *active[0])
            if clean is not None and hit is not None:
                return _figure(model, scheme, n_steps, sigma, fmt, noise, clean, hit)
        base = runs[model].model.to(dev)
        m = _perturbed(base, sigma, fmt)
        base, m = (copy.deepcopy(c).manifest(scheme, int(n_steps)) for c in (base, m))
        transform = input_noise(noise, 0) if noise else None
        n = quick_size(base, dev, len(y), evaluations=2)
        source = f"all {len(y)} images of the app" if n >= len(y) else f"first {n} of {len(y)} images"
        start = time.perf_counter()
        hits = [ev.correct(c, x[:n], y[:n], data.mean, data.std, batch_size=max(n, 1), transform=t)[0]
                for c, t in ((base, None), (m, transform))]
        follow = follow_text(len(y), n, (time.perf_counter() - start) / n)
        quick = _figure(model, scheme, n_steps, sigma, fmt, noise, *(estimate_from(h, source) for h in hits), follow)
        if n >= len(y):
            return quick

        def refine(stale):
            rest = [evaluate_in_chunks(Evaluator(), c, x, y, data.mean, data.std, n, stale, transform=t)
                    for c, t in ((base, None), (m, transform))]
            if any(r is None for r in rest):
                return None
            ests = [estimate_from(torch.cat([h, r]), f"all {len(y)} images of the app") for h, r in zip(hits, rest)]
            return _figure(model, scheme, n_steps, sigma, fmt, noise, *ests)

        return Progressive(quick, refine)

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
        render, static_fallback_fig, title="Perturb a trained ContinuousNet" + note)
