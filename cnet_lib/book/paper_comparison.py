"""The seed paper's CIFAR-10 numbers beside the book's: :func:`paper_comparison_table`, which the introduction and
*Manifestation invariance* show (``{measured-table} paper_comparison`` on a page; ``book.paper_comparison_table()``
in a chapter).

The paper's rows are quoted from its Table 1 (:data:`cnet_lib.book.paper_claims.PAPER_TABLE1`: the one place they
are typed, with what they were measured on); the book's rows are read from what measured them: the shipped models' sweeps (parameters, the
trained and the compressed graphs) and manifests (epochs, training images), the ``gpu`` preset's three training
seeds (``seeds.json``), and the probe toward the paper's accuracy (``benchmarks/results/gpu_recipe-h200-e40.json``).
What a reader must not miss is said in the table's note: the book's accuracies are measured on images held out
of CIFAR-10's *training* set (the offline copy the models were trained on has no test split), the paper's on
CIFAR-10's test set.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..images.runs.image_presets import image_runs
from ..images.runs.shipped import SHIPPED, read_manifest
from ..studies.runner import read_seeds_file, SEEDS_FILE, shipped_sweep_file
from ..runtime.rich_text import Rich
from ..runtime.rows import find_row, format_table
from .measurements import result
from .paper_claims import PAPER_SCALE, PAPER_TABLE1

__all__ = ["paper_rows", "book_rows", "paper_comparison_table"]

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
