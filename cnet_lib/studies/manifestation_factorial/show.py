"""The planned study shown as its plan demands: the plan's test first (H_I and H_R, Holm at the plan's family-wise
level, the verdict by the plan's rule), then the exploratory analyses, labelled so; and, while its record does not ship,
one sentence that says the study has not finished (no number is shown).  Formatting only: the numbers are
:func:`cnet_lib.studies.manifestation_factorial.analyse`'s, passed in."""
from __future__ import annotations

from typing import Mapping, Optional

import plotly.graph_objects as go

from ...draw.plotting import book_layout
from ...runtime.rich_text import Rich, format_table, heading, join_rich, minus_sign, p_value, paragraphs

__all__ = ["NOT_FINISHED", "report", "facts", "fig_losses"]

NOT_FINISHED = ("The planned study has not finished: its record does not ship with this copy of the book, so none of "
                "its numbers is shown.")
"""What :func:`report` says without the study's record."""

_HYPOTHESES = {"integrator": "H_I: Euler-trained models lose more than RK4-trained ones",
               "refinement": "H_R: fixed-depth models lose more than refined ones"}
_CELL_WORDS = {"euler_fixed": "Euler, fixed depth", "euler_refined": "Euler, refined",
               "rk4_fixed": "RK4-classic, fixed depth", "rk4_refined": "RK4-classic, refined",
               "midpoint_fixed": "midpoint, fixed depth (exploratory)",
               "euler_fixed_noskip": "Euler, fixed depth, no skip-init (exploratory)"}


_SHORT = {"euler_fixed": "Euler, fixed", "euler_refined": "Euler, refined", "rk4_fixed": "RK4, fixed",
          "rk4_refined": "RK4, refined", "midpoint_fixed": "midpoint*", "euler_fixed_noskip": "Euler, no skip*"}
"""The figure's cell labels, short enough for a phone's plot (* exploratory)."""


def _ci(test: Mapping) -> str:
    return f"[{test['ci'][0]:+.2f}, {test['ci'][1]:+.2f}]"


def _counts(seeds: Mapping[str, int]) -> str:
    """How many models each cell has, in words: "12 models a cell" when they agree."""
    counts = sorted(set(seeds.values()))
    return f"{counts[0]} models a cell" if len(counts) == 1 else "models per cell: " + ", ".join(
        f"{_CELL_WORDS[c]} {n}" for c, n in seeds.items())


def _num(value: float, digits: int = 2) -> str:
    """``value`` to ``digits`` places, never as "-0.00"."""
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def _interval(summary: Mapping, digits: int = 2) -> str:
    return f"{_num(summary['mean'], digits)} [{_num(summary['ci'][0], digits)}, {_num(summary['ci'][1], digits)}]"


def report(record: Optional[Mapping], analysis: Optional[Mapping] = None, post_hoc: Optional[Mapping] = None,
           part: str = "all", primary: tuple = ()) -> Rich:
    """The planned study of ``record`` (its shipped record, or ``None`` before it ships) with ``analysis`` (its
    ``analyse(record)``): the primary test's table, then, under a heading that says they are exploratory, each
    cell's loss and accuracy and the exploratory contrasts, then ``post_hoc`` (its ``post_hoc(record, analysis)``)
    under a heading that says it was chosen after the test; :data:`NOT_FINISHED` alone without a record.  ``part``:
    ``"test"`` for the plan's test alone, ``"rest"`` for what follows it (a chapter may fold it), ``"all"`` both.
    ``primary``: the cells of the plan's test (the study's ``report`` passes them)."""
    if part not in ("all", "test", "rest"):
        raise ValueError(f"part={part!r}: choose 'all', 'test' (the plan's test) or 'rest' (what follows it)")
    if record is None or analysis is None:
        return paragraphs([NOT_FINISHED])
    seeds = {c: len(analysis["cells"][c]["seeds"]) for c in primary}
    test = [heading("The plan's test"), format_table(
        [{"name": _HYPOTHESES[k], **t} for k, t in analysis["primary"].items()],
        [("hypothesis", "name", "{}"), ("verdict", "verdict", "{}"), ("estimate (points)", "estimate", "{:+.2f}"),
         ("95% interval", _ci, "{}"), ("p", lambda r: p_value(r["p"], None), "{}"), ("p, Holm", lambda r: p_value(r["p_holm"], None), "{}")],
        left=2, key=("verdict",), cards=True,
        note="the plan's test: the loss L of every model on the plan's three graphs, a Welch-type t test of each "
             "contrast of the four primary cells' means, the training seed as the unit, Holm over the two"
             + (f"; {_counts(seeds)}" if seeds else ""))]
    if part == "test":
        return join_rich(test)
    ex = analysis["exploratory"]
    n_images = record["models"][0].get("n_images") if record["models"] else None
    cells = format_table(
        [{"cell": _CELL_WORDS[c], "n": s["n"], "loss": _interval(s), "acc": _interval(ex["cell_accuracy"][c], 1)}
         for c, s in ex["cell_loss"].items()],
        [("cell", "cell", "{}"), ("models", "n", "{}"), ("L, mean [95% interval] (points)", "loss", "{}"),
         ("own-graph accuracy (%)", "acc", "{}")], left=1, key=("L, mean [95% interval] (points)",),
        note="each cell's mean over its training seeds, with a t interval"
             + (f"; {n_images:,} held-out images per model" if n_images else ""))
    rows = [{"name": "interaction (EF − ER) − (RF − RR)", **ex["interaction"]},
            {"name": "accuracy: integrator", **ex["accuracy_integrator"]},
            {"name": "accuracy: refinement", **ex["accuracy_refinement"]}]
    rows += [{"name": name, "estimate": t["diff"], "ci": t["ci95"], "p": t["p"]} for name, t in ex.items()
             if " - " in name]
    exploratory = format_table(rows, [("contrast", "name", "{}"), ("estimate", "estimate", "{:+.2f}"),
                                      ("95% interval", _ci, "{}"), ("p (unadjusted)", lambda r: p_value(r["p"], None), "{}")], left=1,
                               note="loss contrasts in points of L; the accuracy contrasts in points of own-graph "
                                    "accuracy (Euler minus RK4, fixed depth minus refined); a - b: a's mean L minus b's")
    parts = [heading("Exploratory analyses (not part of the plan's test; p values unadjusted)"), cells, exploratory]
    if post_hoc is not None:
        worth = post_hoc["blocks_worth"]
        rows = [{"name": f"blocks worth: {_CELL_WORDS[c]}", "estimate": w["mean"], "ci": w["ci"], "p": None}
                for c, w in worth.items()]
        rows += [{"name": f"mean |s(t)|: {_CELL_WORDS[c]}", "estimate": g["mean"], "ci": g["ci"], "p": None}
                 for c, g in post_hoc["skip_gain"].items()]
        rows += [{"name": f"L, Euler − RK4 ({level})", "estimate": t["diff"], "ci": t["ci95"], "p": t["p"]}
                 for level, t in (("refined", post_hoc["euler_minus_rk4_refined"]),
                                  ("fixed depth", post_hoc["euler_minus_rk4_fixed"]))]
        parts += [heading("Post hoc (chosen after the plan's test was computed; p values unadjusted)"),
                  format_table(rows, [("quantity", "name", "{}"), ("estimate", "estimate", "{:+.2f}"),
                                      ("95% interval", _ci, "{}"),
                                      ("p", lambda r: None if r["p"] is None else p_value(r["p"], None), "{}")], left=1,
                               note="blocks worth (points): own-graph accuracy minus the accuracy with every "
                                    "OdeBlock replaced by the identity, mean over the cell's models; mean |s(t)|: how "
                                    "large the skip gains grew, over depth-time and the three OdeBlocks (they start "
                                    "at 0); L in points")]
    return join_rich({"test": test, "rest": parts, "all": test + parts}[part])


def facts(analysis: Mapping, post_hoc: Optional[Mapping] = None, record: Optional[Mapping] = None,
          power: Optional[Mapping[int, float]] = None, primary: tuple = ()) -> dict[str, str]:
    """The study's numbers as the chapter's prose says them (``planned_*``, for :func:`cnet_lib.book.glue_all`): the
    plan's test, each cell's mean loss and models, ``post_hoc``'s numbers, and with ``record`` the design as it ran
    (the models of the ``primary`` cells, training images, epochs, channels, held-out images) and the plan's
    ``power`` by seeds per cell (the study's ``facts`` passes both)."""
    out = {}
    if record is not None:
        models = record["models"]
        recipe = record["recipe"]
        out.update(planned_n_primary=str(sum(m["cell"] in primary for m in models)),
                   planned_n_train=f"{recipe['n_train']:,}", planned_epochs=str(recipe["epochs"]),
                   planned_channels="-".join(str(c) for c in recipe["channels"]),
                   planned_n_images=f"{models[0]['n_images']:,}")
        out.update({f"planned_power_{n}": f"{p:.0%}" for n, p in (power or {}).items()})
    if post_hoc is not None:
        for cell in _CELL_WORDS:  # a cell with fewer than two models has no mean to quote: a dash
            w = post_hoc["blocks_worth"].get(cell)
            out[f"planned_worth_{cell}"] = "—" if w is None else minus_sign(_num(w["mean"], 1))
            g = post_hoc["skip_gain"].get(cell)
            out[f"planned_gain_{cell}"] = "—" if g is None else _num(g["mean"])
        for level in ("refined", "fixed"):
            t = post_hoc[f"euler_minus_rk4_{level}"]
            out[f"planned_ph_{level}"] = minus_sign(f"{t['diff']:+.2f} points")
            out[f"planned_ph_{level}_ci"] = minus_sign(f"[{t['ci95'][0]:+.2f}, {t['ci95'][1]:+.2f}]")
    for key, test in analysis["primary"].items():
        out[f"planned_{key}"] = minus_sign(f"{test['estimate']:+.2f} points")
        out[f"planned_{key}_ci"] = minus_sign(_ci(test))
        out[f"planned_{key}_p"] = p_value(test["p_holm"], None)
        out[f"planned_{key}_verdict"] = test["verdict"]
    loss = analysis["exploratory"]["cell_loss"]
    for cell in _CELL_WORDS:
        summary = loss.get(cell)
        out[f"planned_{cell}"] = "—" if summary is None else minus_sign(_num(summary["mean"]))
        out[f"planned_{cell}_n"] = str(len(analysis["cells"][cell]["seeds"]))
    return out


def fig_losses(analysis: Mapping) -> go.Figure:
    """Every model's loss L (one dot a training seed) in its cell, with the cell's mean and 95% interval."""
    fig = go.Figure()
    names = list(analysis["exploratory"]["cell_loss"])
    for i, cell in enumerate(names):
        seeds, losses = analysis["cells"][cell]["seeds"], analysis["cells"][cell]["loss"]
        summary = analysis["exploratory"]["cell_loss"][cell]
        label = _SHORT[cell]
        fig.add_trace(go.Scatter(x=losses, y=[label] * len(losses), mode="markers",
                                 marker=dict(size=8, opacity=0.6, color="#1f77b4" if i < 4 else "#7f7f7f"),
                                 text=[f"seed {s}" for s in seeds], showlegend=False,
                                 hovertemplate="%{text}: L = %{x:.2f} points<extra></extra>"))
        lo, hi = summary["ci"]
        fig.add_trace(go.Scatter(x=[summary["mean"]], y=[label], mode="markers", showlegend=False,
                                 marker=dict(symbol="line-ns-open", size=22, color="black"),
                                 error_x=dict(type="data", array=[hi - summary["mean"]],
                                              arrayminus=[summary["mean"] - lo], color="black"),
                                 hovertemplate=f"mean {summary['mean']:.2f} [{lo:.2f}, {hi:.2f}]<extra></extra>"))
    book_layout(fig, title="Accuracy lost on the plan's three graphs, one dot a model",
                xaxis_title="L, points lost (* exploratory)", height=120 + 45 * len(names))
    fig.update_yaxes(autorange="reversed", automargin=True)
    fig.add_vline(x=0, line=dict(color="#999999", width=1))
    return fig
