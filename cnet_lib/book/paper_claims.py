"""The seed paper's numbers and sentences, typed once, and the book's measurements beside them.

Queiruga, Erichson, Taylor and Mahoney, *Continuous-in-Depth Neural Networks* (arXiv 2008.02389).  Every number of
the paper that a page of the book quotes is here (:data:`PAPER_TABLE1`, :data:`PAPER_SENTENCES`), with where it
stands in the paper; the pages quote it from here, so a number is typed once.  Words in quotation marks are the
paper's own.  Three tables set the book's models beside the paper, each computed from the book's own models (the
session's runs or their sweeps, so a page shows one number per model):

* :func:`runs_table`: the chapter's trained models themselves, one column each (width, scheme, basis, M, N_t, ε,
  parameters, epochs, held-out accuracy), the table :func:`paper_beside` follows;
* :func:`paper_beside`: the Table 1 rows a chapter corresponds to, beside the chapter's models, with the gap in
  points and why the book is below (schedule, depth, parameters, data, evaluation set), in one sentence;
* :func:`cheaper_graphs_table`: the paper's own compression rows (the *same* trained weights on fewer steps and
  another scheme) beside the same operation on the book's RK4 model, each against its right baseline; the book's
  projection of θ(t) onto fewer pieces is its own addition and is labelled so;
* :func:`invariance_claims_table`: two sentences of the paper about manifestations (the Euler-trained model's sharp
  minimum at its trained depth; the RK4-trained model run with Euler) against the book's models at several N_t;
* :func:`paper_facts`: the numbers of the last two tables that the chapter's prose quotes, as it prints them.

Also here: the seed paper's CIFAR-10 numbers beside the book's (:func:`paper_comparison_table`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from ..images.runs.image_presets import image_runs
from ..images.runs.shipped import SHIPPED, plain_description, read_manifest, shipped_run
from ..studies.refinement.study import schedule_ideal
from ..runtime.rich_text import (Rich, basis_label, by_column_table, find_row, format_table, join_rich, minus_sign,
                                 paragraphs, run_label, seeds_phrase, spread_cell, uniform)
from ..studies.runner import SEEDS_FILE, read_seeds_file, shipped_sweep_file
from ..studies.stats import spread
from .measurements import result

__all__ = ["PAPER_TABLE1", "PAPER_SENTENCES", "PAPER_SCALE", "runs_table", "paper_beside", "cheaper_graphs",
           "cheaper_graphs_table", "invariance_claims", "invariance_claims_table", "paper_facts", "gap_reasons",
           "paper_schedule", "schedule_ideal", "paper_rows", "book_rows", "paper_comparison_table"]


PAPER_SCALE = {"widths": "16-32-64", "units": "32-32-32", "parameters": 3.19e6, "train_images": 50_000,
               "test_images": 10_000, "epochs_command_lines": 120, "epochs_implied": 160}
"""The scale of the paper's CIFAR-10 ContinuousNets (Table 1): widths, N_t = M = 32 in each of the three blocks
(the paper's *units*: steps per block), parameters, CIFAR-10's training and test images.  The paper's text states no
number of epochs: ``epochs_implied`` is what its timings imply (Sec. 5.2: 1,053 minutes at fixed depth at about 394 s
an epoch, about 160 epochs; and "the last 80 epochs" after the refinement at epoch 80), ``epochs_command_lines`` what
the authors' published command lines give (``--epochs 120 --lr_decay_epoch 30 60 90``)."""

PAPER_TABLE1 = (
    {"key": "euler", "model": "Euler-trained (ResNet-like)", "scheme": "euler", "units": "32-32-32",
     "parameters": 3.19e6, "accuracy": 93.84, "min": 93.55, "max": 94.04, "where": "Table 1(a)"},
    {"key": "rk4", "model": "RK4-classic, refined", "scheme": "rk4_classic", "units": "32-32-32",
     "parameters": 3.19e6, "accuracy": 93.57, "min": 93.40, "max": 93.70, "where": "Table 1(a)"},
    {"key": "rk4_best", "model": "RK4-classic, refined: the instance the cheaper graphs come from",
     "scheme": "rk4_classic", "units": "32-32-32", "parameters": 3.19e6, "accuracy": 93.70, "where": "Sec. 5.3.2"},
    {"key": "same_11", "model": "the same weights on fewer steps", "scheme": "rk4_38", "units": "11-11-11",
     "parameters": 3.19e6, "accuracy": 93.44, "where": "Table 1(a)", "baseline": "rk4_best"},
    {"key": "same_6", "model": "the same weights on fewer steps", "scheme": "rk4_38", "units": "6-6-6",
     "parameters": 3.19e6, "accuracy": 92.28, "where": "Table 1(a)", "baseline": "rk4_best"},
)
"""The paper's Table 1(a), CIFAR-10 rows (the CIFAR-100 rows of Table 1(b) are not reproduced here: the book trains no
CIFAR-100 model); ``min`` and ``max`` are the table's "Min/Max" over the authors' repeated trainings.  The two cheaper
graphs keep the identical trained weights ("identical trained weights are inserted from the parent model") and change
only the scheme (RK4-3/8 in both rows) and the steps; they come from the RK4 instance with the highest accuracy,
93.70% (Sec. 5.3.2), so their cost is measured from it."""

PAPER_SENTENCES = {
    "euler_sharp_minimum": {
        "where": "Sec. 5.3.1, on Figure 9",
        "quote": "a sharp minimum at the time-step/depth at which the model was trained \u2026 increasing or decreasing "
                 "the number N_t of layers, even slightly, drastically changes performance",
        "about": "the Euler-trained model run with Euler at other N_t"},
    "rk4_as_euler": {
        "where": "Sec. 5.3.2, on Table 1(a)",
        "quote": "just as accurate when the integrator is interchanged to forward Euler",
        "accuracy": 93.55, "units": "32-32-32",
        "about": "the RK4-trained model run with Euler"},
    "training_time": {
        "where": "Sec. 5.2",
        "quote": "roughly twice as long, as opposed to roughly four times as long",
        "minutes_fixed": 1053, "minutes_refined": 608, "minutes_euler": 295, "seconds_per_epoch_final": 394,
        "refine_at": (20, 40, 60, 70, 80), "final_n_steps": 32,
        "about": "refinement's saving in training time (RK4 at fixed depth 1,053 min, refined 608 min)"},
}
"""Sentences of the paper the book tests, with the paper's numbers where it gives them (\u2026: words left out)."""


def paper_schedule() -> list[int]:
    """N_t of every epoch of the paper's refined CIFAR-10 RK4 model: 1 until its first refinement, doubled at each of
    its refinement epochs (20, 40, 60, 70, 80; Sec. 5.2) up to 32, for the ``epochs_implied`` by its timings."""
    t = PAPER_SENTENCES["training_time"]
    return [2 ** sum(e >= r for r in t["refine_at"]) for e in range(PAPER_SCALE["epochs_implied"])]


def _row(key: str) -> dict:
    return next(r for r in PAPER_TABLE1 if r["key"] == key)


def _data_words(run: Any, n_test: Optional[int]) -> str:
    """What a run trained and was measured on: a shipped model's data as its manifest describes it, else the
    session's data in numbers."""
    if getattr(run, "shipped", False):
        folder = shipped_run(run.config)
        if folder is not None:
            return plain_description(read_manifest(folder).get("data", {}).get("description", ""))
    train = f"{run.config.n_train:,}" if run.config.n_train else "all the"
    held = f"{n_test:,} held-out images" if n_test else "held-out images"
    return f"{train} training images of the session's data folder, measured on {held}"


def gap_reasons(run: Any, n_test: Optional[int] = None) -> str:
    """Why a book model is below the paper, in one clause: its epochs, steps per block and parameters, and its data,
    against the paper's (``run``: a :class:`~cnet_lib.images.runs.run_loading.StudyRun`; ``n_test`` the held-out images
    it was measured on, when known)."""
    cfg = run.config
    steps = "-".join([str(cfg.final_n_steps())] * len(cfg.channels))
    return (f"{cfg.epochs} epochs where the paper's timings imply about {PAPER_SCALE['epochs_implied']} (its text states "
            f"no number; the authors' command lines give {PAPER_SCALE['epochs_command_lines']}), {steps} steps and pieces "
            "per block "
            f"instead of {PAPER_SCALE['units']} (widths {'-'.join(map(str, cfg.channels))}: "
            f"{run.model.n_parameters():,} parameters against {PAPER_SCALE['parameters'] / 1e6:.2f} million), and other "
            f"data: the paper trains on CIFAR-10's {PAPER_SCALE['train_images']:,} training images and measures on its "
            f"{PAPER_SCALE['test_images']:,} test images, these models on {_data_words(run, n_test)}")


def runs_table(runs: Mapping[str, Any]) -> Rich:
    """The trained runs (``{run name: StudyRun}``), one column per run: the model (width, scheme, basis, M, N_t, ε,
    parameters) and its training (epochs, images, final held-out accuracy)."""
    fields = {}
    for run in runs.values():
        cfg, blocks = run.config, run.model.blocks
        fields[run.label] = {
            "channels": list(cfg.channels),
            "scheme": uniform(b.scheme.name for b in blocks),
            "basis": basis_label(blocks[0].basis.name),
            "M (pieces per block)": uniform(b.n_basis for b in blocks),
            "N_t (steps per block)": uniform(b.n_steps for b in blocks),
            "ε": uniform(b.epsilon for b in blocks),
            "parameters": run.model.n_parameters(),
            "epochs": len(run.history),
            "training images": cfg.n_train or "all",
            "held-out accuracy": f"{run.final_accuracy:.3f}",
        }
    return by_column_table(fields)


def paper_beside(runs: Mapping[str, Any], n_test: Optional[int] = None) -> Rich:
    """The paper's Table 1 rows of the two trained models beside ``runs`` (``rk4_refined`` and ``euler_fixed``,
    :class:`~cnet_lib.images.runs.run_loading.StudyRun`: their final accuracy on their own graph, the one number of each
    model), with the gap in points, and why in one sentence (``n_test``: the held-out images, when known)."""
    rows = []
    for run, key in (("euler_fixed", "euler"), ("rk4_refined", "rk4")):
        paper, ours = _row(key), runs[run]
        acc = 100 * ours.final_accuracy
        rows.append({"model": run_label(run), "paper": paper["accuracy"], "ours": acc, "gap": paper["accuracy"] - acc,
                     "units": "-".join([str(ours.config.final_n_steps())] * len(ours.config.channels)),
                     "parameters": ours.model.n_parameters()})
    table = format_table(rows, [("model", "model", "{}"), ("paper (%)", "paper", "{:.2f}"), ("here (%)", "ours", "{:.1f}"),
                                ("below by (points)", "gap", "{:.1f}"), ("here: steps per block", "units", "{}"),
                                ("here: parameters", "parameters", "{:,}")], left=1,
                         note=f"paper: Table 1, {PAPER_SCALE['units']} steps per block, "
                              f"{PAPER_SCALE['parameters'] / 1e6:.2f} million parameters, CIFAR-10's test set")
    return join_rich([table, paragraphs([f"Why the book is lower: {gap_reasons(runs['rk4_refined'], n_test)}."])])


# --------------------------------------------------------------------------- the same weights on fewer steps
def _accuracy(rows: Sequence[dict], scheme: str, n_steps: int) -> Optional[float]:
    r = find_row(rows, kind="manifestation", scheme=scheme, n_steps=n_steps, default=None)
    return None if r is None else r["accuracy"]


def cheaper_graphs(sweeps_by_seed: Mapping[Any, Mapping[str, Sequence[dict]]], run: str = "rk4_refined") -> list[dict]:
    """The paper's compression rows (its baseline: the instance they come from) and, for the book's ``run`` over the
    seeds, the same operation: the *same* weights on fewer steps, with RK4-3/8 and RK4-classic, and then the book's own
    addition, θ(t) projected onto fewer pieces.  Each row: ``source``, ``operation``, ``graph`` (scheme, steps per
    block), ``accuracy`` and ``delta`` (points against its own baseline) as :func:`spread` over the seeds."""
    best = _row("rk4_best")
    out = [{"source": "paper", "operation": "trained (the baseline)", "graph": f"rk4_classic {best['units']}",
            "accuracy": spread([best["accuracy"]]), "delta": None}]
    for key in ("same_11", "same_6"):
        r = _row(key)
        out.append({"source": "paper", "operation": "same weights, fewer steps",
                    "graph": f"{r['scheme'] or ''} {r['units']}".strip(), "accuracy": spread([r["accuracy"]]),
                    "delta": spread([r["accuracy"] - best["accuracy"]])})
    first = next(iter(sweeps_by_seed.values()))[run]
    tr = find_row(first, kind="trained")
    nt, blocks = tr["n_steps"], 3
    per = lambda n: "-".join([str(n)] * blocks)  # noqa: E731

    def ours(operation, graph, pick):
        accs, deltas = [], []
        for sweeps in sweeps_by_seed.values():
            own = find_row(sweeps[run], kind="trained")["accuracy"]
            a = pick(sweeps[run])
            if a is not None:
                accs.append(100 * a)
                deltas.append(100 * (a - own))
        return {"source": "here", "operation": operation, "graph": graph, "accuracy": spread(accs),
                "delta": spread(deltas)} if accs else None

    rows = [ours("trained (the baseline)", f"{tr['scheme']} {per(nt)}",
                 lambda rows: find_row(rows, kind="trained")["accuracy"])]
    rows[0]["delta"] = None
    for n in range(nt - 1, 0, -1):
        for scheme in ("rk4_38", "rk4_classic"):
            rows.append(ours("same weights, fewer steps", f"{scheme} {per(n)}",
                             lambda rows, s=scheme, n=n: _accuracy(rows, s, n)))
    for m in sorted({r["n_basis"] for r in first if r["kind"] == "compressed"}, reverse=True):
        rows.append(ours("θ(t) projected onto fewer pieces (this book's addition)", f"rk4_classic {per(m)}, M = {m}",
                         lambda rows, m=m: next((r["accuracy"] for r in rows if r["kind"] == "compressed"
                                                 and r["n_basis"] == m and r["scheme"] == "rk4_classic"), None)))
    return out + [r for r in rows if r is not None]


def cheaper_graphs_table(sweeps_by_seed: Mapping[Any, Mapping[str, Sequence[dict]]], run: str = "rk4_refined") -> Rich:
    """:func:`cheaper_graphs` as a table."""
    rows = cheaper_graphs(sweeps_by_seed, run)
    # the numbers before the words: on a phone the table scrolls sideways, and the first columns are what fits
    return format_table(rows, [("", "source", "{}"), ("graph", "graph", "{}"),
                               ("accuracy (%)", lambda r: spread_cell(r["accuracy"], "{:.2f}" if r["source"] == "paper"
                                                                      else "{:.1f}"), "{}"),
                               ("Δ points", lambda r: r["delta"] and spread_cell(r["delta"], "{:+.2f}" if r["source"] ==
                                                                                 "paper" else "{:+.1f}"), "{}"),
                               ("operation", "operation", "{}")],
                        left=2, key=("accuracy (%)", "Δ points"), note=f"graph: the scheme and N_t of each block (the paper's units); paper: Table 1, "
                                     f"whose cheaper graphs come from its best RK4 instance ({_row('rk4_best')['accuracy']:.2f}%), "
                                     f"so their Δ is against it; here: {run_label(run)}, "
                                     f"{seeds_phrase(list(sweeps_by_seed)).replace(' per method', '')}, mean [min, max]; "
                                     "each Δ against that model's own graph")


# --------------------------------------------------------------------------- two sentences of the paper
def invariance_claims(sweeps_by_seed: Mapping[Any, Mapping[str, Sequence[dict]]], *, euler: str = "euler_fixed",
                      rk4: str = "rk4_refined") -> list[dict]:
    """The paper's two sentences of :data:`PAPER_SENTENCES` (``euler_sharp_minimum``, ``rk4_as_euler``) against the
    book's models run with Euler at every N_t of their sweeps: per N_t, the loss (points) below each model's own
    graph as :func:`spread` over the seeds."""
    first = next(iter(sweeps_by_seed.values()))
    out = []
    for run, claim in ((euler, "euler_sharp_minimum"), (rk4, "rk4_as_euler")):
        if run not in first:
            continue
        steps = sorted(r["n_steps"] for r in first[run] if r["kind"] == "manifestation" and r["scheme"] == "euler"
                       and isinstance(r["n_steps"], int) and not r.get("is_trained"))
        nt = find_row(first[run], kind="trained")["n_steps"]
        for n in steps:
            losses = []
            for sweeps in sweeps_by_seed.values():
                own = find_row(sweeps[run], kind="trained")["accuracy"]
                a = _accuracy(sweeps[run], "euler", n)
                if a is not None:
                    losses.append(100 * (own - a))
            out.append({"claim": claim, "run": run, "n_steps": n, "trained_n_steps": nt, "loss": spread(losses)})
    return out


def invariance_claims_table(sweeps_by_seed: Mapping[Any, Mapping[str, Sequence[dict]]], **runs) -> Rich:
    """:func:`invariance_claims` as a table, with the paper's sentence above each model's rows."""
    rows = invariance_claims(sweeps_by_seed, **runs)
    parts = []
    for claim in ("euler_sharp_minimum", "rk4_as_euler"):
        mine = [r for r in rows if r["claim"] == claim]
        if not mine:
            continue
        s = PAPER_SENTENCES[claim]
        number = f" ({s['accuracy']:.2f}% at {s['units']})" if "accuracy" in s else ""
        head = f"The paper ({s['where']}), on {s['about']}: \u201c{s['quote']}\u201d{number}."
        table = format_table(mine, [("model", lambda r: run_label(r["run"]), "{}"),
                                    ("run with", lambda r: f"euler, N_t = {r['n_steps']}", "{}"),
                                    ("trained N_t", "trained_n_steps", "{}"),
                                    ("points lost", lambda r: spread_cell(r["loss"], "{:.2f}"), "{}")], left=2)
        parts.append(join_rich([paragraphs([head]), table]))
    note = f"{seeds_phrase(list(sweeps_by_seed))}: mean [min, max] of the points lost below each model's own graph"
    return join_rich(parts + [paragraphs([note])], sep="\n\n")


def _text(v: Optional[float], fmt: str) -> str:
    """A number as the prose prints it (a real minus sign), a dash for one not measured."""
    return "—" if v is None else minus_sign(fmt.format(v))


def paper_facts(sweeps_by_seed: Mapping[Any, Mapping[str, Sequence[dict]]], epochs: Optional[int] = None) -> dict:
    """``{name: text}``: the paper's numbers and the book's of :func:`cheaper_graphs` and :func:`invariance_claims`
    that the chapter *Manifestation invariance* quotes beside those tables (means over the seeds; a dash for a graph
    the sweeps do not have), with the trained N_t they are counted from and ``epochs``, the book's models' training
    epochs (for the comparison with the paper's)."""
    first = next(iter(sweeps_by_seed.values()))
    tr = find_row(first["rk4_refined"], kind="trained")
    nt = tr["n_steps"]
    per = lambda n: "-".join([str(n)] * 3)  # noqa: E731
    cheap = {r["graph"]: r for r in cheaper_graphs(sweeps_by_seed) if r["source"] == "here"}
    loss = lambda graph: -cheap[graph]["delta"]["mean"] if graph in cheap else None  # noqa: E731
    proj = cheap.get(f"rk4_classic {per(2)}, M = 2")
    comp2 = [r for r in first["rk4_refined"] if r["kind"] == "compressed" and r["n_basis"] == 2
             and r["scheme"] == "rk4_classic"]
    euler2 = [r for r in first.get("euler_fixed", []) if r["kind"] == "compressed" and r["n_basis"] == 2
              and r["scheme"] == "rk4_classic"]
    claims = {(r["run"], r["n_steps"]): r["loss"]["mean"] for r in invariance_claims(sweeps_by_seed)}
    best, p11, p6 = _row("rk4_best"), _row("same_11"), _row("same_6")
    words = {1: "one", 2: "two", 3: "three", 4: "four", 8: "eight", 16: "sixteen", 32: "thirty-two"}
    paper_units = int(PAPER_SCALE["units"].split("-")[0])
    return {
        "paper_best": f"{best['accuracy']:.2f}", "paper_same11_loss": f"{best['accuracy'] - p11['accuracy']:.2f}",
        "paper_same6_loss": f"{best['accuracy'] - p6['accuracy']:.2f}",
        "paper_as_euler": f"{PAPER_SENTENCES['rk4_as_euler']['accuracy']:.2f}",
        "paper_units": str(paper_units), "paper_epochs_lines": str(PAPER_SCALE["epochs_command_lines"]),
        "paper_epochs_implied": str(PAPER_SCALE["epochs_implied"]),
        "epochs": "—" if epochs is None else str(epochs), "nt": str(nt), "nt_word": words.get(nt, str(nt)),
        "nt_minus1": str(nt - 1), "nt_minus1_word": words.get(nt - 1, str(nt - 1)), "nt_minus2": str(nt - 2),
        "nt_minus2_word": words.get(nt - 2, str(nt - 2)),
        "nt_times2": str(2 * nt), "nt_times4": str(4 * nt),
        "step_ratio": words.get(paper_units // nt, f"{paper_units / nt:g}"),
        "same_minus1_38": _text(loss(f"rk4_38 {per(nt - 1)}"), "{:.1f}"),
        "same_minus2_38": _text(loss(f"rk4_38 {per(nt - 2)}"), "{:.1f}"),
        "same_minus2_c": _text(loss(f"rk4_classic {per(nt - 2)}"), "{:.1f}"),
        "same1_38": _text(loss(f"rk4_38 {per(1)}"), "{:.1f}"),
        "proj2_acc": _text(proj and proj["accuracy"]["mean"], "{:.1f}"),
        "proj2_delta": _text(proj and proj["delta"]["mean"], "{:+.1f}"),
        "proj2_params": _text(comp2[0]["n_parameters"] if comp2 else None, "{:,}"),
        "params": _text(tr.get("n_parameters"), "{:,}"),
        "euler_proj2_acc": _text(100 * euler2[0]["accuracy"] if euler2 else None, "{:.1f}"),
        "eu_minus1": _text(claims.get(("euler_fixed", nt - 1)), "{:.1f}"),
        "eu_minus2": _text(claims.get(("euler_fixed", nt - 2)), "{:.1f}"),
        "eu_times2": _text(claims.get(("euler_fixed", 2 * nt)), "{:.2f}"),
        "eu_times4": _text(claims.get(("euler_fixed", 4 * nt)), "{:.2f}"),
        "rke_nt": _text(claims.get(("rk4_refined", nt)), "{:.2f}"),
        "rke_times2": _text(claims.get(("rk4_refined", 2 * nt)), "{:.2f}"),
        "rke_times4": _text(claims.get(("rk4_refined", 4 * nt)), "{:.2f}"),
    }


# The seed paper's CIFAR-10 numbers beside the book's: :func:`paper_comparison_table`, which the introduction and
# *Manifestation invariance* show (``{measured-table} paper_comparison`` on a page; ``book.paper_comparison_table()``
# in a chapter).
#
# The paper's rows are quoted from its Table 1 (:data:`cnet_lib.book.paper_claims.PAPER_TABLE1`: the one place they
# are typed, with what they were measured on); the book's rows are read from what measured them: the shipped models' sweeps (parameters, the
# trained and the compressed graphs) and manifests (epochs, training images), the ``gpu`` preset's three training
# seeds (``seeds.json``), and the probe toward the paper's accuracy (``benchmarks/results/gpu_recipe-h200-e40.json``).
# What a reader must not miss is said in the table's note: the book's accuracies are measured on images held out
# of CIFAR-10's *training* set (the offline copy the models were trained on has no test split), the paper's on
# CIFAR-10's test set.

def paper_rows() -> list:
    """The paper's rows, as the table shows them (:data:`cnet_lib.book.paper_claims.PAPER_TABLE1`, typed there once):
    its two trained models and the identical trained weights on fewer steps."""
    rows = []
    for r in PAPER_TABLE1:
        if r["key"] == "rk4_best":
            continue
        graph = f"{r['scheme'] or ''} {r['units']}".strip()
        model = {"euler": "Euler (ResNet-like)", "rk4": "RK4-classic, refined"}.get(
            r["key"], f"RK4-classic, refined: same weights, {r['units']}")
        rows.append({"source": "paper, Table 1", "model": model, "graph": graph, "widths": PAPER_SCALE["widths"],
                     "parameters": r["parameters"], "accuracy": r["accuracy"], "epochs": "—",
                     "evaluated": f"test ({PAPER_SCALE['test_images']:,})"})
    return rows


def _sweep_rows(preset: str, run: str) -> list:
    payload = shipped_sweep_file(preset, run)
    return payload["rows"] if payload else []


def _graph(row: dict) -> str:
    return f"{row['scheme']} {'-'.join([str(row['n_steps'])] * 3)}"


def _run_row(preset: str, run: str, label: str, seeds: Optional[dict]) -> dict:
    m = read_manifest(SHIPPED / f"{preset}-{run}")
    sweep = shipped_sweep_file(preset, run)
    trained = find_row(sweep["rows"], kind="trained")
    acc, spread = f"{100 * m['final_test_acc']:.1f}", None
    if seeds:
        accs = [100 * s["runs"][run]["final_test_acc"] for s in seeds.values()]
        spread = f"{sum(accs) / len(accs):.1f} [{min(accs):.1f}, {max(accs):.1f}]"
    return {"source": f"book, {preset}", "model": label, "graph": _graph(trained),
            "widths": "-".join(map(str, image_runs(preset)[run].channels)), "parameters": trained["n_parameters"],
            "accuracy": acc, "seeds": spread, "epochs": len(m["history"]), "evaluated": f"held-out ({sweep['n_test']:,})"}


def book_rows() -> list:
    """The book's rows: each shipped preset's two models (the ``gpu`` preset with its three seeds), the ``gpu`` RK4
    model's best compressed graph, and the wider models of the probe toward the paper's accuracy."""
    out = []
    for preset in ("cpu", "gpu"):
        payload = read_seeds_file(SHIPPED / f"{preset}-rk4_refined" / SEEDS_FILE)
        seeds = {s["seed"]: s for s in payload["seeds"]} if payload else None
        for run, label in (("euler_fixed", "Euler (ResNet-like)"), ("rk4_refined", "RK4-classic, refined")):
            out.append(_run_row(preset, run, label, seeds))
    best = max((r for r in _sweep_rows("gpu", "rk4_refined") if r["kind"] == "compressed"), key=lambda r: r["accuracy"])
    out.append({**out[-1], "model": f"RK4-classic, θ(t) projected to M = {best['n_basis']} (the book's addition)", "graph": _graph(best),
                "parameters": best["n_parameters"], "accuracy": f"{100 * best['accuracy']:.1f}", "seeds": None})
    probe = result("gpu_recipe-h200-e40.json")
    for trial, label in (("euler_fixed-64-e40", "Euler (ResNet-like)"), ("rk4_refined-64-e40", "RK4-classic, refined")):
        t, c = probe["trials"][trial], probe["trials"][trial]["config"]
        out.append({"source": "book, probe", "model": label, "graph": f"{c['scheme']} 4-4-4",
                    "widths": "-".join(map(str, c["channels"])), "parameters": t["epochs"][-1]["n_parameters"],
                    "accuracy": f"{100 * t['final_held_out_accuracy']:.1f}", "epochs": c["epochs"],
                    "evaluated": "held-out (5,000)"})
    return out


def _unbroken(text: str) -> str:
    """``16-32-64`` with non-breaking hyphens: a table cell never breaks a list of widths or steps in two."""
    return text.replace("-", "\u2011")


def paper_comparison_table(root: Optional[Path] = None) -> Rich:
    """The paper's Table 1 beside the book's models, with what each accuracy was measured on."""
    def params(r):
        p = r["parameters"]
        return "—" if p is None else f"{p / 1e6:.2f}M" if p >= 1e6 else f"{p / 1e3:.0f}k"

    rows = [{**r, "accuracy": f"{r['accuracy']:.2f}" if isinstance(r["accuracy"], float) else r["accuracy"]}
            for r in paper_rows() + book_rows()]
    # the accuracies right after the model: the columns a phone shows without a swipe
    return format_table(rows, [("source", "source", "{}"), ("model", "model", "{}"),
                               ("accuracy (%)", "accuracy", "{}"), ("3 seeds", "seeds", "{}"),
                               ("graph", lambda r: _unbroken(f"{r['widths']}, {r['graph']}"), "{}"),
                               ("parameters", params, "{}"), ("epochs", "epochs", "{}"),
                               ("images", "evaluated", "{}")], left=2, key=("accuracy (%)", "3 seeds"),
                        note="Graph: the widths of the three blocks, the scheme and the steps of each block (the paper's "
                             "units; N_t = M for the trained models; the paper's cheaper rows keep the trained weights "
                             "and take fewer steps). The paper trained on CIFAR-10's 50,000 training images and measured "
                             "on its 10,000 test images. The book trained on 45,000 of the training images, in a copy "
                             "whose pixels passed through JPEG (the `gpu` models and the probe: that copy again stored as "
                             "WebP, quality 90), and measured on the other 5,000, held out from training (a validation "
                             "set: the copy has no test split). Accuracy of training seed 0; 3 seeds: the `gpu` preset's "
                             "three training seeds, mean [min, max]. The book's numbers are read from the shipped "
                             "models' records and the probe's (the page On a GPU, Toward the paper's accuracy).")
