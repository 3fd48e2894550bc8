"""The manifestation sweeps in tables and sentences: one sweep (:func:`sweep_table`), every model's
(:func:`sweeps_table`) and in brief (:func:`sweep_summary_table`), rows like the paper's Table 1
(:func:`table1_table`), and the verdict (:func:`word_sweeps`).  The numbers are the study's
(:mod:`cnet_lib.images.studies.sweep_measure`, :mod:`cnet_lib.images.studies.sweep_verdict`)."""
from __future__ import annotations

import math
from typing import Mapping, Optional, Sequence

from ..images.studies.graph_rule import KIND_WORDS
from ..images.studies.sweep_verdict import Verdict, worst_loss
from ..runtime.rich_text import Rich, heading, join_rich, paragraphs
from ..runtime.rows import find_row, format_table
from ..runtime.vocabulary import run_label

__all__ = ["sweep_table", "sweeps_table", "sweep_summary_table", "table1_table", "word_sweeps"]


def _points(x: float) -> str:
    """Points to one decimal, with no minus sign on a loss that rounds to zero."""
    return f"{round(x, 1) + 0.0:.1f}"


def word_sweeps(v: Verdict, n_test: Optional[int] = None, preset: Optional[str] = None) -> Rich:
    """Sentences that state what :func:`cnet_lib.images.studies.sweep_verdict.judge_sweeps` found, quoting the
    numbers (``n_test`` held-out images, of ``preset``), as paragraphs; the VERDICT set apart in a notebook."""
    return paragraphs(_sweep_sentences(v, n_test, preset))


def _sweep_sentences(v: Verdict, n_test: Optional[int], preset: Optional[str]) -> list:
    pts = lambda a: 100.0 * a  # noqa: E731
    th = v.thresholds
    s: list[str] = []
    where = f" (preset {preset})" if preset else ""
    if n_test:
        s.append(f"These accuracies{where} are measured on {n_test:,} held-out images: one image is "
                 f"{100.0 / n_test:.2f} points, and the sampling error of an accuracy near 50% is about "
                 f"±{100 * math.sqrt(0.25 / n_test):.1f} points.")
    for name in (v.euler, v.rk4):
        tr, ident = find_row(v.rows[name], kind="trained"), find_row(v.rows[name], kind="identity")
        s.append(f"{run_label(name)}: {pts(tr['accuracy']):.1f}% on its own graph ({tr['scheme']}, N_t = "
                 f"{tr['n_steps']}), {pts(ident['accuracy']):.1f}% with every OdeBlock replaced by the identity: the "
                 f"blocks are worth {v.gaps[name]:.1f} points.")
    if not v.blocks_matter:
        weak = [run_label(n) for n, g in v.gaps.items() if g < th["matter_points"]]
        s.append(f"VERDICT: the blocks do not matter enough ({', '.join(weak)}: removing them costs less than "
                 f"{th['matter_points']:g} points). Whatever the sweep shows, flat curves here would only mean blocks "
                 "that do little; these numbers cannot show manifestation invariance, nor its absence.")
        return s
    for name in (v.euler, v.rk4):
        loss, worst = worst_loss(v.rows[name], "valid", v.basis)
        if worst is not None:
            s.append(f"{run_label(name)} on its valid graphs ({KIND_WORDS['valid']}): worst {worst['scheme']} at "
                     f"N_t = {worst['n_steps']}, {_points(loss)} points below its own graph.")
        else:
            s.append(f"{run_label(name)}: the sweep has no valid graph ({KIND_WORDS['valid']}).")
    cross = {name: worst_loss(v.rows[name], "straddles", v.basis) for name in (v.euler, v.rk4)}
    cross = {name: lw for name, lw in cross.items() if lw[1] is not None}
    if cross:
        s.append("On graphs whose steps cross θ's jumps (no finer discretisation, so never judged): "
                 + "; ".join(f"{run_label(n)} loses {_points(loss)} points at worst ({w['scheme']}, N_t = {w['n_steps']})"
                             for n, (loss, w) in cross.items()) + ".")
    if v.contrast:
        s.append(f"VERDICT: the blocks matter, and the paper's contrast appears: on its valid graphs the Euler-trained "
                 f"model loses {v.drops[v.euler]:.1f} points (≥ {th['lose_points']:g}), the RK4-trained model stays "
                 f"within {v.drops[v.rk4]:.1f} points (< {th['hold_points']:g}).")
    else:
        what = []
        if not v.drops[v.euler] >= th["lose_points"]:
            what.append(f"the Euler-trained model loses only {v.drops[v.euler]:.1f} points on its valid graphs "
                        f"(< {th['lose_points']:g})")
        if not v.drops[v.rk4] < th["hold_points"]:
            what.append(f"the RK4-trained model loses {v.drops[v.rk4]:.1f} points (≥ {th['hold_points']:g})")
        s.append("VERDICT: the blocks matter, but the paper's contrast does not appear at this scale: "
                 + " and ".join(what) + ".")
    return s


def sweep_table(rows: Sequence[dict]) -> Rich:
    """A table of sweep rows (``*``: the trained manifestation)."""
    # the graph (kind, scheme, N_t) and its accuracy first: what a phone shows without a swipe
    return format_table(rows, [
        ("kind", lambda r: r["kind"] + (" *" if r.get("is_trained") else ""), "{}"), ("scheme", "scheme", "{}"),
        ("N_t", "n_steps", "{}"), ("accuracy", "accuracy", "{:.4f}"), ("M", "n_basis", "{}"),
        ("evaluations of R", "units", "{}"), ("params", "n_parameters", "{}"), ("ms/image", "ms_per_image", "{:.3f}")],
        left=2, note="(* = the trained manifestation)", key=("accuracy",))


def table1_table(rows: Sequence[dict]) -> Rich:
    """The rows of :func:`cnet_lib.images.studies.sweep_measure.table1_rows` as a table per model (under its name),
    narrow enough for the page: the graph, its cost, the measured speed-up and the accuracy."""
    graph = {"trained": "trained", "manifestation": "same θ", "compressed": "θ compressed", "identity": "blocks removed"}
    # the graph, its accuracy and what it lost first: what a phone shows without a swipe
    cols = [("graph", lambda r: graph[r["kind"]], "{}"), ("scheme", "scheme", "{}"),
            ("N_t", lambda r: r.get("n_steps") or None, "{}"),
            ("accuracy", lambda r: 100 * r["accuracy"], "{:.1f}%"), ("Δ points", "delta_points", "{:+.1f}"),
            ("speed-up", "speedup", "{:.2f}x"), ("M", lambda r: r.get("n_basis") or None, "{}"),
            ("evaluations of R", "units", "{}"), ("params", "n_parameters", "{}")]
    models = list(dict.fromkeys(r["model"] for r in rows))
    return join_rich([join_rich([heading(m), format_table([r for r in rows if r["model"] == m], cols, left=2,
                                                          key=("accuracy", "Δ points"))])
                      for m in models], sep="\n\n")


# --------------------------------------------------------------------------- sweeps
def sweep_summary_table(sweeps: Mapping[str, Sequence[dict]], grid: Optional[Mapping] = None,
                         n_test: Optional[int] = None) -> Rich:
    """What was swept (``grid``, ``n_test`` held-out images, when given) and, per model, the accuracy on its
    own graph and with every OdeBlock replaced by the identity."""
    rows = []
    for name, sweep in sweeps.items():
        tr, ident = find_row(sweep, kind="trained"), find_row(sweep, kind="identity")
        rows.append({"model": run_label(name), "graph": f"{tr['scheme']}, N_t = {tr['n_steps']}",
                     "accuracy": tr["accuracy"], "identity": ident["accuracy"]})
    table = format_table(rows, [("model", "model", "{}"), ("own graph", "graph", "{}"), ("accuracy", "accuracy", "{:.4f}"),
                                ("blocks removed (identity)", "identity", "{:.4f}")], left=2)
    head = []
    if grid is not None:
        head.append(f"grid: schemes {list(grid['schemes'])}, N_t {list(grid['n_steps'])}, "
                    f"compressed M {list(grid.get('compress', ()))}")
    if n_test is not None:
        head.append(f"{n_test:,} held-out images")
    return join_rich(["; ".join(head), table])


def sweeps_table(sweeps: Mapping[str, Sequence[dict]]) -> Rich:
    """Every model's whole sweep (:func:`sweep_table`), under its label."""
    return join_rich([join_rich([heading(run_label(name)), sweep_table(rows)]) for name, rows in sweeps.items()],
                     sep="\n\n")
