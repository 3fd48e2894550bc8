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
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Optional

from ..images.runs.shipped import expected_training, shipped_training_record
from ..runtime import gpu_estimate
from ..runtime.device import gpu_words
from ..runtime.progress import duration

__all__ = ["RESULTS", "results_dir", "result", "value", "machine_words", "book_builds", "gpu_chapters",
           "shipped_training", "expected_build", "t4_estimate", "training_words"]

RESULTS = Path("benchmarks") / "results"
"""Where the measurements are, from the repository's root."""


def results_dir(root: Optional[Path] = None) -> Path:
    """``benchmarks/results`` of the repository at ``root`` (default: the one this package was installed from)."""
    return (Path(root) if root is not None else Path(__file__).resolve().parents[2]) / RESULTS


@lru_cache(maxsize=None)
def _read(path: str) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def result(name: str, root: Optional[Path] = None) -> Any:
    """The parsed file ``benchmarks/results/<name>``; a missing one raises FileNotFoundError that says how the
    measurement is made (its benchmark writes it)."""
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
    (:func:`cnet_lib.runtime.gpu_estimate.t4_estimate`) from the shipped models' own records: each run's training
    and evaluation (its results file) and its manifestation sweep, on the GPU they ran on.  The records ship with
    the package, so a Colab reader's install has the estimate too; ``None`` where the preset's models do not ship,
    ran on a CPU or a GPU without a known peak, or a run's sweep does not say its time."""
    record = shipped_training_record(preset)
    if record is None or any(s is None for s in record["sweep_seconds"].values()):
        return None
    runs = {run: {"train": s, "eval": record["eval_seconds"][run], "sweep": record["sweep_seconds"][run]}
            for run, s in record["seconds"].items()}
    estimate = gpu_estimate.t4_estimate(runs, (record["machine"] or {}).get("device_name"))
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
