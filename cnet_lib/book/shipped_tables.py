"""The studies that ship with the book's models, as the *Measurements* page shows them: the numbers read from
the shipped study files (``cnet_lib/shipped/<preset>-<run>/``, written by ``cnet ship``), judged by the
library's verdicts and worded by the reporting layer, exactly as the chapters show them.

Each function returns a :class:`~cnet_lib.runtime.rich_text.Rich` (a table, or the verdict's sentences);
:data:`SHIPPED_TABLES` names them for the page's ``{measured-table}`` directive.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Optional

from ..images.runs.shipped import MANIFEST, SHIPPED, read_manifest, shipped_training_record
from ..studies.runner import read_seeds_file, SEEDS_FILE
from ..runtime import gpu_estimate
from ..runtime.device import gpu_words
from ..runtime.rich_text import Rich
from ..runtime.rows import format_table
from ..studies import adaptive, manifestation, robustness
from .measurements import machine_words

__all__ = ["shipped_study", "shipped_models_table", "seeds_training_table", "t4_estimate_table", "SHIPPED_TABLES"]


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
    """The T4 estimate (:func:`cnet_lib.runtime.gpu_estimate.t4_estimate`) of ``preset``'s image chapters, from the
    shipped models' own records: per run its measured training, evaluation and sweep seconds and the T4 minutes they
    scale to, with both assumptions in the note."""
    record = shipped_training_record(preset)
    if record is None or any(s is None for s in record["sweep_seconds"].values()):
        raise FileNotFoundError(f"the {preset} preset's shipped models do not record their training and sweep times")
    gpu = (record["machine"] or {}).get("device_name")
    runs = {run: {"train": s, "eval": record["eval_seconds"][run], "sweep": record["sweep_seconds"][run]}
            for run, s in record["seconds"].items()}
    estimate = gpu_estimate.t4_estimate(runs, gpu)
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
