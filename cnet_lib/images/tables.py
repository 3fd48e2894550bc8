"""The image chapters' tables, as rows and as text: the paper's Table 1, the cost of refinement,
training histories, runs and sweeps in brief.  Chapters print these instead of formatting tables
themselves.
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

from ..runtime.tables import find_row, format_table
from ..runtime.vocabulary import run_label

__all__ = ["refinement_cost", "table1", "format_table1"]


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


def format_table1(rows: Sequence[dict]) -> str:
    """Plain text of :func:`table1` rows."""
    graph = {"trained": "trained", "manifestation": "same θ", "compressed": "θ compressed", "identity": "blocks removed"}
    return format_table(rows, [
        ("model", "model", "{}"), ("graph", lambda r: graph[r["kind"]], "{}"), ("scheme", "scheme", "{}"),
        ("N_t", lambda r: r.get("n_steps") or None, "{}"), ("M", lambda r: r.get("n_basis") or None, "{}"),
        ("units", "units", "{}"), ("params", "n_parameters", "{}"), ("ms/image", "ms_per_image", "{:.3f}"),
        ("speed-up", "speedup", "{:.2f}x"), ("accuracy", lambda r: 100 * r["accuracy"], "{:.1f}%"),
        ("Δ points", "delta_points", "{:+.1f}")], left=3)
