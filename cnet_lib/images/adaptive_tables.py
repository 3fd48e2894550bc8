"""The adaptive-step study's numbers as tables (:class:`~cnet_lib.runtime.rich_text.Rich`: text when printed, an
HTML table when displayed) and as rows for the figures: accuracy, changed predictions and rate evaluations
per tolerance (:func:`adaptive_rows`, :func:`adaptive_table`), and the fixed-step graphs of equal cost
(:func:`equal_cost_rows`, :func:`equal_cost_table`).  Nothing here computes a measurement."""
from __future__ import annotations

from typing import Mapping

from ..runtime.rich_text import Rich
from ..runtime.rows import format_table
from ..runtime.vocabulary import run_label, scheme_label
from .adaptive_steps import decode_predictions, mean_nfe

__all__ = ["adaptive_rows", "adaptive_table", "equal_cost_rows", "equal_cost_table"]


def _own(study: Mapping, run: str) -> dict:
    return next(r for r in study["runs"][run]["rows"] if r["kind"] == "trained")


def adaptive_rows(study: Mapping) -> list:
    """One row per model, pair and tolerance: ``run, pair, tol, accuracy, drop`` (own − adaptive, points),
    ``changed`` (% of images whose predicted class differs from the own graph's), ``nfe`` (rate evaluations
    per image's forward pass, all blocks), ``nfe_blocks`` (per block), ``rejected`` (rejected steps per batch,
    all blocks, mean), ``seconds``; plus one row per model with ``pair = None``: its own graph."""
    out = []
    for run, res in study["runs"].items():
        own = _own(study, run)
        p_own = decode_predictions(own["pred"])
        out.append(dict(run=run, pair=None, tol=None, accuracy=own["accuracy"], drop=0.0, changed=0.0,
                        nfe=float(sum(own["nfe"])), nfe_blocks=[float(v) for v in own["nfe"]], rejected=0.0,
                        seconds=own["seconds"], graph=res["graph"]))
        for r in res["rows"]:
            if r["kind"] != "adaptive":
                continue
            pred = decode_predictions(r["pred"])
            blocks = mean_nfe(r)
            out.append(dict(run=run, pair=r["pair"], tol=r["rtol"], accuracy=r["accuracy"],
                            drop=100 * (own["accuracy"] - r["accuracy"]),
                            changed=100 * (pred != p_own).double().mean().item(), nfe=sum(blocks), nfe_blocks=blocks,
                            rejected=sum(map(sum, r["rejected"])) / len(r["rejected"]), seconds=r["seconds"]))
    return out


def adaptive_table(study: Mapping) -> Rich:
    """:func:`adaptive_rows` as a table."""
    def graph(r):
        if r["pair"] is None:
            return "own: " + ", ".join(f"{scheme_label(s)} N_t = {n}" for s, n in dict.fromkeys(map(tuple, r["graph"])))
        return f"{r['pair']}, tol {r['tol']:g}"

    cols = [("model", lambda r: run_label(r["run"]), "{}"), ("graph", graph, "{}"), ("accuracy", "accuracy", "{:.4f}"),
            ("own − this (points)", "drop", "{:+.2f}"), ("changed (%)", "changed", "{:.1f}"),
            ("NFE per image", "nfe", "{:.1f}"), ("NFE per block", lambda r: " / ".join(f"{v:.1f}" for v in r["nfe_blocks"]), "{}"),
            ("rejected per batch", "rejected", "{:.1f}")]
    g = study["grid"]
    return format_table(adaptive_rows(study), cols, left=2,
                        note=f"{study['n']} test images in batches of {g['batch_size']}; tol = rtol = atol; NFE = rate "
                             "evaluations of a block (R(x, θ(t)) calls), per image's forward pass; changed = predicted "
                             "class differs from the model's own graph")


def equal_cost_rows(study: Mapping) -> list:
    """One row per model and tolerance of the equal-cost pair: ``run, pair, tol``, the adaptive ``accuracy``
    and ``nfe``, the fixed-step ``scheme``, ``n_steps`` (per block), ``fixed_accuracy``, ``fixed_nfe`` and
    ``agree`` (% of images both give the same class)."""
    out = []
    for run, res in study["runs"].items():
        rows = res["rows"]
        for ad in (r for r in rows if r["kind"] == "adaptive"):
            fixed = next((r for r in rows if r["kind"] == "equal_cost" and r["pair"] == ad["pair"]
                          and ad["rtol"] in r["rtols"]), None)
            if fixed is None:
                continue
            agree = (decode_predictions(ad["pred"]) == decode_predictions(fixed["pred"])).double().mean().item()
            out.append(dict(run=run, pair=ad["pair"], tol=ad["rtol"], accuracy=ad["accuracy"], nfe=sum(mean_nfe(ad)),
                            scheme=fixed["scheme"], n_steps=fixed["n_steps"], fixed_accuracy=fixed["accuracy"],
                            fixed_nfe=float(sum(fixed["nfe"])), agree=100 * agree))
    return out


def equal_cost_table(study: Mapping) -> Rich:
    """:func:`equal_cost_rows` as a table."""
    cols = [("model", lambda r: run_label(r["run"]), "{}"), ("adaptive", lambda r: f"{r['pair']}, tol {r['tol']:g}", "{}"),
            ("accuracy", "accuracy", "{:.4f}"), ("NFE", "nfe", "{:.1f}"),
            ("fixed steps", lambda r: f"{scheme_label(r['scheme'])}, N_t = {'/'.join(map(str, r['n_steps']))}", "{}"),
            ("accuracy ", "fixed_accuracy", "{:.4f}"), ("NFE ", "fixed_nfe", "{:.0f}"), ("same class (%)", "agree", "{:.1f}")]
    return format_table(equal_cost_rows(study), cols, left=2,
                        note="fixed steps of equal cost: per block N_t = round(NFE / 4) of RK4-classic, the adaptive "
                             "solve's mean rate evaluations; same class = both graphs predict the same class")
