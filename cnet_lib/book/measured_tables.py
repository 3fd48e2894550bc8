"""The book's tables of measured numbers, built from the files the measurements wrote (:mod:`.measurements`):
what the reference pages show with ``{measured-table} <name>``, when the book is built (``book/_ext/measured.py``),
and what ``{measured}`` quotes in their prose (:func:`quoted`).

Each ``*_table(root)`` returns a :class:`~cnet_lib.runtime.rich_text.Rich` table whose note names its files,
machine and date; :data:`TABLES` names them for the pages.  Rows are read by their names (a scheme, a trial, a
preset), never by their place in a file.  Nothing here is typed: a table changes when its benchmark writes its file
again.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

from ..runtime.progress import duration
from ..runtime.rich_text import Rich, format_table
from .claims_page import TABLE as CLAIMS_TABLES
from .measurements import SHIPPED_TABLES, book_builds, gpu_chapters, machine_words, result, training_words, value
from .paper_claims import paper_comparison_table

__all__ = ["FORMATS", "quoted", "benchmarks_table", "book_builds_table", "gpu_chapters_table", "gpu_recipe_table", "student_copies_table", "TABLES",
           "WORDED", "WORDS"]

FORMATS: dict[str, Callable[[Any], str]] = {
    "duration": duration, "int": lambda v: f"{int(round(v)):,}", "pct": lambda v: f"{100 * v:.2f}%",
    "x": lambda v: f"{v:.2f}×", "s": lambda v: f"{v:.1f} s", "ms": lambda v: f"{v:.1f} ms",
    "ms_of_s": lambda v: f"{1000 * v:.0f} ms", "MiB": lambda v: f"{v / 2 ** 20:.2f} MiB",
    "machine": machine_words,
}
"""Named formats of :func:`quoted`; any other format is a ``str.format`` spec such as ``.2f``."""


WORDS: dict[str, Callable[[str], str]] = {"training": training_words}
"""Sentences computed from the records that ship with the book, quoted as ``"<name>:<preset>"``: ``training:cpu``
is how long training the ``cpu`` preset's image models takes, measured, with the machine
(:func:`cnet_lib.book.measurements.training_words`)."""


def quoted(spec: str, root: Optional[Path] = None) -> str:
    """A measured value as the prose quotes it: ``"<file>:<path>|<format>"`` (``<file>`` in ``benchmarks/results`` or
    ``shipped/<folder>/<file>`` in the package; the format a name of :data:`FORMATS` or a format spec; without one,
    the value as it is), or a sentence of :data:`WORDS`, ``"<name>:<preset>"``."""
    name, _, preset = spec.partition(":")
    if name in WORDS:
        return WORDS[name](preset.strip())
    where, _, fmt = spec.partition("|")
    v = value(where.strip(), root)
    if not fmt:
        return str(v)
    return FORMATS[fmt](v) if fmt in FORMATS else format(v, fmt)


def _note(files, machine: str, date: str) -> str:
    return f"benchmarks/results/{', '.join(files)}; {machine}, {date}"


def benchmarks_table(root: Optional[Path] = None) -> Rich:
    """The library's speed against its references: ``bench_core.py``, ``bench_pendulum.py``,
    ``bench_refinement.py`` and ``bench_compression.py``, each a ratio beside its goal."""
    core, pend = result("core.json", root), result("pendulum.json", root)
    rows = [{"what": f"{k} (bench_core.py)", "ratio": f"{v:.2f}", "goal": "—" if core["goals"].get(k) is None else
             f"≤ {core['goals'][k]:g}"} for k, v in core["ratios"].items()]
    rows += [{"what": f"one ODE-Net training iteration, {s}: cnet_lib ÷ torchdiffeq (bench_pendulum.py)",
              "ratio": f"{r['ratio_cnet_over_torchdiffeq']:.2f}", "goal": "≤ 1"} for s, r in pend["results"].items()]
    for name in ("bench_refinement.json", "bench_refinement-sequential.json", "bench_refinement-quick.json"):
        r = result(name, root)
        rows.append({"what": f"refinement ÷ fixed depth, {r['mode']}, {r['order'].split(':')[0]} "
                             f"({'-'.join(map(str, r['settings']['channels']))}, {r['settings']['epochs']} epochs; {name})",
                     "ratio": f"{r['speedup']:.2f}× of {r['ideal']:.2f}×: efficiency {r['efficiency']:.2f}", "goal": "≥ 0.95"})
    for name in ("bench_compression.json", "bench_compression-quick.json"):
        r = result(name, root)
        compressed = [row for row in r["rows"] if row["n_basis"] in r["settings"]["compress"]]
        speedups = " / ".join(f"{row['speedup']:.2f}× (ideal {row['ideal']:.2f})" for row in compressed)
        rows.append({"what": f"compressed inference, rk4_38 at N_t = M = {r['settings']['compress']} ÷ rk4_classic at "
                             f"M = {r['settings']['n_basis']} ({name})", "ratio": speedups, "goal": "—"})
    return format_table(rows, [("benchmark", "what", "{}"), ("ratio", "ratio", "{}"), ("goal", "goal", "{}")], left=3,
                        note=_note(["core.json", "pendulum.json", "bench_refinement*.json", "bench_compression*.json"],
                                   machine_words(core["machine"]), f"{core['date']}, idle"))


def book_builds_table(root: Optional[Path] = None) -> Rich:
    """Fresh builds of the whole book, per preset: the build and each chapter's execution
    (``benchmarks/bench_book.py``)."""
    builds = book_builds(root)
    chapters = sorted({c for b in builds.values() for c in b["seconds"]})
    rows = [{"chapter": "the whole build", **{p: duration(b["build_seconds"]) for p, b in builds.items()}}]
    rows += [{"chapter": c, **{p: duration(b["seconds"][c]) if c in b["seconds"] else None
                               for p, b in builds.items()}} for c in chapters]
    files = [f"bench_book-{p}.json" for p in builds]
    dates = ", ".join(sorted({b["date"] for b in builds.values()}))
    return format_table(rows, [("", "chapter", "{}")] + [(f"`{p}` preset", p, "{}") for p in builds], left=1,
                        note=_note(files, builds["cpu"]["machine"], dates)
                        + "; a fresh runs folder: the image models and studies that ship with the book")


def gpu_chapters_table(root: Optional[Path] = None) -> Rich:
    """The chapters in the ``gpu`` preset, with the shipped models: on a GPU (``gpu_chapters.json``, upper bounds) and
    in the published book's build on a CPU (``bench_book-gpu.json``), chapter by chapter."""
    gpu, cpu = gpu_chapters(root), book_builds(root)["gpu"]
    rows = [{"chapter": c, "gpu": gpu["seconds"].get(c), "cpu": s} for c, s in cpu["seconds"].items()]
    return format_table(rows, [("chapter", "chapter", "{}"), (f"on {gpu['machine']}, at most", "gpu", "{:.0f} s"),
                               (f"on {cpu['machine']}", "cpu", "{:.0f} s")], left=1,
                        note=_note(["gpu_chapters.json", "bench_book-gpu.json"], f"{gpu['machine']} and {cpu['machine']}",
                                   f"{result('gpu_chapters.json', root)['date']} and {cpu['date']}")
                        + "; on the GPU every chapter ran at once beside other jobs (upper bounds), the pendulum "
                          "chapters in another preset (no time shown)")


def student_copies_table(root: Optional[Path] = None) -> Rich:
    """Each student copy run to its end in a fresh environment holding the students' wheel, on a student's default
    preset with a course's data folder: with its stubs, solved, and with its stubs and no data
    (``benchmarks/bench_student_copies.py``): seconds, and whether it reached its end."""
    r = result("student_copies.json", root)
    rows: dict = {}
    for run in r["runs"]:
        row = rows.setdefault(run["chapter"], {"chapter": run["chapter"]})
        row[run["kind"]] = (f"{run['seconds']:.0f} s" if run["seconds"] is not None else "—") + \
            ("" if run["reached_end"] else " (stopped)")
        row["preset"] = run.get("preset") or row.get("preset", "")
    total = {k: f"{v / 60:.1f} min" for k, v in r["seconds_by_kind"].items()}
    rows["all"] = {"chapter": "all chapters", **total, "preset": ""}
    return format_table(list(rows.values()), [("chapter", "chapter", "{}"), ("preset", "preset", "{}"),
                                              ("with its stubs", "stubs", "{}"), ("solved", "solved", "{}"),
                                              ("stubs, no data", "stubs, no data", "{}")], left=1,
                        note=_note(["student_copies.json"], f"{machine_words(r['machine'])}, load "
                                   f"{r['load_average_before'][0]:g} before", r["date"]))


def gpu_steps_table(root: Optional[Path] = None) -> Rich:
    """Milliseconds per SGD step on a GPU (the median), eager against CUDA graphs, float32 against bf16
    (``benchmarks/bench_gpu.py``)."""
    r = result("bench_gpu.json", root)
    cols = list(dict.fromkeys((row["mode"], row["precision"]) for row in r["rows"]))
    steps: dict = {}
    for row in r["rows"]:
        steps.setdefault(f"{row['scheme']} N_t = {row['n_steps']}", {})[f"{row['mode']} {row['precision']}"] = row["median_ms"]
    rows = [{"step": k, **v} for k, v in steps.items()]
    return format_table(rows, [("step", "step", "{}")] + [(f"{m}, {p}", f"{m} {p}", "{:.1f}") for m, p in cols], left=1,
                        note=_note(["bench_gpu.json"], machine_words(r["machine"]), r["date"])
                        + f"; {'-'.join(map(str, r['channels']))}, batch {r['batch']}; fp32_cl: channels-last")


def gpu_recipe_table(root: Optional[Path] = None) -> Rich:
    """Wider ContinuousNets trained with a fast recipe, toward the paper's accuracy
    (``benchmarks/bench_gpu_recipe.py``): per trial its widths, epochs and peak rate, the held-out accuracy and
    the seconds of training (one training seed each)."""
    rows, machine, date = [], "", ""
    for name in ("gpu_recipe-h200-e24.json", "gpu_recipe-h200-e40.json", "gpu_recipe-h200-e40-lr0.2.json"):
        r = result(name, root)
        machine, date = machine_words(r["machine"]), r["date"]
        for trial, t in r["trials"].items():
            c = t["config"]
            rows.append({"trial": trial, "model": f"{c['scheme']}, {'-'.join(map(str, c['channels']))}",
                         "schedule": f"{c['epochs']} epochs, peak {c['lr']:g}, refined after {list(c['refine_at'])}",
                         "accuracy": t.get("final_held_out_accuracy"), "seconds": t.get("train_seconds"),
                         "status": t.get("status")})
    return format_table(rows, [("trial", "trial", "{}"), ("model", "model", "{}"), ("schedule", "schedule", "{}"),
                               ("held-out accuracy", "accuracy", "{:.2%}"), ("training", "seconds", "{:.0f} s"),
                               ("status", "status", "{}")], left=3,
                        note=_note(["gpu_recipe-h200-*.json"], machine, date) + "; 5,000 held-out images of the data pack")


TABLES: dict[str, Callable[[Optional[Path]], Rich]] = {
    "benchmarks": benchmarks_table, "book_builds": book_builds_table, "gpu_chapters": gpu_chapters_table,
    "gpu_recipe": gpu_recipe_table, "student_copies": student_copies_table,
    "paper_comparison": paper_comparison_table, **SHIPPED_TABLES, **CLAIMS_TABLES,
}
"""The tables a page shows with ``{measured-table} <name>``: those of the results files, and the studies that ship
with the models (:data:`cnet_lib.book.measurements.SHIPPED_TABLES`)."""

WORDED = frozenset({"paper_comparison"})
"""Tables shown on a chapter-like page (the introduction), which names no file: their notes say in words where their
numbers come from (the shipped models' records, the probe's on the page *On a GPU*)."""
