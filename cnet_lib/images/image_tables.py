"""The image chapters' tables, as rows and as text: the paper's Table 1, the cost of refinement from a
training log (the fair measurement is :mod:`cnet_lib.images.refinement_timing`), training histories, runs and sweeps in brief, and the reports of :mod:`cnet_lib.images.theta`.
Chapters display these instead of formatting tables themselves; every ``format_*`` function returns
a :class:`~cnet_lib.runtime.rich_text.Rich`: plain text when printed (the command lines), tables and
paragraphs that wrap to the page when displayed in a notebook or the book (built with
:func:`cnet_lib.runtime.rows.format_table` and :mod:`cnet_lib.runtime.rich_text`).
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from ..runtime.rich_text import Rich, heading, join_rich, paragraphs
from ..runtime.rows import find_row, format_table
from ..runtime.vocabulary import basis_label, run_label, scheme_label
from .manifestations import sweep_table
from .study_run import training_time

__all__ = ["refinement_cost", "table1", "format_table1", "format_configs", "format_runs", "format_histories",
           "format_sweep_summary", "format_sweeps", "format_change_from_initial",
           "format_change_per_epoch", "format_resnet_manifestation", "format_refinement_check",
           "format_manifestation_reads", "format_stage_table", "format_feature_shapes", "format_bn_statistics",
           "format_skip_gains"]


def _uniform(values: Sequence) -> Any:
    """One value when all are equal (one per block, say), else the list."""
    values = list(values)
    return values[0] if values and all(v == values[0] for v in values) else values


def _by_run(fields: Mapping[str, Mapping[str, Any]]) -> Rich:
    """A table with one column per run: ``fields[label][what]`` becomes the cell of row ``what``."""
    labels = list(fields)
    whats = list(dict.fromkeys(w for f in fields.values() for w in f))
    rows = [{"what": w, **{lab: fields[lab].get(w) for lab in labels}} for w in whats]
    columns = [("", "what", "{}")] + [(lab, (lambda r, lab=lab: r[lab]), "{}") for lab in labels]
    return format_table(rows, columns, left=len(columns))


def _refined_note(rows: Sequence[Mapping]) -> list:
    """A last column "note" saying "refined before this epoch" where a row says so (none without one)."""
    if not any(r.get("refined") for r in rows):
        return []
    return [("note", lambda r: "refined before this epoch" if r.get("refined") else "", "{}")]


def _seconds(s: float) -> str:
    """``"2943.2 s (49.1 min)"``; seconds alone under two minutes."""
    return f"{s:.1f} s" + (f" ({s / 60:.1f} min)" if s >= 120 else "")


def refinement_cost(history: Sequence[dict]) -> dict:
    """Training time of a refinement schedule against fixed depth at its final N_t.

    ``fixed_depth_estimate`` = epochs × (mean seconds per epoch measured at the final N_t): an
    *estimate* (no fixed-depth RK4 run is trained).  ``ideal`` = epochs × final N_t / Σ N_t over
    the epochs: the speed-up if an epoch's cost were proportional to N_t.
    """
    nts = [max(h["n_steps"]) if isinstance(h["n_steps"], list) else h["n_steps"] for h in history]
    final = nts[-1]
    at_final = [h["train_seconds"] for h, n in zip(history, nts) if n == final]
    per_epoch = sum(at_final) / len(at_final)
    total = sum(h["train_seconds"] for h in history)
    estimate = len(history) * per_epoch
    return {"epochs": len(history), "n_steps_per_epoch": nts, "final_n_steps": final, "sum_n_steps": sum(nts),
            "train_seconds": total, "seconds_per_epoch_at_final": per_epoch, "epochs_at_final": len(at_final),
            "fixed_depth_estimate": estimate, "speedup": estimate / total if total > 0 else float("nan"),
            "ideal": len(history) * final / sum(nts)}


def table1(sweeps: Mapping[str, Sequence[dict]], schemes: Optional[Sequence[str]] = None) -> list[dict]:
    """Rows like the paper's Table 1, per model: the trained graph; cheaper graphs (N_t ≤ the trained
    N_t) with ``schemes`` (default the sweep's compression schemes, else the trained one); the
    compressed manifestations; the blocks-as-identity model.  Adds ``model``, ``speedup`` (inference
    time of the trained graph / this one) and ``delta_points`` (accuracy minus the trained one)."""
    out = []
    for name, rows in sweeps.items():
        tr = find_row(rows, kind="trained")
        nt = tr["n_steps"] if isinstance(tr["n_steps"], int) else max(tr["n_steps"])
        comp = [r for r in rows if r["kind"] == "compressed"]
        use = list(schemes) if schemes else (list(dict.fromkeys(r["scheme"] for r in comp)) or [tr["scheme"]])
        pick = [tr]
        pick += [r for r in rows if r["kind"] == "manifestation" and not r.get("is_trained") and r["scheme"] in use
                 and isinstance(r["n_steps"], int) and r["n_steps"] <= nt]
        pick += comp + [r for r in rows if r["kind"] == "identity"]
        for r in pick:
            out.append({**r, "model": run_label(name), "run": name,
                        "speedup": tr["seconds"] / r["seconds"] if r["seconds"] > 0 else float("nan"),
                        "delta_points": 100.0 * (r["accuracy"] - tr["accuracy"])})
    return out


def format_table1(rows: Sequence[dict]) -> Rich:
    """Plain text of :func:`table1` rows."""
    graph = {"trained": "trained", "manifestation": "same θ", "compressed": "θ compressed", "identity": "blocks removed"}
    return format_table(rows, [
        ("model", "model", "{}"), ("graph", lambda r: graph[r["kind"]], "{}"), ("scheme", "scheme", "{}"),
        ("N_t", lambda r: r.get("n_steps") or None, "{}"), ("M", lambda r: r.get("n_basis") or None, "{}"),
        ("units", "units", "{}"), ("params", "n_parameters", "{}"), ("ms/image", "ms_per_image", "{:.3f}"),
        ("speed-up", "speedup", "{:.2f}x"), ("accuracy", lambda r: 100 * r["accuracy"], "{:.1f}%"),
        ("Δ points", "delta_points", "{:+.1f}")], left=3)


# --------------------------------------------------------------------------- runs and training
def format_configs(configs: Mapping[str, Any]) -> Rich:
    """The runs of a preset (``{run name: TrainConfig}``, e.g. :func:`cnet_lib.images.image_runs`), one
    column per run: data, width, scheme, the N_t = M schedule and the optimiser."""
    return _by_run({run_label(name): {
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


def format_runs(runs: Mapping[str, Any]) -> Rich:
    """The trained runs (``{run name: StudyRun}``), one column per run: the model (width, scheme, basis,
    M, N_t, ε, parameters) and its training (epochs, images, final test accuracy)."""
    fields = {}
    for run in runs.values():
        cfg, blocks = run.config, run.model.blocks
        fields[run.label] = {
            "channels": list(cfg.channels),
            "scheme": _uniform(b.scheme.name for b in blocks),
            "basis": basis_label(blocks[0].basis.name),
            "M (pieces per block)": _uniform(b.n_basis for b in blocks),
            "N_t (steps per block)": _uniform(b.n_steps for b in blocks),
            "ε": _uniform(b.epsilon for b in blocks),
            "parameters": run.model.n_parameters(),
            "epochs": len(run.history),
            "training images": cfg.n_train or "all",
            "test accuracy": f"{run.final_accuracy:.3f}",
        }
    return _by_run(fields)


def format_histories(runs: Mapping[str, Any]) -> Rich:
    """Every run's training history (``{run name: StudyRun}``): one line per epoch (N_t and M of the
    first block, parameters, learning rate, training loss, test accuracy, seconds of training), then
    the run's total training time and the machine that measured it (:func:`training_time`)."""
    parts = []
    for run in runs.values():
        table = format_table(run.history, [
            ("epoch", "epoch", "{}"), ("N_t", lambda h: _uniform(h["n_steps"]), "{}"),
            ("M", lambda h: _uniform(h["n_basis"]), "{}"), ("params", "n_parameters", "{}"), ("lr", "lr", "{:g}"),
            ("loss", "train_loss", "{:.3f}"), ("test acc", "test_acc", "{:.4f}"), ("seconds", "train_seconds", "{:.2f}"),
            *_refined_note(run.history)], left=0)
        tt = training_time(run)
        where = f" on {tt['device_name']} ({tt['device']})" if tt["device"] else ""
        parts.append(join_rich([heading(run.label), table, f"{tt['epochs']} epochs, {_seconds(tt['train_seconds'])} "
                                f"of training (evaluation excluded){where}"]))
    return join_rich(parts, sep="\n\n")


# --------------------------------------------------------------------------- sweeps
def format_sweep_summary(sweeps: Mapping[str, Sequence[dict]], grid: Optional[Mapping] = None,
                         n_test: Optional[int] = None) -> Rich:
    """What was swept (``grid``, ``n_test`` test images, when given) and, per model, the accuracy on its
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
        head.append(f"{n_test} test images")
    return join_rich(["; ".join(head), table])


def format_sweeps(sweeps: Mapping[str, Sequence[dict]]) -> Rich:
    """Every model's whole sweep (:func:`cnet_lib.images.manifestations.sweep_table`), under its label."""
    return join_rich([join_rich([heading(run_label(name)), sweep_table(rows)]) for name, rows in sweeps.items()],
                     sep="\n\n")


# --------------------------------------------------------------------------- θ(t) and graphs (rows of .theta)
def format_change_from_initial(rows: Sequence[dict]) -> Rich:
    """The rows of :func:`cnet_lib.images.theta.change_from_initial`, under a line naming the block and its M."""
    r0 = rows[0]
    head = f"OdeBlock {r0['block']}: M = {r0['n_basis_initial']} at the start, M = {r0['n_basis']} after training"
    return join_rich([head, format_table(rows, [("piece", "piece", "{}"), ("t", "t", "{:.3f}"),
                                                ("‖θ_trained(t) − θ_initial(t)‖ / ‖θ_initial(t)‖", "relative_change",
                                                 "{:.3f}")], left=0)])


def format_change_per_epoch(rows: Sequence[dict]) -> Rich:
    """The rows of :func:`cnet_lib.images.theta.change_per_epoch`: per epoch, M before and after and the
    largest change of the recorded θ(t)."""
    return format_table(rows, [
        ("epoch", "epoch", "{}"), ("M before", "n_basis_before", "{}"), ("M after", "n_basis_after", "{}"),
        ("largest change of θ(t)", "largest_change", "{:.4f}"), *_refined_note(rows)], left=0)


def _is_euler_nt_m(result: Mapping) -> bool:
    return all(s == "euler" and n == m for (s, n), m in zip(result["manifestation"], result["units_per_stage"]))


def format_resnet_manifestation(result: Mapping, label: str = "the model") -> Rich:
    """The report of :func:`cnet_lib.images.theta.resnet_manifestation`: the model's graph, its ResNet,
    whether they agree bit for bit and, when the model's own graph is another one, how much the
    logits and predicted classes move between the two graphs."""
    n = result["n_images"]
    lines = [f"{label}: own graph (scheme, N_t) per block {[tuple(m) for m in result['manifestation']]}, "
             f"basis {result['basis']}",
             f"its Euler, N_t = M graph as a ResNet: {result['units_per_stage']} residual units per stage, "
             f"step h per stage {result['steps']}",
             f"ResNet against the Euler, N_t = M graph: identical logits on {n} test images: {result['identical']} "
             f"(largest difference {result['max_difference']:.1e})"]
    if not _is_euler_nt_m(result):
        lines.append(f"own graph against the Euler, N_t = M graph: largest logit change {result['max_logit_change']:.3f}; "
                     f"same predicted class on {100 * result['same_class']:.1f}% of the {n} images")
    return paragraphs(lines)


def format_refinement_check(result: Mapping) -> Rich:
    """The report of :func:`cnet_lib.images.theta.refinement_check`."""
    (m0, m1), (n0, n1), (p0, p1) = result["n_basis"], result["n_steps"], result["n_parameters"]
    return paragraphs([
        f"M: {m0} -> {m1}, N_t: {n0} -> {n1}; parameters: {p0} -> {p1}",
        f"θ(t) of every weight identical at {result['n_times']} times: {result['theta_identical']}",
        f"refined model on the old graph (N_t = {n0}): same logits bit for bit: {result['old_graph_identical']}",
        f"refined model on the new graph (N_t = {n1}): largest logit change {result['new_graph_max_change']:.2e}"])


def format_manifestation_reads(rows: Sequence[dict]) -> Rich:
    """The rows of :func:`cnet_lib.images.theta.manifestation_reads`: per manifestation, the units per
    block and the pieces θ̂_β read (numbered from 1)."""
    return format_table(rows, [
        ("scheme", "scheme", "{}"), ("N_t", "n_steps", "{}"), ("units per block", "units", "{}"),
        ("pieces read", lambda r: ", ".join(str(b + 1) for b in r["pieces"]), "{}")], left=1)


def _reads(pieces) -> str:
    """``θ̂_2`` for one piece read whole, ``0.5 θ̂_1 + 0.5 θ̂_2`` for a combination (β from 0 in, from 1 out)."""
    pieces = [(b, float(w)) for b, w in pieces if w != 0]
    if len(pieces) == 1 and pieces[0][1] == 1.0:
        return f"θ̂_{pieces[0][0] + 1}"
    return " + ".join(f"{w:.3g} θ̂_{b + 1}" for b, w in pieces)


def format_stage_table(rows: Sequence[dict]) -> Rich:
    """The rows of :func:`cnet_lib.images.theta.stage_table`: per stage evaluation, its step, stage,
    exact time t and the θ̂_β it reads (numbered from 1)."""
    return format_table(rows, [("step", "step", "{}"), ("stage", "stage", "{}"), ("t", lambda r: float(r["tau"]), "{:.3f}"),
                               ("reads", lambda r: _reads(r["pieces"]), "{}")], left=0)


def format_feature_shapes(rows: Sequence[dict]) -> Rich:
    """The rows of :func:`cnet_lib.images.theta.feature_shapes`: each layer's output shape, with each
    OdeBlock's graph and each stitch's ε_stitch."""
    def detail(r):
        if "scheme" in r:
            return f"{r['scheme']}, N_t = {r['n_steps']}"
        return f"ε_stitch = {r['epsilon']}" if "epsilon" in r else ""

    return format_table(rows, [("layer", "layer", "{}"), ("output shape", lambda r: str(tuple(r["shape"])), "{}"),
                               ("graph or scale", detail, "{}")], left=3)


def format_bn_statistics(rows: Sequence[dict]) -> Rich:
    """The rows of :func:`cnet_lib.images.theta.bn_statistics`: per piece, every running statistic
    averaged over the channels; a last line says how many numbers each statistic holds."""
    stats = [k for k in rows[0] if "." in k]
    columns = [("piece", "piece", "{}")] + [(k.replace(".running_", " running "), k, "{:+.4f}" if k.endswith("mean") else "{:.4f}")
                                            for k in stats]
    note = (f"(averages over the {rows[0]['channels']} channels; each statistic is {len(rows)} pieces × "
            f"{rows[0]['channels']} channels)")
    return format_table(rows, columns, note=note)


def format_skip_gains(rows: Sequence[dict], identity: Optional[Sequence[bool]] = None) -> Rich:
    """The rows of :func:`cnet_lib.images.theta.skip_gains` (ε s(t) of each OdeBlock on its pieces), after a
    line saying whether each OdeBlock of the untrained model returns its input exactly (``identity``,
    from :func:`cnet_lib.images.theta.blocks_are_identity`), when given."""
    table = format_table(rows, [
        ("OdeBlock", "block", "{}"), ("M", "n_basis", "{}"),
        ("trained ε s(t) on its pieces", lambda r: None if r["gains"] is None else ", ".join(f"{g:+.4f}" for g in r["gains"]),
         "{}")], left=0)
    if identity is None:
        return table
    return join_rich([f"untrained model: each OdeBlock's output equals its input exactly: {list(identity)}", table])
