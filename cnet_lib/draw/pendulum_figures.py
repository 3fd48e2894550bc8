"""Figures and the live app of the pendulum chapters.

The numbers come from the pendulum study (:mod:`cnet_lib.pendulum`), which returns tidy rows (displayed
as tables by :mod:`cnet_lib.report.pendulum_report`); this module only draws them (plotly, from
precomputed values, so sliders and menus work in the static book) and describes the live rollout app
(:func:`cnet_lib.draw.widgets.live_app` makes the widgets).  Colours and labels come from
:mod:`cnet_lib.runtime.vocabulary`.
"""
from __future__ import annotations

import math
from typing import Mapping, Optional, Sequence

import numpy as np
import torch

from ..pendulum.odenet import ODENetFit, odenet_label, rollout
from ..pendulum.pendulum_presets import PendulumConfig
from ..pendulum.physics import RHO0, G as G_DEFAULT, exact_solution
from ..runtime.rows import find_row
from ..runtime.threads import torch_threads
from ..runtime.vocabulary import SCHEME_COLORS, SERIES_COLORS, scheme_color, scheme_label
from .plotting import LEGEND_BELOW, dropdown_slider_figure, log_ticks, loglog_style, slider_figure
from .widgets import Choice, Steps, live_app

__all__ = [
    "fig_exact_motion",
    "fig_against_exact",
    "fig_scheme_explorer",
    "fig_training_loss",
    "fig_trajectories",
    "fig_convergence",
    "fig_interchange",
    "fig_rollout_explorer",
    "fig_dt_data_control",
    "live_rollout_app",
]

def _go():
    import plotly.graph_objects as go

    return go


def _f32(a) -> np.ndarray:
    """A path for drawing, in float32: plotly stores arrays as binary, and 7 digits are plenty for a
    line on a screen (the numbers behind the figures keep float64).  Halves a page's figure data."""
    return np.asarray(a, dtype=np.float32)


def _exact_trace(t_final: float, rho0: float = RHO0, g: float = G_DEFAULT, component: int = 0, n: int = 1000, width: float = 3):
    """The exact solution on [0, t_final] (ρ, or v with ``component=1``), dotted in the colour of "exact"."""
    go = _go()
    t = np.linspace(0.0, t_final, n + 1)
    x = exact_solution(t, rho0, g)
    return go.Scatter(x=_f32(t), y=_f32(x[:, component]), name="exact", mode="lines",
                      line=dict(color=SCHEME_COLORS["exact"], width=width, dash="dot"))


def _exact_traces(cfg: PendulumConfig, component: int = 0, n: int = 1000):
    return _exact_trace(cfg.T_data, cfg.rho0, cfg.g, component, n)


def fig_exact_motion(t_final: float = 10.0, rho0: float = RHO0, g: float = G_DEFAULT, n_points: int = 2001):
    """ρ(t) and v(t) of the exact solution over [0, t_final]."""
    go = _go()
    t = np.linspace(0.0, t_final, n_points)
    x = exact_solution(t, rho0, g)
    fig = go.Figure([go.Scatter(x=t, y=x[:, i], name=nm, mode="lines", line=dict(color=SERIES_COLORS[i]))
                     for i, nm in enumerate(("ρ(t)", "v(t)"))])
    fig.update_layout(title="The exact motion (unit length, g = 9.81 m/s²)", xaxis_title="t (s)",
                      yaxis_title="ρ (rad), v (rad/s)", template="plotly_white", height=360)
    return fig


def fig_against_exact(report: Mapping, title: str = ""):
    """ρ(t) of one rollout on the true rate (:func:`cnet_lib.pendulum.true_rate_rollout`) over the exact ρ(t)."""
    go = _go()
    s = report["scheme"]
    fig = go.Figure([
        _exact_trace(report["t_final"], width=2),
        go.Scatter(x=report["t"], y=report["x"][:, 0], name=f"{scheme_label(s)}, Δt = {report['dt']:g}", mode="lines",
                   line=dict(color=scheme_color(s))),
    ])
    fig.update_layout(title=title or f"ρ(t): {scheme_label(s)} against the exact solution", xaxis_title="t (s)", yaxis_title="ρ (rad)",
                      template="plotly_white", height=380)
    return fig


def fig_scheme_explorer(rollouts: Sequence[Mapping], active_dt: Optional[float] = None, clip: float = 20.0):
    """A menu for the scheme and a slider for Δt over precomputed rollouts on the true rate
    (:func:`cnet_lib.pendulum.true_rate_rollouts`), over the exact ρ(t); the legend gives E(t_final)
    on a second line (a narrow legend leaves the plot its width)."""
    go = _go()
    schemes = list(dict.fromkeys(r["scheme"] for r in rollouts))
    dts = list(dict.fromkeys(r["dt"] for r in rollouts))
    t_final = rollouts[0]["t_final"]
    frames = {}
    for s in schemes:
        frames[scheme_label(s)] = {}
        for dt in dts:
            r = find_row(rollouts, scheme=s, dt=dt)
            frames[scheme_label(s)][f"{dt:g}"] = [go.Scatter(
                x=r["t"], y=np.clip(r["x"][:, 0], -clip, clip), mode="lines", line=dict(color=scheme_color(s)),
                name=f"{scheme_label(s)}, N_t = {r['n_steps']}<br>E({t_final:g}) = {r['error']:.1e}")]
    active = next((i for i, dt in enumerate(dts) if active_dt is not None and math.isclose(dt, active_dt)), 0)
    fig = dropdown_slider_figure(frames, title="ρ(t) for a chosen scheme and Δt", dropdown_prefix="scheme: ",
                                 slider_prefix="Δt = ", xaxis_title="t (s)", yaxis_title="ρ (rad)", active_step=active,
                                 static_traces=[_exact_trace(t_final, width=2)])
    fig.update_yaxes(range=[-4, 4])
    return fig


def fig_training_loss(models: Mapping[str, ODENetFit], max_points: int = 400):
    """The one-step training loss of each ODE-Net against the iteration (log scale), in its scheme's colour."""
    go = _go()
    traces = []
    for a, r in models.items():
        k = max(1, r.n_iters // max_points)
        traces.append(go.Scatter(x=np.arange(r.n_iters)[::k], y=r.losses[::k], name=odenet_label(a), mode="lines",
                                 line=dict(color=scheme_color(a))))
    fig = go.Figure(traces)
    fig.update_layout(title="Training loss", xaxis_title="iteration (full-batch Adam)",
                      yaxis_title="one-step loss / Δt_data²", template="plotly_white", height=420)
    # a log axis over less than a decade got a single tick with an SI prefix ("100μ"), and plotly's digits ("2", "5")
    # did not say which power of ten they stood for: ticks labelled with their values (log_ticks); 420 px: the plot was
    # 122 px tall under the title
    fig.update_yaxes(type="log")
    return log_ticks(fig)


def fig_trajectories(rows: Sequence[Mapping], cfg: PendulumConfig, component: int = 0):
    """Paper Fig. 2: each ODE-Net(A) with its own scheme at Δt_data (solid) and Δt_data/2 (dashed).

    ``rows`` must come from :func:`~cnet_lib.pendulum.rollout_rows` with ``keep_paths=True`` and h ∈ {1/2, 1}.
    One subplot per trained model, stacked (so that it reads on a phone), drawn in its scheme's colour;
    ρ(t) by default (``component=1``: v(t)).  The legend explains the two line styles (in grey: they are not schemes).
    """
    from plotly.subplots import make_subplots

    go = _go()
    trained = list(dict.fromkeys(r["trained"] for r in rows))
    styles = ((1.0, "solid", "Δt = Δt_data"), (0.5, "dash", "Δt = Δt_data/2"))
    # one panel per row: side by side, the panels' titles collide on a phone
    fig = make_subplots(rows=len(trained), cols=1, shared_xaxes=True, vertical_spacing=0.09,
                        subplot_titles=[odenet_label(a) for a in trained])
    for j, a in enumerate(trained, 1):
        fig.add_trace(_exact_traces(cfg, component).update(showlegend=j == 1), row=j, col=1)
        for h, dash, nm in styles:
            r = find_row(rows, trained=a, evaluated=a, h=h)
            fig.add_trace(
                go.Scatter(x=_f32(r["t"]), y=_f32(r["x"][:, component]), name=f"{odenet_label(a)}, {nm}", mode="lines",
                           showlegend=False,
                           line=dict(color=scheme_color(a), dash=dash)),
                row=j, col=1,
            )
    fig.update_xaxes(title_text="t (s)", row=len(trained), col=1)
    for h, dash, nm in styles:  # legend entries for the line styles only
        fig.add_trace(go.Scatter(x=[None], y=[None], name=nm, mode="lines", line=dict(color="#7f7f7f", dash=dash)), row=1, col=1)
    fig.update_yaxes(title_text="ρ(t) (rad)" if component == 0 else "v(t) (rad/s)")
    fig.update_layout(template="plotly_white", height=220 * len(trained) + 160, margin=dict(l=60, r=20, t=60, b=110),
                      legend=LEGEND_BELOW)
    return fig


def fig_convergence(
    integrator_rows: Sequence[Mapping] = (),
    odenet_rows: Sequence[Mapping] = (),
    integrator_slopes: Sequence[Mapping] = (),
    odenet_slopes: Sequence[Mapping] = (),
    dt_data: Optional[float] = None,
    title: str = "",
):
    """Log–log E(Δt): numerical integrators on f (dashed, markers ○) and ODE-Nets with their own scheme (solid).

    Slopes, when given, appear in the legend.  A vertical line marks Δt_data.
    """
    go = _go()
    fig = go.Figure()
    islope = {r["scheme"]: r["slope"] for r in integrator_slopes}
    oslope = {r["trained"]: r["slope"] for r in odenet_slopes}
    for s in dict.fromkeys(r["scheme"] for r in integrator_rows):
        rs = sorted((r for r in integrator_rows if r["scheme"] == s), key=lambda r: r["dt"])
        nm = f"{scheme_label(s)} on f" + (f" (slope {islope[s]:.2f})" if s in islope else "")
        fig.add_trace(go.Scatter(x=[r["dt"] for r in rs], y=[r["error"] for r in rs], name=nm, mode="lines+markers",
                                 line=dict(color=scheme_color(s), dash="dash"), marker=dict(symbol="circle-open", size=8)))
    for a in dict.fromkeys(r["trained"] for r in odenet_rows):
        rs = sorted((r for r in odenet_rows if r["trained"] == a), key=lambda r: r["dt"])
        nm = odenet_label(a) + (f" (slope {oslope[a]:.2f})" if a in oslope and not math.isnan(oslope[a]) else "")
        fig.add_trace(go.Scatter(x=[r["dt"] for r in rs], y=[r["error"] for r in rs], name=nm, mode="lines+markers",
                                 line=dict(color=scheme_color(a), width=3), marker=dict(size=9)))
    if dt_data is not None:
        fig.add_vline(x=dt_data, line=dict(color="#888", dash="dot"), annotation_text="Δt_data", annotation_position="top")
    fig.update_layout(template="plotly_white", height=480, title=title or None, margin=dict(l=60, r=20, t=60, b=40),
                      legend=dict(x=1.02, y=1.0, xanchor="left"))
    return loglog_style(fig, x_title="Δt", y_title="E(Δt) = ‖x_N − x(t_final)‖")


def _two_lines(label: str) -> str:
    """``RK4 (3/8 rule)`` as ``RK4<br>(3/8 rule)``: a tick label that needs no rotation on a phone."""
    return label.replace(" (", "<br>(")


def fig_interchange(rows: Sequence[Mapping], h_values: Optional[Sequence[float]] = None):
    """Paper Fig. 3b: a heat map of log10 E, trained with (rows) × run with (columns), one slider step per Δt.  The
    tick labels are the schemes on two lines (no rotated labels, which on a phone pushed into the slider), the cells'
    numbers two digits, the colour bar thin: on a phone the cells keep readable numbers."""
    go = _go()
    h_values = sorted(dict.fromkeys(r["h"] for r in rows)) if h_values is None else h_values
    trained = list(dict.fromkeys(r["trained"] for r in rows))
    evaluated = list(dict.fromkeys(r["evaluated"] for r in rows))
    frames = {}
    for h in h_values:
        z = [[math.log10(min(max(find_row(rows, trained=a, evaluated=b, h=h)["error"], 1e-300), 1e3)) for b in evaluated]
             for a in trained]
        text = [[f"{find_row(rows, trained=a, evaluated=b, h=h)['error']:.1e}" for b in evaluated] for a in trained]
        frames[f"{h:g}·Δt_data"] = [go.Heatmap(
            z=z, x=[_two_lines(scheme_label(b)) for b in evaluated], y=[_two_lines(scheme_label(a)) for a in trained],
            text=text, texttemplate="%{text}", textfont=dict(size=11), colorscale="Viridis", zmin=-4, zmax=1,
            colorbar=dict(title=dict(text="log₁₀ E", side="right"), thickness=12),
            hovertemplate="trained with %{y}<br>run with %{x}<br>E = %{text}<extra></extra>")]
    active = next((i for i, h in enumerate(h_values) if math.isclose(h, 1.0)), 0)
    # no x-axis title (the slider sits below the tick labels): the title says what the columns are
    fig = slider_figure(frames, title="E at T_data: trained with (rows), run with (columns)", slider_prefix="Δt = ",
                        yaxis_title="trained with", active=active, height=480)
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(tickangle=0, side="bottom")
    return fig


def fig_rollout_explorer(rows: Sequence[Mapping], cfg: PendulumConfig, component: int = 0):
    """Static explorer over precomputed rollouts: a menu for the inference scheme, a slider for Δt.

    Each view shows every trained ODE-Net rolled out with the chosen scheme and Δt, over the
    exact solution; the legend gives each model's final error, on two short lines per model so that
    it stays narrow and clear of the menu.  ``rows`` from :func:`~cnet_lib.pendulum.rollout_rows` with ``keep_paths=True``.
    """
    go = _go()
    evaluated = list(dict.fromkeys(r["evaluated"] for r in rows))
    trained = list(dict.fromkeys(r["trained"] for r in rows))
    hs = sorted(dict.fromkeys(r["h"] for r in rows))
    frames = {}
    for b in evaluated:
        frames[scheme_label(b)] = {}
        for h in hs:
            traces = []
            for a in trained:
                r = find_row(rows, trained=a, evaluated=b, h=h)
                y = np.clip(r["x"][:, component], -50, 50)
                traces.append(go.Scatter(x=_f32(r["t"]), y=_f32(y), mode="lines", line=dict(color=scheme_color(a)),
                                         name=f"{odenet_label(a)}<br>E = {r['error']:.1e}"))
            frames[scheme_label(b)][f"{h:g}·Δt_data = {h * cfg.dt_data:g}"] = traces
    active_step = next((i for i, h in enumerate(hs) if math.isclose(h, 1.0)), 0)
    fig = dropdown_slider_figure(
        frames, title="Trained ODE-Nets rolled out with the chosen scheme and Δt", dropdown_prefix="run with ",
        slider_prefix="Δt = ", xaxis_title="t (s)", yaxis_title="ρ(t) (rad)" if component == 0 else "v(t) (rad/s)",
        static_traces=[_exact_traces(cfg, component)], active_step=active_step,
    )
    fig.update_yaxes(range=[-3.5, 3.5] if component == 0 else [-9, 9])
    return fig


def fig_dt_data_control(control_rows: Sequence[Mapping]):
    """E against Δt_data: swapped models A→B (solid), A→A (dotted), and each scheme on the true f (dashed)."""
    go = _go()
    fig = go.Figure()
    numerical: dict = {}
    for r in control_rows:
        numerical.setdefault(r["trained"], {})[r["dt_data"]] = r["error_numerical_trained"]
        numerical.setdefault(r["evaluated"], {})[r["dt_data"]] = r["error_numerical_evaluated"]
    for s, pts in numerical.items():
        x = sorted(pts)
        fig.add_trace(go.Scatter(x=x, y=[pts[d] for d in x], mode="lines+markers", line=dict(color=scheme_color(s), dash="dash"),
                                 marker=dict(symbol="circle-open", size=9), name=f"{scheme_label(s)} on the true f"))
    pairs = list(dict.fromkeys((r["trained"], r["evaluated"]) for r in control_rows))
    for a, b in pairs:
        rs = sorted((r for r in control_rows if (r["trained"], r["evaluated"]) == (a, b)), key=lambda r: r["dt_data"])
        x = [r["dt_data"] for r in rs]
        fig.add_trace(go.Scatter(x=x, y=[r["error_swapped"] for r in rs], mode="lines+markers", line=dict(color=scheme_color(b), width=3),
                                 marker=dict(size=10), name=f"{odenet_label(a)} run with {scheme_label(b)}"))
        fig.add_trace(go.Scatter(x=x, y=[r["error_own"] for r in rs], mode="lines+markers", line=dict(color=scheme_color(a), dash="dot"),
                                 marker=dict(symbol="diamond"), name=f"{odenet_label(a)} run with {scheme_label(a)}"))
    fig.update_layout(template="plotly_white", height=560, margin=dict(l=60, r=20, t=40, b=200), legend=LEGEND_BELOW)
    return loglog_style(fig, x_title="Δt_data (= the rollout's Δt)", y_title="E at t = T_data")


def live_rollout_app(models: Mapping[str, ODENetFit], cfg: PendulumConfig, static_fallback_fig,
                     h_choices: Optional[Sequence[float]] = None, rows: Optional[Sequence[Mapping]] = None):
    """A live app (Jupyter/Colab): pick Δt, the inference scheme and the trained model; it rolls out G.

    With ``rows`` (:func:`cnet_lib.pendulum.rollout_rows` with ``keep_paths=True``, as the chapter computes
    them) a rollout they hold is drawn from them at once (its path thinned, its error E from the whole
    path); any other is rolled out on the spot (at Δt = Δt_data/8 that is 8,000 steps: seconds on a CPU).
    ``h_choices`` defaults to the Δt/Δt_data of ``rows``, else 1/8 to 8.  The static book shows
    ``static_fallback_fig`` in its place (see :func:`cnet_lib.draw.widgets.live_app`).
    """
    go = _go()
    if h_choices is None:
        h_choices = sorted({float(r["h"]) for r in rows}) if rows else (0.125, 0.25, 0.5, 1, 2, 4, 8)
    controls = {
        "h": Steps([(f"{h:g}·Δt_data", h) for h in h_choices], 1 if 1 in h_choices else h_choices[0], "Δt"),
        "scheme": Choice([(scheme_label(s), s) for s in cfg.eval_schemes], cfg.eval_schemes[0], "run with"),
        "trained": Choice([(odenet_label(a), a) for a in models], next(iter(models)), "model"),
    }
    x0 = torch.tensor(exact_solution(0.0, cfg.rho0, cfg.g), dtype=torch.float64)

    def render(h, scheme, trained):
        dt = h * models[trained].dt_data
        N = int(math.ceil(cfg.T_data / dt - 1e-9))
        row = find_row(rows, trained=trained, evaluated=scheme, h=float(h), default=None) if rows else None
        if row is not None and "x" in row:
            t, path, err, how = np.asarray(row["t"]), np.asarray(row["x"]), float(row["error"]), " (precomputed)"
        else:
            with torch_threads(1):
                path = rollout(models[trained].model, x0, scheme, dt, N).numpy()
            t = dt * np.arange(N + 1)
            err, how = float(np.linalg.norm(path[-1] - exact_solution(t[-1], cfg.rho0, cfg.g))), ""
        fig = go.Figure([_exact_traces(cfg)])
        fig.add_trace(go.Scatter(x=t, y=np.clip(path[:, 0], -50, 50), mode="lines", line=dict(color=scheme_color(scheme)),
                                 name=f"{odenet_label(trained)} run with {scheme_label(scheme)}"))
        fig.update_layout(template="plotly_white", height=380, title=f"Δt = {dt:g}, N_t = {N}: E(t = {cfg.T_data:g}) = "
                          f"{err:.2e}{how}", xaxis_title="t (s)", yaxis_title="ρ(t) (rad)", yaxis_range=[-3.5, 3.5])
        return fig

    return live_app(controls, render, static_fallback_fig, title="Roll out a trained ODE-Net")
