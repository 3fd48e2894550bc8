"""The book's tables of measured numbers, built from the files the measurements wrote (:mod:`.measurements`):
what the *Measurements* and *On a GPU* pages show with ``{measured-table} <name>``, when the book is built
(``book/_ext/measured.py``), and what ``{measured}`` quotes in their prose (:func:`quoted`).

Each ``*_table(root)`` returns a :class:`~cnet_lib.runtime.rich_text.Rich` table whose note names its files,
machine and date; :data:`TABLES` names them for the pages.  Nothing here is typed: a table changes when
its benchmark writes its file again.
"""
from __future__ import annotations

import re

from pathlib import Path
from typing import Any, Callable, Optional

from ..runtime.progress import duration
from ..runtime.rich_text import Rich
from ..runtime.rows import format_table
from .measurements import book_builds, gpu_chapters, gpu_preset_on_cpu, machine_words, result, value
from .claims_page import TABLE as CLAIMS_TABLES
from .paper_comparison import paper_comparison_table
from .shipped_tables import SHIPPED_TABLES

__all__ = ["FORMATS", "quoted", "benchmarks_table", "book_builds_table", "gpu_chapters_table", "live_apps_table",
           "gpu_steps_table", "gpu_recipe_table", "ddp_estimate_table", "recipe_steps_table", "training_seeds_table",
           "threads_table", "ci_table", "student_copies_table", "TABLES", "WORDED"]

FORMATS: dict[str, Callable[[Any], str]] = {
    "duration": duration, "int": lambda v: f"{int(round(v)):,}", "pct": lambda v: f"{100 * v:.2f}%",
    "x": lambda v: f"{v:.2f}×", "s": lambda v: f"{v:.1f} s", "ms": lambda v: f"{v:.1f} ms",
    "ms_of_s": lambda v: f"{1000 * v:.0f} ms", "MiB": lambda v: f"{v / 2 ** 20:.2f} MiB",
}
"""Named formats of :func:`quoted`; any other format is a ``str.format`` spec such as ``.2f``."""


def quoted(spec: str, root: Optional[Path] = None) -> str:
    """A measured value as the prose quotes it: ``"<file>:<path>|<format>"`` (the format a name of
    :data:`FORMATS` or a format spec; without one, the value as it is)."""
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
        speedups = " / ".join(f"{row['speedup']:.2f}× (ideal {row['ideal']:.2f})" for row in r["rows"][1:])
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
    """The chapters in the ``gpu`` preset: the image chapters on a GPU with the shipped models (upper bounds:
    they ran side by side), and what runs on the CPU in that preset, timed on a CPU alone."""
    gpu, cpu = gpu_chapters(root), gpu_preset_on_cpu(root)
    rows = [{"chapter": c, "where": gpu["machine"], "seconds": s} for c, s in gpu["seconds"].items()]
    rows += [{"chapter": c, "where": f"{cpu['machine']} alone", "seconds": s} for c, s in cpu["seconds"].items()]
    rows += [{"chapter": f"{c}: {what}", "where": f"{cpu['machine']} alone", "seconds": s}
             for c, (what, s) in cpu["parts"].items()]
    return format_table(rows, [("chapter", "chapter", "{}"), ("on", "where", "{}"), ("time", "seconds", "{:.1f} s")],
                        left=2, note=_note(["gpu_chapters-gpu-check.json", "gpu_session-gpu-check.json",
                                            "gpu_preset_chapters-cpu.json", "adaptive_pendulum-gpu.json"],
                                           f"{gpu['machine']} and {cpu['machine']}", cpu["date"]))


LIVE_GROUPS = (("sweep app", "sweep_app", (0,)), ("sweep app", "sweep_app", (1,)), ("sweep app", "sweep_app", (2,)),
               ("sweep app", "sweep_app", (3,)), ("sweep app", "sweep_app", (4,)),
               ("robustness app", "robustness_app", (0, 1)), ("robustness app", "robustness_app", (2,)),
               ("robustness app", "robustness_app", (3,)), ("pendulum rollout app", "rollout_app", tuple(range(6))),
               ("solver app", "solver_app", tuple(range(4))))
"""The rows of :func:`live_apps_table`: an app and the interactions of ``benchmarks/bench_live_apps.py`` a row
groups (by their index in its file)."""


def _seconds(values) -> Optional[str]:
    """One value, or the range, at 2 decimals (``None`` for none)."""
    shown = sorted({f"{v:.2f}" for v in values if v is not None}, key=float)
    if not shown:
        return None
    return f"{shown[0]} s" if len(shown) == 1 else f"{shown[0]}–{shown[-1]} s"


def _interaction(rows) -> str:
    v = rows[0]["values"]
    if len(rows) > 1:
        return f"{len(rows)} interactions"
    return ", ".join(f"{k} {v[k]}" for k in v if v[k] not in (0, 0.0, None) or k in ("n_steps",))


def live_apps_table(root: Optional[Path] = None) -> Rich:
    """Seconds per interaction of every live app (``benchmarks/bench_live_apps.py``, the minimum of its
    renders): on the CPU the first answer, its background refinement and the interaction before the redesign;
    on a GPU the first answer (shared with the chapters and the tests: upper bounds)."""
    cpu, gpu = result("live_apps-cpu.json", root), result("live_apps-cuda.json", root)
    rows = []
    for app, key, idx in LIVE_GROUPS:
        c, g = [cpu[key][i] for i in idx], [gpu[key][i] for i in idx]
        rows.append({"app": app, "interaction": _interaction(c), "first": _seconds(r["first_s"] for r in c),
                     "refined": _seconds(r.get("refine_s") for r in c), "before": _seconds(r.get("before_s") for r in c),
                     "gpu": _seconds(r["first_s"] for r in g)})
    return format_table(rows, [("app", "app", "{}"), ("interaction", "interaction", "{}"), ("CPU first", "first", "{}"),
                               ("CPU refined", "refined", "{}"), ("CPU before", "before", "{}"),
                               (f"{machine_words({'cuda': gpu['machine']['cuda']})[3:]} first", "gpu", "{}")],
                        left=2, note=_note(["live_apps-cpu.json", "live_apps-cuda.json"],
                                           f"{machine_words(cpu['machine'])} idle, {machine_words(gpu['machine'])} shared",
                                           cpu["date"]))


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


def ddp_estimate_table(root: Optional[Path] = None) -> Rich:
    """The ``paper`` preset's training on one H100 and on 8 under ``torchrun``, an estimate from measured
    single-GPU steps (``benchmarks/estimate_ddp.py``; nothing of it ran): hours, lower and upper bounds."""
    r = result("ddp_estimate-h100x8.json", root)

    def span(v) -> str:
        return f"{duration(3600 * v[0])} to {duration(3600 * v[1])}"

    rows = [{"run": name, "one": duration(3600 * e["one_gpu_graph_bf16_hours"]),
             "eager": span(e["8_gpus_ddp_eager_fp32_hours"]), "graph": span(e["8_gpus_ddp_graph_bf16_hours"])}
            for name, e in r["runs"].items()]
    return format_table(rows, [("run", "run", "{}"), ("one H100, CUDA graphs, bf16", "one", "{}"),
                               (f"{r['gpus']} H100s, torchrun as it is (eager, float32)", "eager", "{}"),
                               (f"{r['gpus']} H100s, if the step were captured with its collectives", "graph", "{}")],
                        left=1, note="benchmarks/results/ddp_estimate-h100x8.json; an estimate from "
                        + ", ".join(r["measured_files"]) + "; training steps only, collectives not counted")


def recipe_steps_table(root: Optional[Path] = None) -> Rich:
    """Milliseconds per SGD step of the wider ContinuousNets at the recipe's batch (CUDA graph, bf16
    channels-last; ``benchmarks/bench_gpu_recipe.py``)."""
    r = result("gpu_recipe-h200-e24.json", root)
    rows = [{**t, "widths": "-".join(map(str, t["channels"]))} for t in r["timing"]]
    return format_table(rows, [("widths", "widths", "{}"), ("scheme", "scheme", "{}"), ("N_t", "n_steps", "{}"),
                               ("batch", "batch", "{}"), ("ms per step (median)", "median_ms", "{:.1f}"),
                               ("parameters", "n_parameters_at_this_m", "{:,}")], left=2,
                        note=_note(["gpu_recipe-h200-e24.json"], machine_words(r["machine"]), r["date"]))


def training_seeds_table(root: Optional[Path] = None) -> Rich:
    """The ``gpu`` preset's models trained from three seeds per method in the GPU training session
    (``scripts/gpu_session.py``): per seed each model's held-out accuracy and training time, and the seed's
    sweeps and robustness study."""
    r = result("gpu_session-gpu.json", root)
    rows = []
    for seed, rec in r["seeds"].items():
        runs = rec["runs"]
        rows.append({"seed": seed, **{f"{n} acc": runs[n]["final_test_acc"] for n in runs},
                     **{f"{n} s": runs[n]["train_seconds"] for n in runs}, "studies": sum(rec["study_seconds"].values())})
    names = list(next(iter(r["seeds"].values()))["runs"])
    cols = [("training seed", "seed", "{}")]
    for n in names:
        cols += [(f"{n}: held-out accuracy", f"{n} acc", "{:.2%}"), (f"{n}: training", f"{n} s", "{:.1f} s")]
    cols.append(("its sweeps and robustness study", "studies", "{:.1f} s"))
    return format_table(rows, cols, left=1, note=_note(["gpu_session-gpu.json"], machine_words(r["machine"]), "2026-11-27")
                        + "; all 45,000 training images of the data pack, accuracy on the 5,000 held-out ones")


def threads_table(root: Optional[Path] = None) -> Rich:
    """Milliseconds per training step by threads and OpenMP wait policy, idle and beside another training
    (``benchmarks/bench_threads.py``)."""
    r = result("bench_threads.json", root)
    rows = [{**row, "beside": "another training" if row["contended"] else "idle"} for row in r["rows"]]
    return format_table(rows, [("step", "case", "{}"), ("machine", "beside", "{}"), ("threads", "threads", "{}"),
                               ("OMP_WAIT_POLICY", "omp_wait_policy", "{}"), ("ms per step (median)", "median_ms", "{:.0f}")],
                        left=4, note=_note(["bench_threads.json"], machine_words(r["machine"]), r["date"]))


def _or_dash(value, word) -> str:
    """``word(value)``, or a dash where nothing was recorded."""
    return "—" if value is None else word(value)


_HASH = re.compile(r"\s*\b(?:of |at |commit )?(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b")


def without_hashes(text: str) -> str:
    """``text`` less the commit hashes in it ("a clean clone of caec226 (...)" -> "a clean clone (...)"): a reader of
    the reference pages has no use for them (the repository's history keeps them)."""
    return re.sub(r" {2,}", " ", re.sub(r"\(\s*\)", "", _HASH.sub("", text))).strip()


def ci_table(root: Optional[Path] = None) -> Rich:
    """CI on a clean clone, run after run (``bash .ci/run``): its date, wall time, pytest's share and the
    tests, with the machine's load and what changed, without the commits' hashes (``benchmarks/results/ci.json``)."""
    r = result("ci.json", root)
    return format_table(r["runs"], [("date", "date", "{}"),
                                    ("machine", lambda run: run.get("machine", r["machine"]), "{}"),
                                    ("wall", lambda run: duration(run["wall_seconds"]), "{}"),
                                    ("pytest", lambda run: _or_dash(run["pytest_seconds"], duration), "{}"),
                                    ("passed", lambda run: _or_dash(run["passed"], str), "{}"),
                                    ("skipped", lambda run: _or_dash(run["skipped"], str), "{}"),
                                    ("what changed", lambda run: without_hashes(run.get("note", "")), "{}")], left=1,
                        note="benchmarks/results/ci.json; each row on the machine and the date it names")


def page_weight_table(root: Optional[Path] = None) -> Rich:
    """What a first visit to a page downloads, per build measured (``benchmarks/bench_page_weight.py``): the heaviest
    and the lightest page, as served and gzip-compressed, and the site's size."""
    r = result("page_weight.json", root)
    rows, machine, date = [], "", ""
    for label, b in r["builds"].items():
        pages = list(b["pages"].values())
        heavy, light = max(pages, key=lambda v: v["bytes"]), min(pages, key=lambda v: v["bytes"])
        rows.append({"build": without_hashes(f"{label}: {b['note']}" if b.get("note") else label), "max": heavy["bytes"],
                     "max_gz": heavy["gzip_bytes"], "min": light["bytes"], "min_gz": light["gzip_bytes"],
                     "site": b["site"]["bytes"]})
        machine, date = machine_words(b["machine"]), b["date"]

    def mb(key):
        return lambda row: f"{row[key] / 1e6:.2f} MB"

    return format_table(rows, [("build", "build", "{}"), ("heaviest page", mb("max"), "{}"), ("gzip", mb("max_gz"), "{}"),
                               ("lightest page", mb("min"), "{}"), ("gzip ", mb("min_gz"), "{}"),
                               ("site", lambda row: f"{row['site'] / 1e6:.1f} MB", "{}")], left=1,
                        note=_note(["page_weight.json"], machine, date)
                        + "; a first visit (empty cache) in headless Chromium, every figure drawn and formula typeset; "
                          "gzip: what a server that compresses text sends")


TABLES: dict[str, Callable[[Optional[Path]], Rich]] = {
    "benchmarks": benchmarks_table, "book_builds": book_builds_table, "gpu_chapters": gpu_chapters_table,
    "live_apps": live_apps_table, "gpu_steps": gpu_steps_table, "gpu_recipe": gpu_recipe_table,
    "threads": threads_table, "ci": ci_table, "recipe_steps": recipe_steps_table, "training_seeds": training_seeds_table,
    "ddp_estimate": ddp_estimate_table, "paper_comparison": paper_comparison_table, "page_weight": page_weight_table,
    "student_copies": student_copies_table, **SHIPPED_TABLES, **CLAIMS_TABLES,
}
"""The tables a page shows with ``{measured-table} <name>``: those of the results files, and the studies that ship
with the models (:data:`cnet_lib.book.shipped_tables.SHIPPED_TABLES`)."""

WORDED = frozenset({"paper_comparison"})
"""Tables shown on a chapter-like page (the introduction), which names no file: their notes say in words where their
numbers come from (the shipped models' records, the probe's on the page *On a GPU*)."""
