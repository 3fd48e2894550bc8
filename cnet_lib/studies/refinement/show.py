"""The chapter *Refinement training* shown: the runs of a preset and their training histories, the refinement check,
how θ(t) moved epoch by epoch, and what refinement saves in training time (the tables and sentences of :mod:`.study`),
its figures (the training curves, θ(t) after every epoch), and :func:`facts`, the numbers its prose quotes.

A ``*_table`` function returns a table, a ``word_*`` function sentences, both a
:class:`~cnet_lib.runtime.rich_text.Rich`; the figures are plotly figures drawn from precomputed values.  The machine
a number was measured on is said in :func:`facts` (the chapter's margin notes), not in the cells' output.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...images.runs.run_loading import provenance
from ...images.runs.theta_record import theta_curve
from ...core.schemes import get_scheme
from ...draw.plotting import book_layout, line, line_styles, percent, slider_figure
from ...runtime.device import gpu_words
from ...runtime.progress import duration
from ...runtime.rich_text import (Rich, SERIES_COLORS, by_column_table, format_table, gathered_facts, heading,
                                  join_rich, minus_sign, paragraphs, run_color, run_label, scheme_label, sci, uniform)
from ..runner import ran_on
from .study import epoch_seconds, log_spread, schedule_ideal

__all__ = ["configs_table", "histories_table", "word_refinement_check", "change_per_epoch_table", "word_speedup",
           "refinement_cost_table", "fig_training_curves", "fig_theta_refinement", "facts"]


# --------------------------------------------------------------------------- the runs and their training
def configs_table(configs: Mapping[str, Any]) -> Rich:
    """The runs of a preset (``{run name: TrainConfig}``, e.g. :func:`cnet_lib.images.image_runs`), one
    column per run: data, width, scheme, the N_t = M schedule and the optimiser."""
    return by_column_table({run_label(name): {
        "data set": cfg.dataset,
        "training images": cfg.n_train or "all",
        "channels": list(cfg.channels),
        "scheme": cfg.scheme,
        "N_t = M": f"{cfg.n_steps or cfg.n_basis} -> {cfg.final_n_steps()}",
        "refined after epochs": ", ".join(map(str, cfg.refine_at)) or "never",
        "epochs": cfg.epochs,
        "SGD learning rate": f"{cfg.lr:g} ({cfg.lr_schedule})",
        "batch": cfg.batch_size,
    } for name, cfg in configs.items()})


def _refined_column(rows: Sequence[Mapping]) -> list:
    """A last column "note" saying "refined before this epoch" where a row says so (none without one)."""
    if not any(r.get("refined") for r in rows):
        return []
    return [("note", lambda r: "refined before this epoch" if r.get("refined") else "", "{}")]


def _seconds(s: float) -> str:
    """``"2943.2 s (49.1 min)"``; seconds alone under two minutes."""
    return f"{s:.1f} s" + (f" ({s / 60:.1f} min)" if s >= 120 else "")


def histories_table(runs: Mapping[str, Any]) -> Rich:
    """Every run's training history (``{run name: StudyRun}``): one line per epoch (N_t and M of the first block,
    parameters, learning rate, training loss, held-out accuracy, seconds of training), then the run's total training
    time (the machine that measured it is :func:`facts`' ``trained_on``, for the chapter's margin)."""
    parts = []
    for run in runs.values():
        table = format_table(run.history, [
            ("epoch", "epoch", "{}"), ("N_t", lambda h: uniform(h["n_steps"]), "{}"),
            ("M", lambda h: uniform(h["n_basis"]), "{}"), ("params", "n_parameters", "{}"), ("lr", "lr", "{:g}"),
            ("loss", "train_loss", "{:.3f}"), ("held-out acc", "test_acc", "{:.4f}"), ("seconds", "train_seconds", "{:.2f}"),
            *_refined_column(run.history)], left=0)
        total = sum(h["train_seconds"] for h in run.history)
        parts.append(join_rich([heading(run.label), table,
                                f"{len(run.history)} epochs, {_seconds(total)} of training (evaluation excluded)"]))
    return join_rich(parts, sep="\n\n")


# --------------------------------------------------------------------------- what a refinement keeps; θ(t) per epoch
def word_refinement_check(result: Mapping) -> Rich:
    """The report of :func:`~.study.refinement_check`."""
    (m0, m1), (n0, n1), (p0, p1) = result["n_basis"], result["n_steps"], result["n_parameters"]
    return paragraphs([
        f"M: {m0} -> {m1}, N_t: {n0} -> {n1}; parameters: {p0} -> {p1}",
        f"θ(t) of every weight identical at {result['n_times']} times: {result['theta_identical']}",
        f"refined model on the old graph (N_t = {n0}): same logits bit for bit: {result['old_graph_identical']}",
        f"refined model on the new graph (N_t = {n1}): largest logit change {sci(result['new_graph_max_change'], 2)}"])


def change_per_epoch_table(rows: Sequence[dict]) -> Rich:
    """The rows of :func:`~.study.change_per_epoch`: per epoch, M before and after and the largest change of the
    recorded θ(t)."""
    return format_table(rows, [
        ("epoch", "epoch", "{}"), ("M before", "n_basis_before", "{}"), ("M after", "n_basis_after", "{}"),
        ("largest change of θ(t)", "largest_change", "{:.4f}"), *_refined_column(rows)], left=0)


# --------------------------------------------------------------------------- what refinement saves
def _log_sentence(histories: Mapping[str, Sequence[Mapping]]) -> str:
    """How much identical epochs varied in each training log (N_t with at least two epochs)."""
    parts = []
    for label, history in histories.items():
        groups = [f"{k} epochs at N_t = {n} from {lo:.1f} to {hi:.1f} s" for n, (lo, hi, k) in log_spread(history).items()
                  if k >= 2]
        if groups:
            parts.append(f"{label}: " + ", ".join(groups))
    if not parts:
        return ""
    return ("For comparison, the training logs' identical epochs took " + "; ".join(parts) + ". One run's log on a "
            "shared machine is not a fair clock, which is why the steps are timed in turn here.")


def _speedup_verdict(lo: float, hi: float, ideal: float) -> str:
    if hi < ideal:
        return ("it falls short of the ideal, as the parts of a step that do not grow with N_t (stem, "
                "stitches, head, data handling) predict.")
    if lo > ideal:
        return ("it exceeds the ideal, which a step cost a + b·N_t cannot explain: the timing was disturbed, "
                "or a step grows faster than N_t on this machine.")
    return "the ideal lies within the spread of the rounds: no difference from it can be read from this timing."


def word_speedup(timing: Mapping) -> Rich:
    """One sentence, as a paragraph, comparing the measured speed-up ``S`` with the ideal ``S*``: *falls short* when even
    the fastest round's ``S`` is below ``S*``, *exceeds* when even the slowest round's is above it (which a
    cost ``a + bN`` with ``a >= 0`` cannot give: timing noise, or a step growing faster than N_t), and
    *agrees within the spread of the rounds* otherwise."""
    s, (lo, hi), ideal = timing["speedup"], timing["speedup_range"], timing["ideal"]
    head = (f"Measured speed-up {s:.2f}× (single rounds {lo:.2f}–{hi:.2f}×) against the ideal {ideal:.2f}× "
            f"(efficiency {s / ideal:.2f}): ")
    return paragraphs([head + _speedup_verdict(lo, hi, ideal)])


def _timed_where(timing: Mapping) -> str:
    threads = sorted(set((timing.get("threads") or {}).values()))
    if str(timing["device"]).startswith("cuda"):
        return f"this machine's GPU ({timing['device']})"
    return f"this machine's CPU ({'/'.join(map(str, threads))} threads)" if threads else "this machine's CPU"


def _record_sentence(recorded: Mapping) -> str:
    """The run's record beside this machine's timing: its training log's speed-up where it was trained."""
    return (f"Where this model was trained, the median epochs of its training log give a speed-up of "
            f"{recorded['speedup']:.2f}× against the same ideal {recorded['ideal']:.2f}× (efficiency "
            f"{recorded['speedup'] / recorded['ideal']:.2f}).")


def refinement_cost_table(timing: Mapping, histories: Optional[Mapping[str, Sequence[Mapping]]] = None,
                          preset: Optional[str] = None, recorded: Optional[Mapping] = None) -> Rich:
    """The report of :func:`~.study.time_refinement`: the schedule, a table of seconds per step at each N_t (median and
    range over the rounds), the sentence of :func:`word_speedup`; with the run's record (``recorded``,
    :func:`~.study.recorded_timing`), a column of its training log's median epoch at each N_t where it was trained and
    the speed-up they give; with the runs' training logs (``{label: history}``), how much their identical epochs
    varied (:func:`~.study.log_spread`); under the ``smoke`` preset a warning that these timings say nothing about
    refinement at scale."""
    sched = timing["n_steps_per_epoch"]
    beside = recorded if recorded and list(recorded["n_steps_per_epoch"]) == list(sched) else None
    rows = [{"n": n, "median": timing["seconds_per_step"][n], "lo": min(v), "hi": max(v),
             "epochs": sched.count(n), "log": beside["seconds_per_epoch"][n] if beside else None}
            for n, v in timing["per_round"].items()]
    columns = [("N_t", "n", "{}"), ("epochs at this N_t", "epochs", "{}"),
               ("seconds per step here (median)", "median", "{:.4f}"),
               ("fastest round", "lo", "{:.4f}"), ("slowest round", "hi", "{:.4f}")]
    if beside:
        columns.append(("seconds per epoch where it was trained (its log, median)", "log", "{:.2f}"))
    table = format_table(rows, columns, left=0)
    head = (f"{scheme_label(timing['scheme'])} {'-'.join(map(str, timing['channels']))}, N_t per epoch {sched} "
            f"(Σ N_t = {sum(sched)}); {timing['rounds']} rounds of {timing['steps']} step"
            f"{'s' if timing['steps'] != 1 else ''} at each N_t in turn, batch {timing['batch_size']}, on "
            f"{_timed_where(timing)}:")
    notes = [word_speedup(timing), _record_sentence(beside) if beside else "", _log_sentence(histories or {})]
    if preset == "smoke":
        notes.append("(smoke preset: steps of a few milliseconds are dominated by overhead; these ratios say "
                     "nothing about refinement at scale.)")
    return join_rich([head, table, paragraphs([n for n in notes if n])])


# --------------------------------------------------------------------------- figures
def fig_training_curves(runs: Mapping[str, Any], title: str = "Training curves"):
    """Three stacked panels against the epoch (held-out accuracy, training loss, seconds per epoch), one
    colour per run (:func:`run_color`); refinement epochs marked by dotted lines (said in the title);
    the legend below the panels, clear of the title and the panels' titles."""
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=("held-out accuracy", "training loss", "seconds per epoch (training only)"))
    for name, run in runs.items():
        h = run.history
        col = run_color(name)
        ep = [r["epoch"] for r in h]
        nts = [str(r["n_steps"]) for r in h]
        for row, key in ((1, "test_acc"), (2, "train_loss"), (3, "train_seconds")):
            fig.add_trace(go.Scatter(x=ep, y=[percent(r[key]) if row == 1 else r[key] for r in h], name=run.label,
                                     legendgroup=name,
                                     showlegend=row == 1, mode="lines+markers", line=dict(color=col),
                                     customdata=nts, hovertemplate="epoch %{x}<br>%{y:.4g}<br>N_t=%{customdata}"),
                          row=row, col=1)
        for r in h:
            if r["refined"]:
                fig.add_vline(x=r["epoch"] - 0.5, line_dash="dot", line_color=col, row="all", col=1)
    refined = sorted({r["epoch"] for run in runs.values() for r in run.history if r["refined"]})
    note = f" (dotted: refinement before epoch {', '.join(map(str, refined))})" if refined else ""
    book_layout(fig, title + note, height=760)
    fig.update_layout(margin=dict(t=90, b=100), legend=dict(orientation="h", x=0.0, xanchor="left", y=-0.1, yanchor="top"))
    fig.update_xaxes(title_text="epoch", row=3, col=1)
    fig.update_xaxes(dtick=1 if max((len(r.history) for r in runs.values()), default=0) <= 20 else None)
    for row, unit in ((1, "percent correct"), (2, "cross-entropy"), (3, "seconds")):
        fig.update_yaxes(title_text=unit, row=row, col=1)
    return fig


def fig_theta_refinement(snapshots: Sequence[dict], block: int = 0, title: str = ""):
    """Slider over epochs: θ(t) of a few weights (and the skip gain s(t)) after each epoch
    (solid) over the epoch before (dashed); a refinement doubles M and keeps θ(t).  One legend
    entry per weight; two more say what solid and dashed mean."""
    frames = {}
    prev = None
    for snap in snapshots:
        b = snap["blocks"][block]
        traces = []
        for i, (entry, coeffs) in enumerate(b["entries"].items()):
            col = SERIES_COLORS[i % len(SERIES_COLORS)]
            t, v = theta_curve(coeffs, b["basis"])
            traces.append(line(t, v, name=f"θ{entry}", color=col, legendgroup=entry))
            if prev is not None:
                pt, pv = theta_curve(prev["entries"][entry], prev["basis"])
                traces.append(line(pt, pv, name=f"θ{entry}, epoch before", color=col, dash="dash",
                                   legendgroup=entry, showlegend=False, opacity=0.5))
        if b.get("gain") is not None:  # in its own panel: it is an order of magnitude larger than the weights
            t, v = theta_curve(b["gain"], b["basis"])
            traces.append(line(t, v, name="s(t), skip gain (lower panel)", color="black", dash="dot", yaxis="y2"))
        tag = "init" if snap["epoch"] == 0 else f"epoch {snap['epoch']}"
        frames[f"{tag}, M={b['n_basis']}" + (" (refined)" if snap.get("refined") else "")] = traces
        prev = b
    fig = slider_figure(frames, active=len(frames) - 1, slider_prefix="",
                        static_traces=line_styles(("after the epoch", None), ("the epoch before", "dash")),
                        title=title or f"θ(t) of OdeBlock {block + 1} after each epoch",
                        xaxis_title="t (depth time, block from 0 to 1)", yaxis_title="θ(t): four centre taps",
                        height=560)
    # the gain in a panel of its own under the weights: on one axis with them it squashed them into a tenth
    fig.update_layout(yaxis=dict(domain=[0.36, 1.0]), xaxis=dict(anchor="y2"),
                      yaxis2=dict(domain=[0.0, 0.26], anchor="x", title="s(t)", nticks=4))
    return fig


# --------------------------------------------------------------------------- the numbers the prose quotes
def _signed(x: float, fmt: str) -> str:
    """A number as the prose prints it: a real minus sign."""
    return minus_sign(fmt.format(x))


def _machine(env: Mapping) -> str:
    """A record's machine as the prose names it: ``an H100``, ``a 2-core x86_64 CPU``; ``this machine`` without one."""
    if not env:
        return "this machine"
    if str(env.get("device", "")).startswith("cuda") and env.get("device_name"):
        return gpu_words(env["device_name"])
    return ran_on({"environment": env})


def _training(runs: Mapping[str, Any]) -> dict:
    """The two runs' training logs: the RK4 model's median epoch at its first and final N_t, the Euler model's, the
    evaluations of R per block at the final depth, both totals and their ratio, and where they were trained."""
    rk4, euler = runs["rk4_refined"], runs["euler_fixed"]
    a, b = epoch_seconds(rk4.history), epoch_seconds(euler.history)
    first = a["n_steps_per_epoch"][0]
    prov = provenance(rk4)
    stages = {name: get_scheme(run.config.scheme).stages for name, run in runs.items()}
    return {"rk4_first_nt": str(first), "rk4_first": f"{a['median'][first]:.1f}",
            "rk4_final_nt": str(a["final_n_steps"]), "rk4_last": f"{a['median'][a['final_n_steps']]:.1f}",
            "euler_nt": str(b["final_n_steps"]), "euler_epoch": f"{b['median'][b['final_n_steps']]:.1f}",
            "euler_evals": str(stages["euler_fixed"] * b["final_n_steps"]),
            "rk4_evals": str(stages["rk4_refined"] * a["final_n_steps"]),
            "rk4_total": f"{a['total']:.1f}", "euler_total": f"{b['total']:.1f}",
            "rk4_over_euler": f"{a['total'] / b['total']:.1f}", "both_train": duration(a["total"] + b["total"]),
            "trained_on": _machine(prov["environment"]),
            "trained_how": "ship with the book" if prov["shipped"] else "were trained in this session"}


def _check(result: Mapping) -> dict:
    """The refinement check: how many times θ(t) was compared, whether it and the old graph were kept bit for bit, and
    how far the new graph's logits moved."""
    kept = result["theta_identical"] and result["old_graph_identical"]
    return {"check_times": str(result["n_times"]), "check_change": sci(result['new_graph_max_change']),
            "check_kept": "agree bit for bit" if kept else "do not agree bit for bit"}


def _epochs(rows: Sequence[Mapping], history: Sequence[Mapping]) -> dict:
    """How far θ(t) moved in each epoch (:func:`~.study.change_per_epoch` rows) set beside the refinements and the
    learning rate of the run's log: the largest change in an epoch that began with a refinement, the range over the
    other epochs before the learning rate first falls, and a clause on the epochs after it falls."""
    lr = {h["epoch"]: h["lr"] for h in history}
    first_lr = history[0]["lr"]
    decay = next((e for e in sorted(lr) if lr[e] < first_lr), None)
    before = [r for r in rows if decay is None or r["epoch"] < decay]
    refined = [r["largest_change"] for r in before if r["refined"]]
    others = [r["largest_change"] for r in before if not r["refined"]] or [r["largest_change"] for r in before]
    after = [r["largest_change"] for r in rows if decay is not None and r["epoch"] >= decay]
    if after:
        clause = f"once the learning rate falls, from epoch {decay} on, no epoch moves it by more than {max(after):.4f}"
    else:
        clause = "the learning rate never falls in this run"
    return {"refined_change": f"{max(refined):.4f}" if refined else "—", "others_lo": f"{min(others):.4f}",
            "others_hi": f"{max(others):.4f}", "after_decay": clause}


def _recorded(recorded: Mapping) -> dict:
    return {"log_speedup": f"{recorded['speedup']:.2f}", "log_ideal": f"{recorded['ideal']:.2f}",
            "log_machine": _machine(recorded.get("machine") or {})}


def _accuracy_words(lo: float, hi: float, n: int) -> str:
    """What an interval for a difference of accuracies shows, in words."""
    if lo > 0:
        return f"{n:,} images show a gain in accuracy"
    if hi < 0:
        return f"{n:,} images show a cost in accuracy"
    return f"{n:,} images show neither a cost nor a gain in accuracy"


def _whole(whole: Mapping) -> dict:
    d = whole["difference"]
    lo, hi = 100 * d["ci95"][0], 100 * d["ci95"][1]
    return {"whole_channels": "-".join(map(str, whole["channels"])), "whole_scheme": scheme_label(whole["scheme"]),
            "whole_train": f"{whole['n_train']:,}", "whole_epochs": str(whole["epochs"]),
            "whole_schedule": " → ".join(map(str, dict.fromkeys(whole["schedule"]))),
            "whole_final": str(whole["final_n_steps"]),
            "whole_refined_min": f"{whole['seconds']['refined'] / 60:.0f}",
            "whole_fixed_min": f"{whole['seconds']['fixed'] / 60:.0f}",
            "whole_speedup": f"{whole['speedup']:.2f}", "whole_ideal": f"{whole['ideal']:.2f}",
            "whole_acc_refined": f"{100 * whole['accuracy']['refined']:.1f}%",
            "whole_acc_fixed": f"{100 * whole['accuracy']['fixed']:.1f}%", "whole_test": f"{whole['n_test']:,}",
            "whole_diff": _signed(100 * d["diff"], "{:+.1f}"), "whole_lo": _signed(lo, "{:+.1f}"),
            "whole_hi": _signed(hi, "{:+.1f}"), "whole_verdict": _accuracy_words(lo, hi, whole["n_test"]),
            "whole_machine": _machine(whole.get("environment") or {}),
            "whole_date": str(whole.get("created_utc") or "")[:10] or "an unrecorded date"}


def _and(items: Sequence) -> str:
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _paper(paper: Mapping, schedule: Sequence[int]) -> dict:
    """The paper's sentence on training time (``paper``: its minutes, refinement epochs and words) and the schedule
    its timings imply (``schedule``: N_t per epoch)."""
    return {"paper_min_refined": f"{paper['minutes_refined']:,}", "paper_min_fixed": f"{paper['minutes_fixed']:,}",
            "paper_speedup": f"{paper['minutes_fixed'] / paper['minutes_refined']:.2f}",
            "paper_ideal": f"{schedule_ideal(schedule):.2f}", "paper_epochs": str(len(schedule)),
            "paper_refine_at": _and(paper["refine_at"]), "paper_quote": paper["quote"]}


_FACTS = ((("check",), _check), (("runs",), _training), (("epochs", "history"), _epochs), (("recorded",), _recorded), (("whole",), _whole),
          (("paper", "paper_schedule"), _paper))
"""What :func:`facts` reads: the keywords each group of numbers needs, and the function that writes them."""


def facts(**results) -> dict:
    """The numbers the chapter's prose states, ``{name: text}``, written as the prose says them (``"62.6"``, ``"1.39"``,
    ``"1 → 2 → 4 → 8"``, ``"an H100"``), from the results the chapter has just computed, given by keyword: ``check``
    (:func:`~.study.refinement_check`), ``epochs`` with ``history`` (:func:`~.study.change_per_epoch` and the RK4
    run's training log), ``runs``
    (``{run name: StudyRun}``: their training logs and where they were trained), ``recorded``
    (:func:`~.study.recorded_timing`), ``whole`` (:func:`~.study.whole_runs`; left out where there is no record) and
    ``paper`` with ``paper_schedule`` (the paper's sentence on training time and the schedule its timings imply).  A
    chapter glues them (``glue_all(refinement.facts(runs=runs))``) and its prose quotes them.  A keyword given as
    ``None`` (no record of the whole runs, as in an install from a wheel) is left out."""
    return gathered_facts(_FACTS, {k: v for k, v in results.items() if v is not None})
