"""Manifestation sweep: one trained model, evaluated on many graphs without retraining.

For every (scheme, N_t) of a grid the model is evaluated on the test images with that
manifestation (:meth:`ContinuousNet.manifested`); for every compressed M its θ(t) is
projected onto M basis functions (:meth:`ContinuousNet.project`, on a deep copy) and
evaluated at N_t = M; and once with every OdeBlock replaced by the identity, which says how
much the blocks matter at all.  Each row records test accuracy, inference seconds, residual
evaluations per image (the field ``units``: stages × N_t summed over blocks; the paper's Table 1 calls the steps per
block its *units*, 32-32-32, and the book's pages say "evaluations of R" for this count) and parameter count.

The command line is ``python -m cnet_lib sweep CHECKPOINT`` (:mod:`cnet_lib.cli.sweep`).
"""
from __future__ import annotations

import contextlib
import copy
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence

import torch
from torch import nn

from ...core.models import ContinuousNet
from ...core.odeblock import OdeBlock
from ...core.schemes import get_scheme
from ...core.validation import check_int, check_ints
from ...runtime.checkpoint import atomic_write_text
from ...runtime.device import environment
from ...runtime.memory import out_of_memory_hint
from ...runtime.progress import progress_bar
from ...runtime.rows import find_row
from ...runtime.settings import Settings
from ...runtime.threads import image_step_flops, threads_for, torch_threads
from ...runtime.vocabulary import run_label
from ..data.image_data import TEST_SUBSET_SEED, load_dataset
from ..runs.image_presets import IMAGE_PRESETS, sweep_grid
from ..training.evaluation import evaluate
from ..training.train_state import load_model

__all__ = ["DEFAULT_GRID", "ROW_FIELDS", "check_grid_keys", "checked_rows", "fit_grid", "manifestation_sweep",
           "sweep_checkpoint", "write_sweep", "table1_rows", "sweep_images"]

DEFAULT_GRID = dict(schemes=("euler", "midpoint", "rk4_classic", "rk4_38"), n_steps=(1, 2, 4, 8, 16),
                    compress=(1, 2, 4), compress_schemes=None)
ROW_FIELDS = ("kind", "scheme", "n_steps", "n_basis", "units", "n_parameters", "accuracy", "seconds", "ms_per_image")
"""The fields every row of a sweep has (the figures and tables read them)."""
_KINDS = ("trained", "manifestation", "compressed", "identity")


def check_grid_keys(grid: Mapping) -> dict:
    """``grid`` as a dict, after checking that it names only the keys of :data:`DEFAULT_GRID`."""
    if not isinstance(grid, Mapping):
        raise TypeError(f"a sweep grid must be a dict of {', '.join(DEFAULT_GRID)}, got {grid!r:.60}")
    unknown = [k for k in grid if k not in DEFAULT_GRID]
    if unknown:
        raise ValueError(f"unknown sweep grid key {unknown[0]!r}: a sweep grid has {', '.join(DEFAULT_GRID)} "
                         "(e.g. grid=dict(schemes=('euler',), n_steps=(1, 2)))")
    return dict(grid)


def checked_rows(rows, fields: Sequence[str] = ROW_FIELDS) -> list:
    """``rows`` of a sweep read back from a file, after checking that they are what :func:`manifestation_sweep`
    writes: a list of dicts with every one of ``fields`` (default :data:`ROW_FIELDS`), a known kind, an accuracy
    from 0 to 1 (and a time >= 0 where there is one), one trained row; a ValueError says what is not."""
    if not isinstance(rows, list) or not rows:
        raise ValueError(f"the rows are {type(rows).__name__ if rows else 'empty'}, not a list of evaluations")
    for i, row in enumerate(rows):
        missing = [f for f in fields if f not in row] if isinstance(row, dict) else list(fields)
        if missing:
            raise ValueError(f"row {i} lacks {', '.join(missing[:3])}")
        acc, sec = row["accuracy"], row.get("seconds", 0.0)
        if row["kind"] not in _KINDS or not isinstance(acc, (int, float)) or not 0 <= acc <= 1 or \
                not isinstance(sec, (int, float)) or not sec >= 0:
            raise ValueError(f"row {i} is not an evaluation (kind {str(row['kind'])[:20]!r}, accuracy "
                             f"{str(acc)[:20]}, seconds {str(sec)[:20]})")
    if not any(row["kind"] == "trained" for row in rows):
        raise ValueError("no row is the trained graph's")
    return rows


def _units(model: ContinuousNet) -> int:
    return sum(b.scheme.stages * b.n_steps for b in model.blocks)


def _uniform(values: list):
    return values[0] if len(set(values)) == 1 else list(values)


def _row(kind: str, model: Optional[ContinuousNet], acc: float, seconds: float, n_images: int, **fields) -> dict:
    row = {"kind": kind}
    if model is not None:
        row.update(scheme=_uniform([b.scheme.name for b in model.blocks]),
                   n_steps=_uniform([b.n_steps for b in model.blocks]),
                   n_basis=_uniform([b.n_basis for b in model.blocks]),
                   units=_units(model), n_parameters=model.n_parameters())
    row.update(fields)
    row.update(accuracy=acc, seconds=seconds, ms_per_image=1000.0 * seconds / max(n_images, 1))
    return row


def _eval_threads(model: ContinuousNet, batch: int, device: torch.device, override: Optional[int]) -> Optional[int]:
    """On the CPU, torch threads for evaluating ``model`` on batches of ``batch`` images (a
    forward pass is a third of a training step's work; ``override``, a session's ``threads``
    setting, when given); ``None`` on a GPU."""
    if device.type != "cpu":
        return None
    blocks = [b for b in model.blocks if isinstance(b, OdeBlock)]
    if not blocks:
        return threads_for(0.0, override=override)
    flops = image_step_flops(model.config()["channels"], batch, blocks[0].scheme.stages, [b.n_steps for b in blocks])
    return threads_for(flops / 3, override=override)


def _largest_m(model: ContinuousNet) -> int:
    return max(b.n_basis for b in model.blocks)


def fit_grid(grid: dict, model: ContinuousNet) -> dict:
    """``grid`` with the compressions a shared grid holds but ``model`` cannot take (M at or above
    the model's largest M) left out: for a preset's or the default grid, which serves models of
    different M.  A grid a user writes is checked by :func:`manifestation_sweep` instead, which
    refuses such values."""
    out = dict(grid)
    if out.get("compress") is not None:
        out["compress"] = tuple(m for m in out["compress"] if int(m) < _largest_m(model))
    return out


def _check_grid(model: ContinuousNet, schemes, n_steps, compress, compress_schemes, batch_size) -> tuple:
    """The grid's values checked before any work: ``(n_steps, compress)`` as tuples of ints."""
    for s in list(schemes) + list(compress_schemes or []):
        get_scheme(s)  # unknown names fail before any work
    n_steps = check_ints("n_steps", n_steps, low=1, example=(1, 2, 4))
    compress = check_ints("compress", compress, low=1, example=(1, 2))
    top = _largest_m(model)
    too_big = [m for m in compress if m >= top]
    if too_big:
        raise ValueError(f"compress holds M = {', '.join(map(str, too_big))}, but the model has M = {top} basis "
                         f"functions: compressing means fewer, so give values from 1 to {top - 1}"
                         if top > 1 else f"compress holds M = {too_big[0]}, but the model has M = 1 basis function "
                         "already: it cannot be compressed (give compress=())")
    check_int("batch_size", batch_size, low=1, example=500)
    return n_steps, compress


def _identity_copy(model: ContinuousNet) -> ContinuousNet:
    m = copy.deepcopy(model)
    m.blocks = nn.ModuleList(nn.Identity() for _ in m.blocks)
    return m


def manifestation_sweep(
    model: ContinuousNet,
    x: torch.Tensor,
    y: torch.Tensor,
    mean: torch.Tensor,
    std: torch.Tensor,
    schemes: Sequence[str] = DEFAULT_GRID["schemes"],
    n_steps: Sequence[int] = DEFAULT_GRID["n_steps"],
    compress: Optional[Iterable[int]] = None,
    compress_schemes: Optional[Sequence[str]] = None,
    batch_size: int = 500,
    amp: bool = True,
    progress: bool = True,
    graphs: bool = True,
    threads: Optional[int] = None,
) -> list[dict]:
    """Tidy rows (one dict per evaluation) for the trained model on uint8 test images ``x``.

    Kinds: ``trained`` (its own graph), ``manifestation`` (every scheme × N_t of the grid),
    ``compressed`` (θ projected to M < the trained M, for each of ``compress_schemes``, default
    the trained scheme, at N_t = M), ``identity`` (every OdeBlock replaced by the identity).
    The model itself is left as it was.  Every value is checked first: N_t and M must be integers
    >= 1 (no float is rounded), every M of ``compress`` below the model's largest M
    (:func:`fit_grid` leaves out those a shared grid holds), ``batch_size`` >= 1.  ``compress=None``
    takes the compressions of :data:`DEFAULT_GRID` that fit the model.  ``graphs=False`` never
    replays CUDA graphs; ``threads`` sets the CPU threads (default: from the work).
    """
    if compress is None:
        compress = fit_grid(DEFAULT_GRID, model)["compress"]
    n_steps, compress = _check_grid(model, schemes, n_steps, compress, compress_schemes, batch_size)
    if len(y) == 0 or len(x) != len(y):
        raise ValueError(f"a sweep needs test images and one label per image, got {len(x)} images and {len(y)} labels"
                         " (e.g. n_test=2000)")
    c_schemes = list(compress_schemes) if compress_schemes else [model.blocks[0].manifestation[0]]
    jobs = 2 + len(schemes) * len(n_steps) + len(sorted(set(compress))) * len(c_schemes)
    n = len(y)
    bar = progress_bar(total=jobs, desc="manifestation sweep", disable=not progress)

    def run(m: nn.Module) -> tuple[float, float]:
        threads_now = _eval_threads(m, min(batch_size, n), x.device, threads)
        with torch_threads(threads_now) if threads_now else contextlib.nullcontext():
            evaluate(m, x[: min(batch_size, n)], y[: min(batch_size, n)], mean, std, batch_size, amp, graphs)  # warm-up
            out = evaluate(m, x, y, mean, std, batch_size, amp, graphs)
        bar.update(1)
        return out

    was_training = model.training
    model.eval()
    try:
        return _sweep_rows(model, run, n, schemes, n_steps, sorted(set(compress)), c_schemes)
    finally:
        bar.close()
        model.train(was_training)


def _sweep_rows(model: ContinuousNet, run, n: int, schemes, n_steps, compress, c_schemes) -> list[dict]:
    """The rows of :func:`manifestation_sweep`, each evaluation done by ``run(model) -> (accuracy, seconds)``."""
    trained_manif = [b.manifestation for b in model.blocks]
    trained_m = [b.n_basis for b in model.blocks]
    acc, sec = run(model)
    rows = [_row("trained", model, acc, sec, n)]
    for s in schemes:
        for nt in n_steps:
            with model.manifested(s, int(nt)):
                acc, sec = run(model)
                same = [b.manifestation for b in model.blocks] == trained_manif
                rows.append(_row("manifestation", model, acc, sec, n, is_trained=same))
    for s in c_schemes:
        for m in compress:
            small = copy.deepcopy(model).project([min(m, mb) for mb in trained_m])
            small.manifest(s)
            acc, sec = run(small)
            rows.append(_row("compressed", small, acc, sec, n, compressed_from=_uniform(trained_m)))
    ident = _identity_copy(model)
    acc, sec = run(ident)
    rows.append(_row("identity", None, acc, sec, n, scheme=None, n_steps=0, n_basis=0, units=0,
                     n_parameters=ident.n_parameters()))
    return rows


def write_sweep(path, rows: Sequence[dict], **meta) -> Path:
    """Write ``{"rows": rows, **meta, "created_utc"}`` as JSON, atomically."""
    path = Path(path)
    payload = {**meta, "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"), "rows": list(rows)}
    atomic_write_text(path, json.dumps(payload, indent=1))
    return path


def sweep_checkpoint(
    checkpoint,
    settings: Optional[Settings] = None,
    *,
    data_dir=None,
    n_test: Optional[int] = None,
    device=None,
    grid: Optional[dict] = None,
    batch_size: int = 500,
    progress: bool = True,
) -> tuple[list[dict], dict]:
    """Sweep the model of a training checkpoint on its run's test split; returns (rows, meta).

    ``settings`` (a session's; default :class:`cnet_lib.runtime.settings.Settings`'s defaults) gives the
    device (unless ``device``), the data folder when neither ``data_dir`` nor the run names one, the
    mirror a missing data set is downloaded from, CUDA graphs and CPU threads.  ``n_test`` defaults to
    the run's own subset, so the ``trained`` row reproduces the accuracy in its history.  ``grid``
    (schemes, n_steps, compress, compress_schemes) defaults to the run's preset grid, else
    :data:`DEFAULT_GRID` (each fitted to the model, :func:`fit_grid`); a partial ``grid`` fills its
    missing keys from the fitted :data:`DEFAULT_GRID`.  Running out of memory raises
    :class:`cnet_lib.runtime.memory.OutOfMemory` with a smaller batch size to try.
    """
    settings = settings if settings is not None else Settings()
    if n_test is not None:
        check_int("n_test", n_test, low=1, example=2000)
    check_int("batch_size", batch_size, low=1, example=500)
    model, ck = load_model(checkpoint, device if device is not None else settings.device)
    dev = next(model.parameters()).device
    run = ck["extra"].get("run_config", {})
    preset = run.get("preset")
    if grid is None:
        grid = fit_grid(sweep_grid(preset) if preset in IMAGE_PRESETS else dict(DEFAULT_GRID), model)
    else:
        grid = {**fit_grid(dict(DEFAULT_GRID), model), **check_grid_keys(grid)}
    dataset = run.get("dataset", "cifar10")
    data_dir = next(d for d in (data_dir, run.get("data_dir"), settings.data_dir) if d is not None)
    data = load_dataset(dataset, data_dir, n_train=None, n_test=n_test if n_test is not None else run.get("n_test"),
                        seed=run.get("seed", 0), device=dev, progress=progress, test_seed=TEST_SUBSET_SEED,
                        **settings.download_source(dataset))
    with out_of_memory_hint(dev, f"sweeping {checkpoint}", batch_size):
        rows = manifestation_sweep(model, data.test_x, data.test_y, data.mean, data.std, batch_size=batch_size,
                                   progress=progress, amp=run.get("amp", True), graphs=settings.cuda_graphs,
                                   threads=settings.threads, **grid)
    meta = {"checkpoint": str(checkpoint), "preset": preset, "run_name": run.get("run_name"), "seed": run.get("seed"),
            "dataset": data.name, "n_test": len(data.test_y), "grid": grid, "environment": environment(dev),
            "epochs_trained": ck["extra"].get("epoch")}
    return rows, meta


def table1_rows(sweeps: Mapping[str, Sequence[dict]], schemes: Optional[Sequence[str]] = None) -> list[dict]:
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


def sweep_images(rows: Sequence[dict]) -> int:
    """How many images a sweep's ``rows`` were measured on: each row's seconds over its milliseconds per image (a
    shipped sweep was measured where its model was studied, not on this machine's data folder, whose test split may
    be another size)."""
    row = next(r for r in rows if r.get("ms_per_image"))
    return round(1000.0 * row["seconds"] / row["ms_per_image"])
