"""The manifestation study's numbers: one trained ContinuousNet evaluated on many graphs, which graphs judge it, and
what the evaluations say.  Numbers only: its tables, sentences, figures and live app are :mod:`.show`.

* **The sweeps** (:func:`run`): each trained run's manifestation sweep
  (:func:`cnet_lib.images.training.evaluation.manifestation_sweep`: every scheme × N_t of the preset's grid, θ(t)
  compressed to fewer pieces, and the model without its blocks), computed once and cached beside its checkpoint through
  the one study runner; a sweep shipped with a model is read on any machine.  :func:`sweep_checkpoint` sweeps one
  checkpoint (the ``sweep`` command); :func:`table1_rows` gives rows like the paper's Table 1.
* **The graph rule** (:func:`graph_kind`): which graphs judge a trained model.  A graph (scheme, N_t) evaluated on the
  trained θ(t) tests manifestation invariance only when it is *at least as accurate a discretisation* of the trained
  model's ODE as its own graph:

  1. its steps align with θ's pieces: every break point of θ's basis is a step boundary
     (:meth:`cnet_lib.core.bases.Basis.steps_align`: N_t a multiple of M for piecewise-constant θ).  A step that holds a
     jump of θ integrates a right-hand side that jumps within the step, and the scheme loses its order there; such a
     graph is no finer discretisation, however many steps it has;
  2. its scheme's order is at least the training scheme's (a fourth-order model is not judged on Euler);
  3. its N_t is at least the trained N_t (in every block).

  A graph that meets 1-3 is ``"valid"``: the verdicts take the worst of these.  One that meets 2 and 3 but not 1
  ``"straddles"`` θ's jumps: shown apart, never judged.  The others are ``"coarser"`` or ``"lower order"``: shown,
  not judged.  The rule is post hoc: it was set after the ``gpu`` preset's three training seeds had been judged on
  every graph (the CHANGELOG, issue 40, keeps when and what it replaced).
* **The verdict** of one pair of models (:func:`judge`): do the blocks matter, and does the paper's contrast appear
  (the Euler-trained model loses :data:`KEEP_POINTS` or more on some valid graph, the RK4-trained one less on all)?
* **Over training seeds** (:func:`over_seeds`): the same, with Welch's t-test of the seeds' worst valid losses, the
  training seed as the unit.
* **Integrator × refinement** (:func:`factorial_over_seeds`, :func:`shipped_factorial`): the main runs with the control
  runs, the two factors' effects on the worst valid loss; and how far apart neighbouring pieces of each cell's θ(t)
  lie (:func:`shipped_roughness`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

from ...images.data.image_data import TEST_SUBSET_SEED, load_dataset
from ...images.runs.image_presets import IMAGE_PRESETS, short_hash, sweep_grid
from ...images.runs.run_loading import StudyRun, study_device
from ...images.runs.shipped import SHIPPED
from ...images.runs.study_inputs import study_data
from ...images.runs.theta_record import theta_roughness
from ...images.training.evaluation import DEFAULT_GRID, check_grid_keys, checked_rows, fit_grid, manifestation_sweep
from ...images.training.train_state import CHECKPOINT, load_model
from ...core.bases import make_basis
from ...core.schemes import get_scheme
from ...core.validation import check_int
from ...runtime.checkpoint import atomic_write_text
from ...runtime.device import amp_dtype, environment, out_of_memory_hint
from ...runtime.rich_text import find_row, run_label
from ...runtime.settings import Settings
from ..runner import (Described, StudyFile, announce_recompute, cached_study, check_study_inputs, seed_sweeps,
    shipped_seeds, shipped_stand_ins, shipped_sweep_file)
from ..stats import KEEP_POINTS, holm, spread, welch

__all__ = ["KEEP_POINTS", "SWEEP_PREFIX", "BF16_NOTE", "sweep_cache", "run", "seed_sweeps", "sweep_checkpoint",
           "write_sweep", "table1_rows", "sweep_images", "GRAPH_KINDS", "graph_kind", "graphs_of_kind", "trained_row",
           "Verdict", "worst_loss", "judge", "SeedContrast", "over_seeds", "CELLS", "EFFECTS", "Factorial",
           "factorial_over_seeds", "shipped_factorial", "shipped_roughness"]


# --------------------------------------------------------------------------- the sweeps, cached
SWEEP_PREFIX = "sweep-"
"""The cache file's name starts with this (the ship command copies such files)."""

BF16_NOTE = ("; computed with bf16 autocast, which this GPU lacks: the sweep shipped with the book is shown instead of "
             "minutes of recomputing it in float32; a model you train yourself is swept here")
"""Said after "loaded from ..." when a GPU without bf16 shows the bf16 sweep a shipped model brought along."""


def sweep_cache(run: StudyRun, grid: Mapping, device) -> tuple:
    """``(path, key)`` of the cached sweep of ``run`` over ``grid`` on ``device`` (a torch.device)."""
    cfg = run.config
    key = {"checkpoint": run.checkpoint_digest[:12], "grid": dict(grid), "n_test": cfg.n_test, "seed": cfg.seed,
           "dataset": cfg.dataset, "device": device.type, "amp": bool(cfg.amp and amp_dtype(device) is not None)}
    return run.out_dir / f"{SWEEP_PREFIX}{short_hash(key, 12)}.json", key


def _shipped_bf16_sweep(run: StudyRun, key: Mapping, dev) -> tuple:
    """The sweep shipped with a model that was swept with bf16 autocast, for a CUDA GPU without bf16 (a T4),
    whose own key says float32: ``(StudyFile,)``; none for any other run or device."""
    if not (run.shipped and dev.type == "cuda" and not key["amp"] and run.config.amp):
        return ()
    alt = {**key, "amp": True}
    return (StudyFile(run.out_dir / f"{SWEEP_PREFIX}{short_hash(alt, 12)}.json", alt, BF16_NOTE),)


def _shipped_sweeps(run: StudyRun, key: Mapping, dev) -> tuple:
    """Every sweep shipped with ``run`` that measured what ``key`` asks for, on whatever device it ran
    (:func:`cnet_lib.studies.runner.shipped_stand_ins`), the bf16 one for a GPU without bf16 first."""
    first = _shipped_bf16_sweep(run, key, dev)
    return first + tuple(f for f in shipped_stand_ins(run, SWEEP_PREFIX, key) if f.path not in {g.path for g in first})


def run(runs: Mapping[str, StudyRun], grid: Optional[dict] = None, *, device=None, progress: bool = False,
        verbose: bool = True, batch_size: int = 500) -> dict[str, list[dict]]:
    """The manifestation sweep of every run, computed once and cached beside its checkpoint.

    The cache file is ``sweep-<hash>.json`` where the hash covers the checkpoint's SHA-256, the
    grid, the test split, the device type and whether bf16 autocast is used (inference times and
    bf16 accuracy differ on a GPU).  ``grid`` defaults to the preset's; compressions to an M at or
    above a model's own are left out for that model (:func:`cnet_lib.images.training.evaluation.fit_grid`),
    any other bad value is refused.  ``device`` defaults to the session's (:func:`study_device`).
    ``batch_size`` (images per evaluation batch, not part of the key) is what to lower when the device runs
    out of memory; the error says to what.
    """
    check_int("batch_size", batch_size, low=1, example=500)
    check_study_inputs(runs)
    out = {}
    for name, one in runs.items():
        cfg = one.config
        g = check_grid_keys(grid) if grid is not None else sweep_grid(cfg.preset)
        dev = study_device(one, device)
        path, key = sweep_cache(one, g, dev)

        def compute(one=one, name=name, cfg=cfg, g=g, dev=dev):
            announce_recompute(one, SWEEP_PREFIX, f"{one.label}: the sweep")
            data = study_data(cfg, one.settings, dev, with_train=False)
            rows = manifestation_sweep(one.model.to(dev), data.test_x, data.test_y, data.mean, data.std,
                                       amp=cfg.amp, progress=progress, batch_size=batch_size, graphs=cfg.cuda_graphs,
                                       threads=cfg.threads, **fit_grid(g, one.model))
            return rows, {"run": name, "preset": cfg.preset, "n_test": len(data.test_y), "rows": rows}

        described = Described(f"{one.label}: the sweep", f"{one.label}: sweep", f"sweeping {one.label}")
        done = cached_study(StudyFile(path, key), compute, described, fields=("rows",), device=dev,
                            batch_size=batch_size, read=lambda record: checked_rows(record["rows"]),
                            also=_shipped_sweeps(one, key, dev), verbose=verbose, indent=1)
        if verbose and done.computed:
            print(f"{one.label}: swept {len(done.value)} evaluations on {done.record['n_test']} held-out images in "
                  f"{done.record['seconds']:.1f} s" + (" (kept for the next time)" if done.kept else ""))
        out[name] = done.value
    return out


# --------------------------------------------------------------------------- one checkpoint, and Table 1
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
    :class:`cnet_lib.runtime.device.OutOfMemory` with a smaller batch size to try.
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


# --------------------------------------------------------------------------- the graph rule
GRAPH_KINDS = ("trained", "valid", "straddles", "coarser", "lower order")
"""What a manifestation row is for the model whose sweep it is in (:func:`graph_kind`)."""


def _per_block(value: Union[int, Sequence[int]], n_blocks: int) -> list[int]:
    return list(value) if isinstance(value, (list, tuple)) else [value] * n_blocks


def _scheme(value) -> str:
    """A row's scheme: one name (the blocks share it), or the first of a list whose names agree."""
    if isinstance(value, (list, tuple)):
        if len(set(value)) != 1:
            raise ValueError(f"a graph with different schemes per block cannot be judged: {value}")
        return value[0]
    return value


def trained_row(rows: Sequence[dict]) -> dict:
    """The row of kind ``"trained"`` of one model's sweep."""
    found = [r for r in rows if r.get("kind") == "trained"]
    if len(found) != 1:
        raise ValueError(f"a sweep has exactly one row of kind 'trained', these rows have {len(found)}")
    return found[0]


def graph_kind(row: dict, trained: dict, basis: str = "piecewise_constant") -> str:
    """Which of :data:`GRAPH_KINDS` the manifestation ``row`` is, for the model whose trained graph is ``trained``
    (both rows of one sweep: ``scheme``, ``n_steps`` and ``n_basis``, an int or one per block) and whose θ(t) lives
    in ``basis``.  The conditions are checked in this order: trained graph, coarser, lower order, straddles, valid."""
    if row.get("kind") != "manifestation":
        raise ValueError(f"only manifestation rows are graphs of the trained θ(t); this row is {row.get('kind')!r}")
    if row.get("is_trained"):
        return "trained"
    lists = [v for v in (row["n_steps"], trained["n_steps"], trained["n_basis"]) if isinstance(v, (list, tuple))]
    n_blocks = len(lists[0]) if lists else 1
    steps, trained_steps = _per_block(row["n_steps"], n_blocks), _per_block(trained["n_steps"], n_blocks)
    pieces = _per_block(trained["n_basis"], n_blocks)
    if any(n < t for n, t in zip(steps, trained_steps)):
        return "coarser"
    if get_scheme(_scheme(row["scheme"])).order < get_scheme(_scheme(trained["scheme"])).order:
        return "lower order"
    if not all(make_basis(basis, m).steps_align(n) for n, m in zip(steps, pieces)):
        return "straddles"
    return "valid"


def graphs_of_kind(rows: Sequence[dict], kind: str, basis: str = "piecewise_constant") -> list[dict]:
    """The manifestation rows of one model's sweep that are of ``kind`` (:func:`graph_kind`)."""
    if kind not in GRAPH_KINDS:
        raise ValueError(f"unknown graph kind {kind!r}; the kinds are {', '.join(GRAPH_KINDS)}")
    tr = trained_row(rows)
    return [r for r in rows if r.get("kind") == "manifestation" and graph_kind(r, tr, basis) == kind]


# --------------------------------------------------------------------------- the verdict of one pair
@dataclass
class Verdict:
    """What the numbers say (in words: :func:`.show.word_verdict`)."""

    blocks_matter: bool
    contrast: bool
    gaps: dict  # run -> trained minus identity accuracy, in points
    drops: dict  # run -> largest loss on a valid graph (graph_kind), in points
    euler: str = "euler_fixed"
    rk4: str = "rk4_refined"
    thresholds: dict = field(default_factory=dict)  # matter_points, lose_points, hold_points
    rows: dict = field(default_factory=dict)  # run -> its sweep rows
    straddle_drops: dict = field(default_factory=dict)  # run -> largest loss on graphs whose steps cross θ's jumps
    basis: str = "piecewise_constant"


def worst_loss(rows: Sequence[dict], kind: str = "valid", basis: str = "piecewise_constant") -> tuple[float, Optional[dict]]:
    """The largest loss (points) of one model's sweep ``rows`` on its graphs of ``kind`` (:func:`graph_kind`) below
    its own graph, and that graph's row; ``(nan, None)`` when the sweep has no graph of that kind."""
    tr = find_row(rows, kind="trained")
    graphs = graphs_of_kind(rows, kind, basis)
    if not graphs:
        return float("nan"), None
    worst = min(graphs, key=lambda r: r["accuracy"])
    return 100.0 * (tr["accuracy"] - worst["accuracy"]), worst


def judge(rows: Mapping[str, Sequence[dict]], *, euler: str = "euler_fixed", rk4: str = "rk4_refined",
          matter_points: float = 10.0, lose_points: float = KEEP_POINTS, hold_points: float = KEEP_POINTS,
          basis: str = "piecewise_constant") -> Verdict:
    """Judge a pair of sweeps ``{run: rows}`` (Euler-trained ``euler``, RK4-trained ``rk4``, θ(t) in ``basis``),
    without words.

    * the blocks **matter** when, for both models, removing every OdeBlock (the ``identity`` row)
      costs at least ``matter_points`` percentage points of accuracy;
    * the **contrast** of the paper appears when the blocks matter and, on the *valid* graphs of each model
      (:func:`graph_kind`: steps aligned with θ's pieces, order ≥ the training scheme's, N_t ≥ the
      trained N_t), the Euler-trained model loses at least ``lose_points`` points somewhere while the
      RK4-trained model loses less than ``hold_points`` everywhere (both :data:`KEEP_POINTS` by default, the book's one
      threshold for "keeps its accuracy").

    The losses on graphs whose steps cross θ's jumps are kept apart (``straddle_drops``): they are shown, never
    judged.
    """
    for name in (euler, rk4):
        if (name not in rows or find_row(rows[name], kind="trained", default=None) is None
                or find_row(rows[name], kind="identity", default=None) is None):
            raise ValueError(f"need sweep rows with 'trained' and 'identity' rows for {name!r}; got runs {list(rows)}")
    gaps, drops, straddle = {}, {}, {}
    for name in (euler, rk4):
        tr, ident = find_row(rows[name], kind="trained"), find_row(rows[name], kind="identity")
        gaps[name] = 100.0 * (tr["accuracy"] - ident["accuracy"])
        drops[name] = worst_loss(rows[name], "valid", basis)[0]
        straddle[name] = worst_loss(rows[name], "straddles", basis)[0]
    matter = all(g >= matter_points for g in gaps.values())
    contrast = bool(matter and drops[euler] >= lose_points and drops[rk4] < hold_points)
    return Verdict(matter, contrast, gaps, drops, euler, rk4,
                   dict(matter_points=matter_points, lose_points=lose_points, hold_points=hold_points),
                   {euler: list(rows[euler]), rk4: list(rows[rk4])}, straddle, basis)


# --------------------------------------------------------------------------- the contrast over training seeds
@dataclass
class SeedContrast:
    """The contrast over seeds: ``rows`` (one per graph: ``graph``, its ``kinds`` per run, and per run a ``spread``
    of its accuracy in %), per-seed ``gaps`` (blocks worth), ``drops`` (worst loss on the valid graphs) and
    ``straddle_drops`` (on the graphs whose steps cross θ's jumps, shown apart), and ``methods``: Welch's test of
    Euler's drops minus RK4's (``None`` with fewer than two seeds)."""

    euler: str
    rk4: str
    seeds: list
    rows: list
    gaps: dict
    drops: dict
    blocks_matter: bool
    thresholds: dict
    methods: Optional[dict] = None
    outcome: str = "one seed"  # "contrast", "contradicted", "no contrast", "blocks do not matter", "one seed"
    straddle_drops: dict = field(default_factory=dict)  # run -> per seed, worst loss on steps that cross θ's jumps
    basis: str = "piecewise_constant"


def _graph_kinds(rows: Sequence[dict], basis: str) -> dict:
    """``{(scheme, N_t): kind}`` of one model's manifestation rows (:func:`graph_kind`)."""
    tr = trained_row(rows)
    return {(r["scheme"], r["n_steps"]): graph_kind(r, tr, basis) for r in rows
            if r["kind"] == "manifestation" and isinstance(r["n_steps"], int)}


def _contrast_rows(sweeps_by_seed: Mapping[Any, Mapping[str, Sequence[dict]]], runs: Sequence[str], basis: str) -> list:
    """The table's rows: each model's own graph, every graph that is valid or crosses θ's jumps for one of the models
    (and that every seed's sweep has), and the model without its blocks; each graph row holds its kind per model."""
    seeds = list(sweeps_by_seed)
    first = sweeps_by_seed[seeds[0]]
    kinds = {run: _graph_kinds(first[run], basis) for run in runs}
    keys = [k for k in dict.fromkeys(k for run in runs for k in kinds[run])
            if all(k in kinds[run] for run in runs) and any(kinds[run][k] in ("valid", "straddles") for run in runs)
            and all(find_row(s[run], kind="manifestation", scheme=k[0], n_steps=k[1], default=None) is not None
                    for s in sweeps_by_seed.values() for run in runs)]
    order = list(dict.fromkeys(k[0] for k in keys))
    keys.sort(key=lambda k: (order.index(k[0]), k[1]))

    def row(graph: str, pick, kind: dict) -> dict:
        return {"graph": graph, "kinds": kind,
                **{run: spread([100 * pick(s[run])["accuracy"] for s in sweeps_by_seed.values()]) for run in runs}}

    out = [row("own graph (trained)", lambda rows: find_row(rows, kind="trained"), {run: "trained" for run in runs})]
    out += [row(f"{s}, N_t = {n}", lambda rows, s=s, n=n: find_row(rows, kind="manifestation", scheme=s, n_steps=n),
                {run: kinds[run][(s, n)] for run in runs}) for s, n in keys]
    out.append(row("blocks removed", lambda rows: find_row(rows, kind="identity"), {run: "identity" for run in runs}))
    return out


def over_seeds(sweeps_by_seed: Mapping[Any, Mapping[str, Sequence[dict]]], *, euler: str = "euler_fixed",
               rk4: str = "rk4_refined", matter_points: float = 10.0, lose_points: float = KEEP_POINTS,
               hold_points: float = KEEP_POINTS, alpha: float = 0.05, basis: str = "piecewise_constant") -> SeedContrast:
    """The contrast of :func:`judge` over ``sweeps_by_seed`` (training seed -> ``{run: sweep rows}``, both runs of
    every seed).  The table holds each model's own graph, every graph that is valid or crosses θ's jumps for one of
    the models (:func:`graph_kind`) and that every seed's sweep has, and the model without its blocks.  With two or more seeds, Welch's t-test (seed as unit) compares the
    seeds' worst losses on their valid graphs; the contrast **holds across seeds** when the blocks matter in every
    seed, the (1 − ``alpha``) interval of Euler's mean loss minus RK4's lies above 0, Euler's mean loss is at least
    ``lose_points`` and RK4's below ``hold_points`` (both :data:`KEEP_POINTS` by default); it is
    **contradicted** when the interval lies below 0 (the RK4-trained models lose more).  The graphs that cross θ's jumps
    never enter the test."""
    if not sweeps_by_seed:
        raise ValueError("sweeps_by_seed is empty: give {seed: {run: sweep rows}} for at least one training seed")
    verdicts = {seed: judge(s, euler=euler, rk4=rk4, matter_points=matter_points, lose_points=lose_points,
                            hold_points=hold_points, basis=basis) for seed, s in sweeps_by_seed.items()}
    gaps = {run: [v.gaps[run] for v in verdicts.values()] for run in (euler, rk4)}
    drops = {run: [v.drops[run] for v in verdicts.values()] for run in (euler, rk4)}
    straddle = {run: [v.straddle_drops[run] for v in verdicts.values()] for run in (euler, rk4)}
    matter = all(v.blocks_matter for v in verdicts.values())
    th = dict(matter_points=matter_points, lose_points=lose_points, hold_points=hold_points, alpha=alpha)
    c = SeedContrast(euler, rk4, list(sweeps_by_seed), _contrast_rows(sweeps_by_seed, (euler, rk4), basis),
                     gaps, drops, matter, th, straddle_drops=straddle, basis=basis)
    if len(c.seeds) < 2:
        return c
    c.methods = welch(drops[rk4], drops[euler], alpha)
    mean = {run: sum(d) / len(d) for run, d in drops.items()}
    if not matter:
        c.outcome = "blocks do not matter"
    elif c.methods["ci95"][0] > 0 and mean[euler] >= lose_points and mean[rk4] < hold_points:
        c.outcome = "contrast"
    elif c.methods["ci95"][1] < 0:
        c.outcome = "contradicted"
    else:
        c.outcome = "no contrast"
    return c


# --------------------------------------------------------------------------- integrator x refinement
# The main runs differ in two ways at once: ``rk4_refined`` is RK4-classic grown by refinement, ``euler_fixed`` is
# Euler at its final depth from the start, so a difference between them may come from either.  The control runs
# (cnet_lib.images.runs.image_presets.CONTROLS: RK4-classic at fixed depth, Euler refined on the same schedule) fill
# the other two cells of the 2 x 2, with the same data, recipe and final M.  Per cell: the accuracy on its own graph,
# what its blocks are worth, its worst loss on its valid graphs and on the graphs that cross θ's jumps; and the
# effects on the worst valid loss, per seed: the integrator's (Euler's loss minus RK4's, at each level of refinement)
# and refinement's (the fixed-depth model's minus the refined one's, for each integrator).  The main runs' contrast
# is the sum of one of each.  With one seed per cell the numbers describe four models (exploratory); with two or more
# each effect gets Welch's interval (the training seed as the unit), and the four factor effects' p values are
# adjusted together by Holm's method (the main runs' contrast is their sum, not a fifth test).
CELLS = {("rk4_classic", "refined"): "rk4_refined", ("rk4_classic", "fixed depth"): "rk4_fixed",
         ("euler", "refined"): "euler_refined", ("euler", "fixed depth"): "euler_fixed"}
"""The run of each cell: (integrator, refinement) -> run name."""

EFFECTS = {
    "integrator, refined": ("euler_refined", "rk4_refined"),
    "integrator, fixed depth": ("euler_fixed", "rk4_fixed"),
    "refinement, Euler": ("euler_fixed", "euler_refined"),
    "refinement, RK4": ("rk4_fixed", "rk4_refined"),
    "main runs' contrast": ("euler_fixed", "rk4_refined"),
}
"""Each effect on the worst valid loss as (the run whose loss counts +, the run whose loss counts −)."""


@dataclass
class Factorial:
    """The 2 x 2 over seeds: ``cells`` (run -> ``own``, ``gap``, ``valid``, ``straddles``: one value per seed, in % or
    points), ``effects`` (name -> one value per seed, points, and with two or more seeds Welch's test), the seeds,
    the preset, and the runs with no sweep (``missing``: then no effect is computed)."""

    preset: Optional[str]
    seeds: list
    cells: dict
    effects: dict = field(default_factory=dict)
    missing: list = field(default_factory=list)
    n_images: Optional[int] = None
    basis: str = "piecewise_constant"
    asked: Optional[str] = None  # the preset asked for, when its cells did not ship and ``preset``'s are shown

    @property
    def complete(self) -> bool:
        return not self.missing


def _cell(rows: Sequence[dict], basis: str) -> dict:
    tr, ident = find_row(rows, kind="trained"), find_row(rows, kind="identity")
    return {"own": 100.0 * tr["accuracy"], "gap": 100.0 * (tr["accuracy"] - ident["accuracy"]),
            "valid": worst_loss(rows, "valid", basis)[0], "straddles": worst_loss(rows, "straddles", basis)[0]}


def factorial_over_seeds(sweeps_by_seed: Mapping[Any, Mapping[str, Sequence[dict]]], *, preset: Optional[str] = None,
                         basis: str = "piecewise_constant", n_images: Optional[int] = None,
                         alpha: float = 0.05) -> Factorial:
    """The 2 x 2 (above) from ``{training seed: {run: sweep rows}}``.  A cell is counted in a seed
    only when that seed has its sweep; a run that no seed has is ``missing``, and the effects need all four."""
    if not sweeps_by_seed:
        raise ValueError("sweeps_by_seed is empty: give {seed: {run: sweep rows}} for at least one training seed")
    runs = list(CELLS.values())
    seeds = [s for s, sw in sweeps_by_seed.items() if all(r in sw for r in runs)] or list(sweeps_by_seed)
    cells = {}
    for run in runs:
        per_seed = [_cell(sweeps_by_seed[s][run], basis) for s in seeds if run in sweeps_by_seed[s]]
        cells[run] = {k: [c[k] for c in per_seed] for k in ("own", "gap", "valid", "straddles")}
    missing = [run for run in runs if not cells[run]["own"]]
    fx = Factorial(preset, list(seeds), cells, missing=missing, n_images=n_images, basis=basis)
    if missing:
        return fx
    for name, (plus, minus) in EFFECTS.items():
        values = [a - b for a, b in zip(cells[plus]["valid"], cells[minus]["valid"])]
        fx.effects[name] = {"values": values, "spread": spread(values),
                            "test": welch(cells[minus]["valid"], cells[plus]["valid"], alpha) if len(seeds) >= 2 else None}
    factors = [name for name in EFFECTS if name != "main runs' contrast"]
    if len(seeds) >= 2:
        for name, p in zip(factors, holm([fx.effects[name]["test"]["p"] for name in factors])):
            fx.effects[name]["test"]["p_holm"] = p
    return fx


def shipped_factorial(preset: str, fallback: Optional[str] = "cpu") -> Factorial:
    """The 2 x 2 of ``preset`` from the studies that ship with the book: each cell's shipped sweep (training seed 0; a
    cell that ships no folder, its seed-0 sweep in the preset's seeds file), with the other seeds of the seeds file that
    hold all four cells.  When some cell of ``preset`` does not
    ship, the ``fallback`` preset's 2 x 2 is returned instead (its ``asked`` says which preset was asked for), or,
    without a fallback (or when it is incomplete too), ``preset``'s with those cells ``missing``."""
    if preset not in IMAGE_PRESETS:
        raise ValueError(f"unknown preset {preset!r}; the presets are {', '.join(IMAGE_PRESETS)}")
    runs = list(CELLS.values())
    files = {run: f for run in runs if (f := shipped_sweep_file(preset, run)) is not None}
    records = {r["seed"]: r for r in shipped_seeds(preset)}
    # seed 0: a run's shipped sweep, else its sweep in the seeds file (a preset may ship the main runs' folders
    # only, and keep the control runs' numbers there)
    by_seed = {0: {**records.get(0, {}).get("sweeps", {}), **{run: f["rows"] for run, f in files.items()}}}
    by_seed[0] = {run: rows for run, rows in by_seed[0].items() if run in runs}
    for seed, record in records.items():
        if seed != 0 and all(run in record["sweeps"] for run in runs):
            by_seed[seed] = {run: record["sweeps"][run] for run in runs}
    n_images = next((f.get("n_test") for f in files.values()), None)
    fx = factorial_over_seeds(dict(sorted(by_seed.items())), preset=preset, n_images=n_images)
    if fx.complete or not fallback or fallback == preset:
        return fx
    other = shipped_factorial(fallback, fallback=None)
    if not other.complete:
        return fx
    other.asked = preset
    return other


def shipped_roughness(preset: str, runs: Sequence[str] = tuple(CELLS.values())) -> dict:
    """``{run: roughness}`` of ``preset``'s shipped models (training seed 0): the mean over its blocks of
    :func:`cnet_lib.images.runs.theta_record.theta_roughness`, the relative jump between neighbouring pieces of θ(t) (0 for
    one constant piece, about √2 for independent pieces of equal size).  A run that ships no checkpoint is left out."""
    out = {}
    for run in runs:
        folder = SHIPPED / f"{preset}-{run}"
        if (folder / CHECKPOINT).is_file():
            rough = [r["roughness"] for r in theta_roughness(load_model(folder, "cpu")[0]) if r["roughness"] is not None]
            out[run] = sum(rough) / len(rough)
    return out
