"""The trained runs of the image study in tables: a preset's runs before training (:func:`configs_table`), the
trained models (:func:`runs_table`) and their training histories (:func:`histories_table`)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..images.runs.study_run import as_trained_note, training_time
from ..images.studies.study_cache import ran_on
from ..runtime.rich_text import Rich, heading, join_rich
from ..runtime.rows import format_table
from ..runtime.vocabulary import basis_label, run_label

__all__ = ["configs_table", "runs_table", "histories_table", "refined_column", "as_trained_note"]


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


def refined_column(rows: Sequence[Mapping]) -> list:
    """A last column "note" saying "refined before this epoch" where a row says so (none without one)."""
    if not any(r.get("refined") for r in rows):
        return []
    return [("note", lambda r: "refined before this epoch" if r.get("refined") else "", "{}")]


def _seconds(s: float) -> str:
    """``"2943.2 s (49.1 min)"``; seconds alone under two minutes."""
    return f"{s:.1f} s" + (f" ({s / 60:.1f} min)" if s >= 120 else "")


# --------------------------------------------------------------------------- runs and training
def configs_table(configs: Mapping[str, Any]) -> Rich:
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


def runs_table(runs: Mapping[str, Any]) -> Rich:
    """The trained runs (``{run name: StudyRun}``), one column per run: the model (width, scheme, basis,
    M, N_t, ε, parameters) and its training (epochs, images, final held-out accuracy)."""
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
            "held-out accuracy": f"{run.final_accuracy:.3f}",
        }
    return _by_run(fields)


def histories_table(runs: Mapping[str, Any]) -> Rich:
    """Every run's training history (``{run name: StudyRun}``): one line per epoch (N_t and M of the
    first block, parameters, learning rate, training loss, held-out accuracy, seconds of training), then
    the run's total training time and the machine that measured it (:func:`training_time`)."""
    parts = []
    for run in runs.values():
        table = format_table(run.history, [
            ("epoch", "epoch", "{}"), ("N_t", lambda h: _uniform(h["n_steps"]), "{}"),
            ("M", lambda h: _uniform(h["n_basis"]), "{}"), ("params", "n_parameters", "{}"), ("lr", "lr", "{:g}"),
            ("loss", "train_loss", "{:.3f}"), ("held-out acc", "test_acc", "{:.4f}"), ("seconds", "train_seconds", "{:.2f}"),
            *refined_column(run.history)], left=0)
        tt = training_time(run)
        where = f" on {ran_on({'environment': tt})}" if tt["device"] else ""
        parts.append(join_rich([heading(run.label), table, f"{tt['epochs']} epochs, {_seconds(tt['train_seconds'])} "
                                f"of training (evaluation excluded){where}"]))
    return join_rich(parts, sep="\n\n")
