"""The chapter *ContinuousNet* shown: the tables and sentences of its study (:mod:`.study`), its figures (the bases,
θ(t) of a trained block in three bases, where the stages of several graphs read θ(t)), and :func:`facts`, the numbers
its prose quotes.

A ``*_table`` function returns a table, a ``word_*`` function sentences, both a
:class:`~cnet_lib.runtime.rich_text.Rich` (plain text when printed, a table or paragraphs that wrap to the page when
displayed); the figures are plotly figures drawn from precomputed values, so their sliders work in the static book.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import plotly.graph_objects as go

from ...images.runs.theta_record import theta_curve
from ...core.bases import basis_names, make_basis
from ...draw.plotting import book_layout, line, line_styles, slider_figure
from ...runtime.progress import duration
from ...runtime.rich_text import (Rich, SERIES_COLORS, basis_label, format_table, gathered_facts, join_rich,
                                  minus_sign, paragraphs, sci)
from ..runner import ran_on
from .study import stage_rows

__all__ = ["change_from_initial_table", "word_resnet_manifestation", "manifestation_reads_table", "stage_table",
           "feature_shapes_table", "bn_statistics_table", "skip_gains_table", "fig_basis_functions", "fig_theta_bases",
           "fig_manifestations", "facts"]


# --------------------------------------------------------------------------- tables and sentences
def change_from_initial_table(rows: Sequence[dict]) -> Rich:
    """The rows of :func:`~.study.change_from_initial`, under a line naming the block and its M."""
    r0 = rows[0]
    head = f"OdeBlock {r0['block']}: M = {r0['n_basis_initial']} at the start, M = {r0['n_basis']} after training"
    return join_rich([head, format_table(rows, [("piece", "piece", "{}"), ("t", "t", "{:.3f}"),
                                                ("‖θ_trained(t) − θ_initial(t)‖ / ‖θ_initial(t)‖", "relative_change",
                                                 "{:.3f}")], left=0)])


def _is_euler_nt_m(result: Mapping) -> bool:
    return all(s == "euler" and n == m for (s, n), m in zip(result["manifestation"], result["units_per_stage"]))


def word_resnet_manifestation(result: Mapping, label: str = "the model") -> Rich:
    """The report of :func:`~.study.resnet_manifestation`: the model's graph, its ResNet, whether they agree bit for
    bit and, when the model's own graph is another one, how much the logits and predicted classes move between the
    two graphs."""
    n = result["n_images"]
    lines = [f"{label}: own graph (scheme, N_t) per block {[tuple(m) for m in result['manifestation']]}, "
             f"basis {result['basis']}",
             f"its Euler, N_t = M graph as a ResNet: {result['units_per_stage']} residual units per stage, "
             f"step h per stage {result['steps']}",
             f"ResNet against the Euler, N_t = M graph: identical logits on {n} held-out images: {result['identical']} "
             f"(largest difference {sci(result['max_difference'])})"]
    if not _is_euler_nt_m(result):
        lines.append(f"own graph against the Euler, N_t = M graph: largest logit change {result['max_logit_change']:.3f}; "
                     f"same predicted class on {100 * result['same_class']:.1f}% of the {n} images")
    return paragraphs(lines)


def manifestation_reads_table(rows: Sequence[dict]) -> Rich:
    """The rows of :func:`~.study.manifestation_reads`: per manifestation, the evaluations of R per block and the
    pieces θ̂_β read (numbered from 1)."""
    return format_table(rows, [
        ("scheme", "scheme", "{}"), ("N_t", "n_steps", "{}"), ("evaluations of R per block", "units", "{}"),
        ("pieces read", lambda r: ", ".join(str(b + 1) for b in r["pieces"]), "{}")], left=1)


def _reads(pieces) -> str:
    """``θ̂_2`` for one piece read whole, ``0.5 θ̂_1 + 0.5 θ̂_2`` for a combination (β from 0 in, from 1 out)."""
    pieces = [(b, float(w)) for b, w in pieces if w != 0]
    if len(pieces) == 1 and pieces[0][1] == 1.0:
        return f"θ̂_{pieces[0][0] + 1}"
    return " + ".join(f"{w:.3g} θ̂_{b + 1}" for b, w in pieces)


def stage_table(rows: Sequence[dict]) -> Rich:
    """The rows of :func:`~.study.stage_rows`: per stage evaluation, its step, stage, exact time t and the θ̂_β it
    reads (numbered from 1)."""
    return format_table(rows, [("step", "step", "{}"), ("stage", "stage", "{}"), ("t", lambda r: float(r["tau"]), "{:.3f}"),
                               ("reads", lambda r: _reads(r["pieces"]), "{}")], left=0)


def feature_shapes_table(rows: Sequence[dict]) -> Rich:
    """The rows of :func:`~.study.feature_shapes`: each layer's output shape, with each OdeBlock's graph and each
    stitch's ε_stitch."""
    def detail(r):
        if "scheme" in r:
            return f"{r['scheme']}, N_t = {r['n_steps']}"
        return f"ε_stitch = {r['epsilon']}" if "epsilon" in r else ""

    return format_table(rows, [("layer", "layer", "{}"), ("output shape", lambda r: str(tuple(r["shape"])), "{}"),
                               ("graph or scale", detail, "{}")], left=3)


def bn_statistics_table(rows: Sequence[dict]) -> Rich:
    """The rows of :func:`~.study.bn_statistics`: per piece, every running statistic averaged over the channels; a
    last line says how many numbers each statistic holds."""
    stats = [k for k in rows[0] if "." in k]
    columns = [("piece", "piece", "{}")] + [(k.replace(".running_", " running "), k, "{:+.4f}" if k.endswith("mean") else "{:.4f}")
                                            for k in stats]
    note = (f"(averages over the {rows[0]['channels']} channels; each statistic is {len(rows)} pieces × "
            f"{rows[0]['channels']} channels)")
    return format_table(rows, columns, note=note)


def skip_gains_table(rows: Sequence[dict], identity: Optional[Sequence[bool]] = None) -> Rich:
    """The rows of :func:`~.study.skip_gains` (ε s(t) of each OdeBlock on its pieces), after a line saying whether
    each OdeBlock of the untrained model returns its input exactly (``identity``, from
    :func:`~.study.blocks_are_identity`), when given."""
    table = format_table(rows, [
        ("OdeBlock", "block", "{}"), ("M", "n_basis", "{}"),
        ("trained ε s(t) on its pieces", lambda r: None if r["gains"] is None else ", ".join(f"{g:+.4f}" for g in r["gains"]),
         "{}")], left=0)
    if identity is None:
        return table
    return join_rich([f"untrained model: each OdeBlock's output equals its input exactly: {list(identity)}", table])


# --------------------------------------------------------------------------- figures
def fig_basis_functions(n_basis: int = 4, title: str = ""):
    """Slider over the three bases: their ``n_basis`` functions φ_β(t) on [0, 1] (the θ(t) whose
    coefficients are θ̂ = e_β), one colour per β."""
    frames = {}
    for basis in basis_names():
        traces = []
        for beta in range(n_basis):
            unit = [1.0 if j == beta else 0.0 for j in range(n_basis)]
            t, phi = theta_curve(unit, basis)
            traces.append(line(t, phi, name=f"φ_{beta + 1}", color=SERIES_COLORS[beta % len(SERIES_COLORS)]))
        frames[basis_label(basis)] = traces
    return slider_figure(frames, slider_prefix="basis: ", title=title or f"The M = {n_basis} functions of each basis",
                         xaxis_title="t (depth time)", yaxis_title="φ_β(t)")


def fig_theta_bases(curves: Mapping[str, Mapping[str, Mapping[str, tuple]]], title: str = ""):
    """Slider over the three bases; each step shows untrained (dashed) and trained (solid) θ(t)
    of the same few weights, one colour and one legend entry per weight (two more entries say
    what solid and dashed mean).  ``curves`` comes from :func:`~.study.theta_by_basis`."""
    frames = {}
    for basis, kinds in curves.items():
        traces = []
        for i, entry in enumerate(kinds["trained"]):
            col = SERIES_COLORS[i % len(SERIES_COLORS)]
            for kind, dash in (("trained", None), ("untrained", "dash")):
                t, v = kinds[kind][entry]
                traces.append(line(t, v, name=f"θ{entry}", color=col, dash=dash, legendgroup=entry,
                                   showlegend=kind == "trained",
                                   hovertemplate=f"{kind} θ{entry}<br>t = %{{x:.3f}}<br>θ = %{{y:.4g}}<extra></extra>"))
        frames[basis_label(basis)] = traces
    return slider_figure(frames, static_traces=line_styles(("trained", None), ("untrained", "dash")),
                         title=title or "θ(t) of four weights of the first OdeBlock, in three bases",
                         slider_prefix="basis: ", xaxis_title="t (depth time)", yaxis_title="θ(t)")


def fig_manifestations(n_basis: int, manifestations: Sequence[tuple[str, int]], basis: str = "piecewise_constant",
                       title: str = ""):
    """Where each manifestation (scheme, N_t) evaluates R on one θ(t): one row per manifestation,
    one marker per stage evaluation at its time t, coloured by the piece β it reads (legend: one
    entry per piece); the piece boundaries of θ(t) are dotted."""
    fig = go.Figure()
    labels = [f"{s}, N_t={n}" for s, n in manifestations]
    for lab, (s, n) in zip(labels, manifestations):
        rows = stage_rows(s, n, n_basis, basis)
        beta = [max(r["pieces"], key=lambda p: p[1])[0] for r in rows]
        fig.add_trace(go.Scatter(
            x=[r["t"] for r in rows], y=[lab] * len(rows), mode="markers", name=lab, showlegend=False,
            marker=dict(size=11, color=[SERIES_COLORS[b % len(SERIES_COLORS)] for b in beta], line=dict(width=1, color="black")),
            customdata=[[r["step"], r["stage"], str(r["pieces"])] for r in rows],
            hovertemplate="t=%{x:.3f}<br>step %{customdata[0]}, stage %{customdata[1]}<br>reads (β, φ_β) %{customdata[2]}"))
    for b in range(n_basis):  # legend only: the colour of each piece
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"θ̂_{b + 1}", hoverinfo="skip",
                                 marker=dict(size=11, color=SERIES_COLORS[b % len(SERIES_COLORS)],
                                             line=dict(width=1, color="black"))))
    for bp in make_basis(basis, n_basis).breakpoints:
        fig.add_vline(x=float(bp), line_dash="dot", line_color="gray")
    book_layout(fig, title or f"Stage evaluations on one θ(t): M = {n_basis}, {basis_label(basis)}", "t (depth time)",
                height=160 + 45 * len(labels))
    fig.update_layout(yaxis=dict(autorange="reversed"), legend_title_text="piece read")
    return fig


# --------------------------------------------------------------------------- the numbers the prose quotes
def _signed(x: float, fmt: str = "{:.2f}") -> str:
    """A number as the prose prints it: a real minus sign."""
    return minus_sign(fmt.format(x))


def _both(values: Mapping[str, Any], fmt: str = "{:,}") -> str:
    """One value when the two models share it (``462,054``), else each with its model (``462,054 (RK4) and ...``)."""
    rk4, euler = values["rk4_refined"], values["euler_fixed"]
    return fmt.format(rk4) if rk4 == euler else f"{fmt.format(rk4)} (RK4) and {fmt.format(euler)} (Euler)"


def _trained_where(prov: Mapping[str, Mapping]) -> str:
    """Where and on what the two models were trained, in one sentence for a margin note."""
    rk4, euler = prov["rk4_refined"], prov["euler_fixed"]
    machine = ran_on({"environment": rk4["environment"]}) if rk4["environment"] else "this machine"
    times = f"in {duration(rk4['train_seconds'])} (RK4) and {duration(euler['train_seconds'])} (Euler)"
    if rk4["shipped"] and euler["shipped"] and rk4["data"]:
        return f"The two models ship with the book: they were trained on {machine}, {times}, on {rk4['data']}."
    return (f"The two models were trained in this session, on {machine}, {times}, on this session's data (training "
            f"seed {rk4['seed']}).")


def _models(numbers: Mapping) -> dict:
    acc = numbers["accuracy"]
    return {"params": _both(numbers["parameters"]), "epochs": _both(numbers["epochs"], "{}"),
            "acc_rk4": f"{100 * acc['rk4_refined']:.1f}%", "acc_euler": f"{100 * acc['euler_fixed']:.1f}%",
            "trained_where": _trained_where(numbers["provenance"])}


def _change(rows: Sequence[Mapping]) -> dict:
    changes = [r["relative_change"] for r in rows]
    return {"change_lo": f"{min(changes):.2f}", "change_hi": f"{max(changes):.2f}"}


def _resnet_euler(result: Mapping) -> dict:
    same = ("the same logits, bit for bit" if result["identical"]
            else f"logits that differ by up to {sci(result['max_difference'])}")
    return {"n_images": f"{result['n_images']:,}", "euler_agreement": same}


def _resnet_rk4(result: Mapping) -> dict:
    return {"rk4_logit_change": f"{result['max_logit_change']:.2f}",
            "rk4_same_class": f"{100 * result['same_class']:.1f}%"}


_ORDINALS = ("first", "second", "third", "fourth", "fifth")


def _gains(rows: Sequence[Mapping]) -> dict:
    """Each block's range of ε s(t) (``gains_1``: ``"−1.63 to −1.52"``) and all of them in one phrase."""
    out, parts = {}, []
    for r in rows:
        gains = r["gains"] or [0.0]
        text = f"{_signed(min(gains))} to {_signed(max(gains))}"
        out[f"gains_{r['block']}"] = text
        parts.append(f"{text} in the {_ORDINALS[r['block'] - 1] if r['block'] <= len(_ORDINALS) else r['block']} block")
    out["gains"] = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
    return out


_FACTS = ((("models",), _models), (("change",), _change), (("resnet_euler",), _resnet_euler),
          (("resnet_rk4",), _resnet_rk4), (("gains",), _gains))
"""What :func:`facts` reads: the keywords each group of numbers needs, and the function that writes them."""


def facts(**results) -> dict:
    """The numbers the chapter's prose states, ``{name: text}``, written as the prose says them (``"462,054"``,
    ``"82.3%"``, ``"−1.63 to −1.52"``), from the results the chapter has just computed, given by keyword: ``models``
    (:func:`~.study.model_numbers`), ``change`` (:func:`~.study.change_from_initial`), ``resnet_euler`` or
    ``resnet_rk4`` (:func:`~.study.resnet_manifestation` of the Euler- or the RK4-trained model), ``gains``
    (:func:`~.study.skip_gains`).  A chapter glues them (``glue_all(continuousnet.facts(gains=rows))``) and its
    prose quotes them."""
    return gathered_facts(_FACTS, results)
