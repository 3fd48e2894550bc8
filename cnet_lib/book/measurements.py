"""Measured numbers, read from the files their measurements wrote: ``benchmarks/results/*.json`` of the
repository.

A measured number lives in one file, with the machine and the date it was measured on; the chapter cards
(:mod:`.chapter_cards`), ``cnet book_plan`` and the book's reference pages read it from there and never type it.
:func:`result` reads a file, :func:`value` one number of it by its path (``"bench_book-cpu.json:build_seconds"``, the
form the book's ``{measured}`` role takes), and :func:`machine_words` says in a few words which machine a file names.
The builds of the book (:func:`book_builds`) and the chapters timed on a GPU (:func:`gpu_chapters`) are the times the
cards quote; with the shipped models' own records (:func:`shipped_training`), they are what ``cnet book_plan``
expects a build to take (:func:`expected_build`).

The files are the repository's, not the installed package's: a student's or a Colab reader's install has
none.  The one reader that runs there, the setup cell's training time (:func:`training_words`), quotes the
shipped models' own records, and the T4 estimate computed from them (:func:`t4_estimate`).
Read once per process (the files do not change while a book is built).

Also here: the studies that ship with the book's models, as the *Measurements* page shows them
(:func:`shipped_study`).
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from ..images.runs.shipped import MANIFEST, SHIPPED, expected_training, read_manifest, shipped_training_record
from ..runtime.device import gpu_words
from ..runtime.progress import duration
from ..runtime.rich_text import Rich, format_table
from ..studies.runner import SEEDS_FILE, read_seeds_file
from ..runtime import device as runtime_device
from ..studies import adaptive, manifestation, robustness

__all__ = ["RESULTS", "results_dir", "result", "value", "machine_words", "book_builds", "gpu_chapters",
           "shipped_training", "expected_build", "t4_estimate", "training_words", "shipped_study",
           "shipped_models_table", "seeds_training_table", "t4_estimate_table", "SHIPPED_TABLES"]


RESULTS = Path("benchmarks") / "results"
"""Where the measurements are, from the repository's root."""


def results_dir(root: Optional[Path] = None) -> Path:
    """``benchmarks/results`` of the repository at ``root`` (default: the one this package was installed from)."""
    return (Path(root) if root is not None else Path(__file__).resolve().parents[2]) / RESULTS


@lru_cache(maxsize=None)
def _read(path: str) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def result(name: str, root: Optional[Path] = None) -> Any:
    """The parsed file ``benchmarks/results/<name>``, or, for ``shipped/<folder>/<file>``, a record that ships with
    the package (``cnet_lib/shipped``: a model's ``manifest.json`` or ``results.json``, a study); a missing one raises
    FileNotFoundError that says how the measurement is made (its benchmark writes it)."""
    if name.startswith("shipped/"):
        path = (Path(root) / "cnet_lib" / "shipped" if root is not None else SHIPPED) / name[len("shipped/"):]
        if not path.is_file():
            raise FileNotFoundError(f"{path} does not exist: the shipped records are written by `cnet ship`")
        return _read(str(path.resolve()))
    path = results_dir(root) / name
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: the measurement is written by its benchmark "
                                "(benchmarks/README.md says which); a measured number is never typed in its place")
    return _read(str(path.resolve()))


def value(spec: str, root: Optional[Path] = None) -> Any:
    """One entry of a results file by its path, ``"<file>:<key>.<key>.<index>..."`` (list entries by their
    index); a path that leads nowhere raises KeyError naming the part that is missing."""
    name, _, path = spec.partition(":")
    v = result(name, root)
    for part in path.split(".") if path else []:
        try:
            v = v[int(part)] if isinstance(v, list) else v[part]
        except (KeyError, IndexError, ValueError, TypeError):
            raise KeyError(f"{spec}: {name} has no {part!r} there") from None
    return v


def machine_words(machine: Mapping) -> str:
    """``"a 2-core x86_64 CPU"`` or ``"an H100"``: the machine a results file names (its ``machine`` entry, as
    :func:`cnet_lib.runtime.device.environment` or a benchmark writes it)."""
    gpu = machine.get("device_name") if str(machine.get("device", "")).startswith("cuda") else None
    if gpu is None and machine.get("cuda") and not str(machine["cuda"])[:1].isdigit():
        gpu = machine["cuda"]  # benchmarks that write the GPU's name under "cuda"
    if gpu:
        return gpu_words(gpu)
    arch = machine.get("processor") or next((a for a in ("x86_64", "aarch64", "arm64")
                                             if a in str(machine.get("platform", ""))), "")
    return f"a {machine.get('cpu_count', '?')}-core {arch + ' ' if arch else ''}CPU"


def book_builds(root: Optional[Path] = None) -> dict:
    """Fresh builds of the book measured by ``benchmarks/bench_book.py``, by preset: ``{"machine" (words),
    "date", "build_seconds", "seconds" (each chapter's execution), "not_executed"}``."""
    out = {}
    for preset in ("cpu", "smoke", "gpu"):
        r = result(f"bench_book-{preset}.json", root)
        out[preset] = {"machine": machine_words(r["machine"]), "date": r["date"], "build_seconds": r["build_seconds"],
                       "seconds": dict(r.get("chapter_seconds") or {}), "not_executed": list(r.get("not_executed") or [])}
    return out


def gpu_chapters(root: Optional[Path] = None) -> dict:
    """Each image chapter's execution in the ``gpu`` preset on a GPU, with the shipped models
    (``benchmarks/results/gpu_chapters.json``, which says how they were timed: upper bounds): ``{"machine",
    "seconds"}``."""
    r = result("gpu_chapters.json", root)
    return {"machine": machine_words(r["machine"]), "seconds": dict(r["chapter_seconds"])}


def shipped_training(preset: str) -> Optional[dict]:
    """How long the models that ship for ``preset`` took to train and to study: ``{"train_seconds", "study_seconds",
    "machine"}``.  The training and its machine are the results files they were trained with
    (:func:`cnet_lib.images.runs.shipped.shipped_training_record`, what the setup cell quotes too); the studies'
    seconds are their manifests' (written by ``cnet ship --restudy``), read there too.  ``None`` unless every run
    of the preset ships a model of the preset as it is now."""
    record = shipped_training_record(preset)
    if record is None:
        return None
    return {"train_seconds": sum(record["seconds"].values()),
            "study_seconds": sum(s for s in record["study_seconds"].values() if s is not None),
            "machine": machine_words(record["machine"])}


def t4_estimate(preset: str) -> Optional[float]:
    """Minutes the image chapters of ``preset`` would take on a T4, estimated
    (:func:`cnet_lib.runtime.device.t4_estimate`) from the shipped models' own records: each run's training
    and evaluation (its results file) and its manifestation sweep, on the GPU they ran on.  The records ship with
    the package, so a Colab reader's install has the estimate too; ``None`` where the preset's models do not ship,
    ran on a CPU or a GPU without a known peak, or a run's sweep does not say its time."""
    record = shipped_training_record(preset)
    if record is None or any(s is None for s in record["sweep_seconds"].values()):
        return None
    runs = {run: {"train": s, "eval": record["eval_seconds"][run], "sweep": record["sweep_seconds"][run]}
            for run, s in record["seconds"].items()}
    estimate = runtime_device.t4_estimate(runs, (record["machine"] or {}).get("device_name"))
    return estimate.get("image_chapters_minutes")


def training_words(preset: str) -> str:
    """How long training the image models of ``preset`` takes, as the setup cell says it: measured, from the shipped
    models' records (:func:`cnet_lib.images.runs.shipped.expected_training`), and the T4 estimate from the same
    records (:func:`t4_estimate`; left out where there is none)."""
    t4 = t4_estimate(preset)
    words = expected_training(preset)
    return words if t4 is None else f"{words}; the image chapters in about {duration(60 * t4)} on a T4 (an estimate)"


def expected_build(preset: str, trains: bool, root: Optional[Path] = None) -> str:
    """How long a build of the book in ``preset`` takes, where measured (words): with the image models loaded
    (shipped or cached) or, when ``trains``, trained first."""
    builds = book_builds(root)
    if preset == "smoke":
        return f"about {duration(builds['smoke']['build_seconds'])} on {builds['smoke']['machine']} (measured)"
    if preset == "cpu":
        b = builds["cpu"]
        if not trains:
            skipped = "".join(f"; {name} not executed in that build, not measured" for name in b["not_executed"])
            return (f"about {duration(b['build_seconds'])} on {b['machine']} (measured, with the image models that ship "
                    f"with the book{skipped})")
        t = shipped_training("cpu")
        if t is None:
            return "longer: training the image models first (not measured: no cpu models of the preset as it is now ship)"
        total = t["train_seconds"] + t["study_seconds"] + b["build_seconds"]
        return (f"about {duration(total)} on {t['machine']} (measured: {duration(t['train_seconds'])} to train both image "
                f"models, {duration(t['study_seconds'])} for their studies, {duration(b['build_seconds'])} for the book "
                "with them)")
    if preset == "gpu":
        if not trains:
            b = builds["gpu"]
            return (f"about {duration(b['build_seconds'])} on {b['machine']} (measured, with the image models and studies "
                    "that ship with the book: the published book)")
        t = shipped_training("gpu")
        if t is None:
            return "minutes on an H100/H200-class GPU (not measured: no gpu models of the preset as it is now ship)"
        t4 = t4_estimate("gpu")
        estimate = "" if t4 is None else f"; about {duration(60 * t4)} on a T4 (an estimate, see the book's page On a GPU)"
        return (f"minutes on an H100/H200-class GPU (both models trained in {duration(t['train_seconds'])} on "
                f"{t['machine']}, measured){estimate}")
    return "hours on a GPU (not measured)"


# The studies that ship with the book's models, as the *Measurements* page shows them: the numbers read from
# the shipped study files (``cnet_lib/shipped/<preset>-<run>/``, written by ``cnet ship``), judged by the
# library's verdicts and worded by the reporting layer, exactly as the chapters show them.
#
# Each function returns a :class:`~cnet_lib.runtime.rich_text.Rich` (a table, or the verdict's sentences);
# :data:`SHIPPED_TABLES` names them for the page's ``{measured-table}`` directive.

def shipped_study(preset: str, prefix: str) -> dict:
    """The study file ``<prefix>*.json`` that ships beside ``preset``'s first run (``rk4_refined``), parsed."""
    found = sorted((SHIPPED / f"{preset}-rk4_refined").glob(f"{prefix}*.json"))
    if len(found) != 1:
        raise FileNotFoundError(f"{SHIPPED / f'{preset}-rk4_refined'} holds {len(found)} {prefix}*.json files, not one: "
                                f"restudy the shipped models (cnet ship {preset} --restudy)")
    return json.loads(found[0].read_text(encoding="utf-8"))


def _robustness(preset: str):
    study = {label: robustness.study.conditions_from_json(rows)
             for label, rows in shipped_study(preset, robustness.study.PREFIX)["study"].items()}
    return robustness.judge(study, "rk4_refined", "euler_fixed")


def _seeds(preset: str) -> dict:
    payload = read_seeds_file(SHIPPED / f"{preset}-rk4_refined" / SEEDS_FILE)
    if payload is None:
        raise FileNotFoundError(f"no readable {SEEDS_FILE} ships with the {preset} preset's models")
    return {r["seed"]: r for r in payload["seeds"]}


def _contrast(preset: str):
    return manifestation.over_seeds({seed: r["sweeps"] for seed, r in _seeds(preset).items()})


def _robust_seeds(preset: str):
    return robustness.robustness_over_seeds({seed: r["robustness"] for seed, r in _seeds(preset).items()})


def shipped_models_table(root: Optional[Path] = None) -> Rich:
    """The models that ship with the book, from their manifests (``cnet ship``): per preset and run, the data,
    the epochs, the final held-out accuracy, the training time and the machine that measured it."""
    rows = []
    for folder in sorted(path.parent for path in SHIPPED.glob(f"*/{MANIFEST}")):  # image models: the pendulum's
        if folder.is_dir():                                                         # studies have no manifest
            m = read_manifest(folder)
            rows.append({"model": folder.name, "epochs": len(m.get("history") or []), "acc": m.get("final_test_acc"),
                         "train": m.get("train_seconds"), "loaded": bool(m.get("timing_note")),
                         "machine": machine_words(m.get("machine") or {}),
                         "date": (m.get("created_utc") or "")[:10], "images": m.get("data", {}).get("n_train") or "all"})
    return format_table(rows, [("model", "model", "{}"), ("training images", "images", "{}"), ("epochs", "epochs", "{}"),
                               ("held-out accuracy", "acc", "{:.2%}"),
                               ("training", lambda r: f"{r['train']:.0f} s" + (" *" if r["loaded"] else ""), "{}"),
                               ("on", "machine", "{}"), ("shipped", "date", "{}")], left=1,
                        note="cnet_lib/shipped/<preset>-<run>/manifest.json; training time excludes evaluation and the studies"
                             "; * trained beside other jobs on the same CPU (the manifest's timing_note): an upper "
                             "bound, not the run alone")


def seeds_training_table(preset: str) -> Rich:
    """Every training seed of ``preset``'s main runs, from the shipped ``seeds.json``: each model's held-out accuracy,
    its training time and the GPU (or CPU) it trained on."""
    seeds = _seeds(preset)
    names = list(next(iter(seeds.values()))["runs"])
    rows, machines = [], set()
    for seed, rec in sorted(seeds.items()):
        runs = rec["runs"]
        machines |= {gpu_words(r["device_name"]) if str(r.get("device", "")).startswith("cuda") else r.get("device_name", "")
                     for r in runs.values()}
        rows.append({"seed": seed, **{f"{n} acc": runs[n]["final_test_acc"] for n in names},
                     **{f"{n} s": runs[n]["train_seconds"] for n in names}})
    cols = [("training seed", "seed", "{}")]
    for n in names:
        cols += [(f"{n}: held-out accuracy", f"{n} acc", "{:.2%}"), (f"{n}: training", f"{n} s", "{:.0f} s")]
    return format_table(rows, cols, left=1, note=f"cnet_lib/shipped/{preset}-rk4_refined/{SEEDS_FILE}; trained on "
                        f"{', '.join(sorted(machines))}; training time excludes evaluation and the studies")


def t4_estimate_table(preset: str) -> Rich:
    """The T4 estimate (:func:`cnet_lib.runtime.device.t4_estimate`) of ``preset``'s image chapters, from the
    shipped models' own records: per run its measured training, evaluation and sweep seconds and the T4 minutes they
    scale to, with both assumptions in the note."""
    record = shipped_training_record(preset)
    if record is None or any(s is None for s in record["sweep_seconds"].values()):
        raise FileNotFoundError(f"the {preset} preset's shipped models do not record their training and sweep times")
    gpu = (record["machine"] or {}).get("device_name")
    runs = {run: {"train": s, "eval": record["eval_seconds"][run], "sweep": record["sweep_seconds"][run]}
            for run, s in record["seconds"].items()}
    estimate = runtime_device.t4_estimate(runs, gpu)
    if not estimate:
        raise ValueError(f"no float32 peak is known for {gpu!r}: no T4 estimate")
    rows = [{"run": run, **runs[run], "t4": e["t4_minutes"]} for run, e in estimate["runs"].items()]
    rows.append({"run": "the image chapters", "t4": estimate["image_chapters_minutes"]})
    a = estimate["assumptions"]
    return format_table(rows, [("run", "run", "{}"), (f"training on {gpu_words(gpu)}", "train", "{:.0f} s"),
                               ("evaluation", "eval", "{:.0f} s"), ("sweep", "sweep", "{:.0f} s"),
                               ("on a T4, estimated", "t4", "{:.0f} min")], left=1,
                        note=f"the shipped models' records (cnet_lib/shipped/{preset}-<run>/); every measured time × "
                             f"{a['peak_ratio']:.2f} (the ratio of the two GPUs' float32 peaks) × "
                             f"{a['fp32_over_bf16']:.2f} (a float32 step over the bf16 one: a T4 has no bf16)")


SHIPPED_TABLES: dict[str, Callable[[Optional[Path]], Rich]] = {
    "shipped_models": shipped_models_table,
    "training_seeds_gpu": lambda root=None: seeds_training_table("gpu"),
    "t4_estimate_gpu": lambda root=None: t4_estimate_table("gpu"),
    "robustness_cpu": lambda root=None: robustness.drops_table(_robustness("cpu")),
    "robustness_cpu_verdict": lambda root=None: robustness.word_verdict(_robustness("cpu")),
    "adaptive_cpu": lambda root=None: adaptive.accuracy_table(shipped_study("cpu", adaptive.PREFIX)),
    "adaptive_cpu_equal_cost": lambda root=None: adaptive.equal_cost_table(shipped_study("cpu", adaptive.PREFIX)),
    "adaptive_cpu_verdict": lambda root=None: adaptive.verdict(adaptive.judge(shipped_study("cpu", adaptive.PREFIX))),
    "adaptive_gpu_verdict": lambda root=None: adaptive.verdict(adaptive.judge(shipped_study("gpu", adaptive.PREFIX))),
    "seeds_contrast_gpu": lambda root=None: manifestation.contrast_table(_contrast("gpu")),
    "seeds_contrast_gpu_verdict": lambda root=None: manifestation.word_contrast(_contrast("gpu")),
    "seeds_robustness_gpu": lambda root=None: robustness.over_seeds_table(_robust_seeds("gpu")),
    "seeds_robustness_gpu_verdict": lambda root=None: robustness.word_over_seeds(_robust_seeds("gpu")),
}
"""The shipped studies a page shows with ``{measured-table} <name>``: each preset's tables and verdicts."""
