"""The image study of the paper's Sections 4–5: trained once, reloaded everywhere, judged honestly.

The three image chapters ("ContinuousNet", "Refinement training", "Manifestation invariance")
share two trained models per preset (:data:`cnet_lib.train.IMAGE_PRESETS`): an RK4-classic
ContinuousNet grown by refinement (``rk4_refined``) and an Euler ContinuousNet trained at its
final depth from the start (``euler_fixed``).

* :func:`trained_runs`: trains each run of the preset **once** and afterwards reloads it.  A run
  lives in ``<runs root>/<preset>-<run>-<hash>/`` where the runs root is ``$CNET_RUNS_DIR``, else
  ``~/.cache/cnet_lib/runs``, and ``<hash>`` is a short hash of the run's identity
  (:meth:`TrainConfig.identity`, the number of epochs and the data folder), so a changed preset
  never picks up a stale checkpoint.  While training, θ(t) of a few weights is recorded after
  every epoch (``theta_snapshots.json`` beside the checkpoint).
* :func:`sweep_runs`: the manifestation sweep (:func:`cnet_lib.sweep.manifestation_sweep`) of
  every trained model, cached as JSON beside its checkpoint and keyed by a hash of the
  checkpoint file (and of the grid, the test split and the device).  Rows include the accuracy
  with every OdeBlock replaced by the identity.
* :func:`honest_verdict`: decides *from the numbers* whether the blocks matter at all and whether
  the paper's contrast (Euler-trained loses accuracy off its own graph, RK4-trained holds) is
  there, and says so in sentences that quote the numbers.  The chapters print it instead of
  asserting invariance.
* :func:`table1`, :func:`refinement_cost`, :func:`theta_by_basis`, :func:`stage_table`: the
  chapters' tables and curves, as plain values.  Their figures and the live app are in
  :mod:`cnet_lib.image_figures` (the figures-and-widgets layer).

Names follow the paper: ``n_steps`` = N_t, ``n_basis`` = M, ``epsilon`` = ε.
"""
from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import math
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import torch

from .bases import make_basis
from .checkpoint import atomic_write_text, config_diff, describe_checkpoint_file, load_checkpoint
from .data import (DATASETS, DatasetNotFoundError, custom_source, ensure_dataset, load_dataset, resolve_data_dir,
                   write_fake_cifar)
from .device import amp_dtype, default_device, resolve_device
from .integrate import stage_positions
from .models import ContinuousNet
from .odeblock import coefficient_key
from .presets import preset_name, select_preset
from .robustness import conditions_from_json, conditions_to_json, robustness_study
from .schemes import get_scheme
from .sweep import manifestation_sweep, write_sweep
from .train import (CHECKPOINT, IMAGE_PRESETS, RESULTS, TrainConfig, build_model, environment, image_runs,
                    interrupted_message, load_model, train)

__all__ = [
    "RUN_LABELS",
    "BASIS_LABELS",
    "run_label",
    "find_row",
    "THETA_PARAM",
    "THETA_ENTRIES",
    "StudyRun",
    "runs_root",
    "identity_hash",
    "run_hash",
    "SHIPPED",
    "shipped_run",
    "run_dir",
    "study_data_dir",
    "study_data",
    "trained_runs",
    "sweep_runs",
    "sweep_grid",
    "theta_snapshot",
    "theta_curve",
    "theta_by_basis",
    "stage_table",
    "refinement_cost",
    "Verdict",
    "honest_verdict",
    "table1",
    "format_table1",
    "ROBUSTNESS_GRAPHS",
    "robustness_grid",
    "robustness_runs",
]

RUN_LABELS = {"rk4_refined": "RK4-trained (refined)", "euler_fixed": "Euler-trained (fixed depth)"}
RUNS_ENV = "CNET_RUNS_DIR"
SNAPSHOTS = "theta_snapshots.json"
# the weights whose θ(t) the chapters plot: centre taps of the first convolution of each block
THETA_PARAM = "conv1.weight"
THETA_ENTRIES = ((0, 0, 1, 1), (0, 1, 1, 1), (1, 0, 1, 1), (1, 1, 1, 1))
BASIS_LABELS = {"piecewise_constant": "piecewise constant", "piecewise_linear": "piecewise linear (hats)",
                "legendre": "Legendre polynomials"}


def run_label(run: str) -> str:
    """The display name of a run of the image study."""
    return RUN_LABELS.get(run, run)


def _label(run: str) -> str:
    return RUN_LABELS.get(run, run)


def _short_hash(obj: Any, n: int = 10) -> str:
    text = json.dumps(obj, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def _file_hash(path: Path, n: int = 12) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:n]


# --------------------------------------------------------------------------- where runs live
def runs_root(root=None) -> Path:
    """``root`` if given, else ``$CNET_RUNS_DIR``, else ``~/.cache/cnet_lib/runs``."""
    if root is None:
        root = os.environ.get(RUNS_ENV) or Path.home() / ".cache" / "cnet_lib" / "runs"
    return Path(root).expanduser()


def identity_hash(cfg: TrainConfig) -> str:
    """Short hash of the run's identity: ``cfg.identity()`` and the number of epochs (what a
    shipped model must match to stand in for this run, whatever folder the data is in)."""
    return _short_hash({"identity": cfg.identity(), "epochs": cfg.epochs})


def run_hash(cfg: TrainConfig) -> str:
    """Short hash of what the trained model depends on: ``cfg.identity()``, the number of
    epochs and the data folder (a fake data set and the real one never share a checkpoint)."""
    data = str(resolve_data_dir(cfg.data_dir).resolve())
    return _short_hash({"identity": cfg.identity(), "epochs": cfg.epochs, "data": data})


# --------------------------------------------------------------------------- models shipped with the book
SHIPPED = Path(__file__).resolve().parent / "shipped"
MANIFEST = "manifest.json"


def shipped_run(cfg: TrainConfig) -> Optional[Path]:
    """The folder of the model shipped with the book for this run, when there is one and its
    manifest's identity hash is the run's (a changed preset never picks up a stale model)."""
    folder = SHIPPED / f"{cfg.preset}-{cfg.run_name}"
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return folder if manifest.get("identity_hash") == identity_hash(cfg) else None


def _install_shipped(folder: Path, cfg: TrainConfig, label: str, verbose: bool) -> bool:
    """Copy the shipped model of ``cfg`` (checkpoint, history, θ snapshots, its sweep and robustness
    results) into the run folder, saying where it comes from and how to retrain; False without one."""
    src = shipped_run(cfg)
    if src is None:
        return False
    manifest = json.loads((src / MANIFEST).read_text())
    folder.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.is_file() and f.name != MANIFEST:
            shutil.copyfile(f, folder / f.name)
    if verbose:
        minutes = manifest.get("train_seconds", 0) / 60
        print(f"{label}: using the model shipped with the book for this preset (trained by `{manifest.get('command')}` "
              f"on {manifest.get('machine', {}).get('device_name', 'a CPU')}, {minutes:.0f} min of training, "
              f"{manifest.get('data', {}).get('description', '')}). To train it yourself instead, run "
              f"trained_runs(use_shipped=False) (about {minutes:.0f} min on such a machine).")
    return True


def run_dir(cfg: TrainConfig, root=None) -> Path:
    """``<runs root>/<preset>-<run>-<hash of the run>``."""
    return runs_root(root) / f"{cfg.preset}-{cfg.run_name}-{run_hash(cfg)}"


# --------------------------------------------------------------------------- data
def _fake_sizes(preset: str) -> tuple[int, int]:
    d = select_preset(IMAGE_PRESETS, preset)["data"]
    return max(int(d.get("n_train") or 2000), 100), max(int(d.get("n_test") or 500), 50)


def study_data_dir(preset: Optional[str] = None, data_dir=None, dataset: str = "cifar10", verbose: bool = True) -> Path:
    """The directory holding the data set for this preset.

    ``data_dir``, else ``$CNET_DATA_DIR``, else the default cache.  Missing data is downloaded,
    except under ``smoke``, which downloads only from a mirror named explicitly by
    ``$CNET_CIFAR10_URL`` (see :func:`cnet_lib.data.dataset_source`): a quick check never
    fetches the full data set.  If the data cannot be had (offline, fresh machine, smoke), a
    small *fake* CIFAR in the standard layout is written to a fixed temporary folder
    (class-coloured noise: no real images) and a message says so, and how to get the real
    images: the chapters then run, but their numbers describe the fake data.
    """
    name = preset_name(preset)
    download = name != "smoke" or custom_source(dataset)
    try:
        ensure_dataset(dataset, data_dir, download=download, progress=False)
        return resolve_data_dir(data_dir)
    except DatasetNotFoundError as err:
        n_train, n_test = _fake_sizes(name)
        classes = DATASETS[dataset].num_classes
        fake = Path(tempfile.gettempdir()) / f"cnet_lib-fake-{dataset}-{n_train}-{n_test}"
        try:
            ensure_dataset(dataset, fake, download=False)
        except DatasetNotFoundError:
            write_fake_cifar(fake, n_train=n_train, n_test=n_test, num_classes=classes, seed=0)
        if verbose:
            print(_fake_data_note(name, dataset, err, download, resolve_data_dir(data_dir), fake, n_train, n_test))
        return fake


def _fake_data_note(preset: str, dataset: str, err: Exception, downloaded: bool, root: Path, fake: Path,
                    n_train: int, n_test: int) -> str:
    """The message printed when the chapters fall back to fake data: why, and how to get the real images."""
    head = (f"NOTE: Using FAKE data: {n_train} + {n_test} images of class-coloured noise written to {fake}.\n"
            f"      Every number below describes that fake data set, not {dataset.upper()}.")
    if downloaded:  # a real attempt failed: the error says what to do
        return f"{head}\n      Why: {err}"
    return (f"{head}\n      Why: the {preset} preset never downloads the full data set, and it is not in {root}.\n"
            "      For the real images: in Google Colab run `%env CNET_PRESET=cpu` (or gpu) before the setup cell "
            "(the data set is then downloaded once); on your own machine set CNET_DATA_DIR to the folder that "
            f"contains {DATASETS[dataset].folder}.")


def study_data(cfg: TrainConfig, device=None, with_train: bool = True):
    """The run's data (:func:`cnet_lib.data.load_dataset`) on ``device``.

    A configuration without ``data_dir`` (e.g. straight from :func:`cnet_lib.train.image_runs`)
    reads the folder :func:`study_data_dir` chooses for its preset, as :func:`trained_runs` does:
    the real data when it can be had, else the announced fake data set.
    """
    device = torch.device(device) if device is not None else torch.device(cfg.device or default_device())
    data_dir = cfg.data_dir if cfg.data_dir is not None else study_data_dir(cfg.preset, None, cfg.dataset)
    return load_dataset(cfg.dataset, data_dir, cfg.n_train if with_train else None, cfg.n_test,
                        seed=cfg.seed, device=device, progress=False)


# --------------------------------------------------------------------------- θ(t) snapshots
def _entries_of(t: torch.Tensor, entries) -> dict[str, list[float]]:
    out = {}
    for e in entries:
        if all(i < s for i, s in zip(e, t.shape[1:])):
            out[str(tuple(e))] = t[(slice(None),) + tuple(e)].detach().double().cpu().tolist()
    return out


def theta_snapshot(model_or_state, basis: str = "piecewise_constant", param: str = THETA_PARAM,
                   entries: Sequence[tuple] = THETA_ENTRIES, epoch: int = 0, refined: bool = False) -> dict:
    """The coefficients θ̂_β of a few entries of ``param`` and of the skip gain s(t), per block.

    Works on a :class:`ContinuousNet` or on its state dict (e.g. read from a checkpoint).  Plain
    JSON-able values: ``{"epoch", "refined", "blocks": [{"n_basis", "basis", "entries": {entry:
    [θ̂_0..θ̂_{M-1}]}, "gain": [s_0..]}]}``.
    """
    state = model_or_state.state_dict() if isinstance(model_or_state, torch.nn.Module) else model_or_state
    key = coefficient_key(param)
    blocks = []
    b = 0
    while f"blocks.{b}.coeffs.{key}" in state:
        coeffs = state[f"blocks.{b}.coeffs.{key}"]
        gain = state.get(f"blocks.{b}.skip_gain")
        blocks.append({
            "n_basis": int(coeffs.shape[0]), "basis": basis, "param": param,
            "entries": _entries_of(coeffs, entries),
            "gain": gain.detach().double().cpu().tolist() if gain is not None else None,
        })
        b += 1
    return {"epoch": int(epoch), "refined": bool(refined), "blocks": blocks}


def _curve_points(basis) -> list[tuple[Fraction, int]]:
    pts = basis.breakpoints
    if basis.degree <= 1:
        out = []
        for lo, hi in zip(pts[:-1], pts[1:]):
            out += [(lo, 1), (hi, -1)]
        return out
    n = 120
    return [(Fraction(k, n), 1 if k < n else -1) for k in range(n + 1)]


def theta_curve(coeffs: Sequence[float], basis: str = "piecewise_constant", T: float = 1.0) -> tuple[list, list]:
    """(t, θ(t)) of a scalar weight function Σ_β φ_β(t/T) θ̂_β, exact at the break points
    (both one-sided limits, so jumps of the piecewise-constant basis are drawn as jumps)."""
    coeffs = [float(c) for c in coeffs]
    b = make_basis(basis, len(coeffs))
    ts, vs = [], []
    for tau, side in _curve_points(b):
        ts.append(float(tau) * T)
        vs.append(sum(w * coeffs[beta] for beta, w in b.weights(tau, side)))
    return ts, vs


def _fresh_block(cfg_channels, block: int, basis: str, n_basis: int, seed: int):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        m = ContinuousNet(channels=cfg_channels, n_basis=n_basis, basis=basis, skip_init=True)
    return m.blocks[block]


def theta_by_basis(model: ContinuousNet, block: int = 0, n_basis: Optional[int] = None, seed: int = 0,
                   param: str = THETA_PARAM, entries: Sequence[tuple] = THETA_ENTRIES) -> dict:
    """θ(t) of a few weights for the three bases: ``{basis: {"untrained": {entry: (t, v)},
    "trained": {entry: (t, v)}}}``.

    *untrained*: a freshly initialised block with that basis and M functions (independent draws
    per θ̂_β, like the layers of a ResNet).  *trained*: the trained block's θ(t) projected (L2) onto
    that basis with M functions (for its own basis at its own M, the trained θ(t) itself).
    M defaults to the trained block's M.
    """
    trained = model.blocks[block]
    m = n_basis or trained.n_basis
    channels = model.config()["channels"]
    out = {}
    for basis in ("piecewise_constant", "piecewise_linear", "legendre"):
        fresh = _fresh_block(channels, block, basis, m, seed)
        if basis == trained.basis.name and m == trained.n_basis:
            proj = trained
        else:
            proj = copy.deepcopy(trained).cpu().project(m, basis)
        res = {}
        for kind, blk in (("untrained", fresh), ("trained", proj)):
            c = blk.coefficient(param).detach().cpu()
            res[kind] = {e: theta_curve(v, basis, blk.T) for e, v in _entries_of(c, entries).items()}
        out[basis] = res
    return out


class _SnapshotRecorder:
    """``on_epoch`` callback of :func:`train`: reads the checkpoint just written and appends θ̂."""

    def __init__(self, out: Path, cfg: TrainConfig, verbose: bool, label: str):
        self.out, self.cfg, self.verbose, self.label = out, cfg, verbose, label
        path = out / SNAPSHOTS
        self.snaps = json.loads(path.read_text())["snapshots"] if path.is_file() else []
        if not self.snaps:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(cfg.seed)  # train() builds the initial model exactly like this
                init = build_model(cfg)
            self.snaps = [theta_snapshot(init, cfg.basis, epoch=0)]
            self._write()

    def _write(self):
        atomic_write_text(self.out / SNAPSHOTS, json.dumps({"run_hash": run_hash(self.cfg), "snapshots": self.snaps}))

    def __call__(self, row: dict) -> None:
        ck = load_checkpoint(self.out / CHECKPOINT, map_location="cpu")
        self.snaps = [s for s in self.snaps if s["epoch"] < row["epoch"]]
        self.snaps.append(theta_snapshot(ck["model"], self.cfg.basis, epoch=row["epoch"], refined=row["refined"]))
        self._write()
        if self.verbose:
            print(f"  {self.label}: epoch {row['epoch']}/{self.cfg.epochs}  N_t={row['n_steps']}  "
                  f"loss {row['train_loss']:.3f}  test acc {row['test_acc']:.3f}  {row['train_seconds']:.1f} s"
                  + ("  (refined before this epoch)" if row["refined"] else ""))


# --------------------------------------------------------------------------- training, once
@dataclass
class StudyRun:
    """One trained run: ``model`` (eval mode, trained manifestation), ``history`` (one dict per
    epoch, see :func:`cnet_lib.train.train`), ``snapshots`` (θ̂ after every epoch)."""

    name: str
    config: TrainConfig
    model: ContinuousNet
    history: list
    out_dir: Path
    snapshots: list = field(default_factory=list)
    trained_now: bool = False
    seconds: float = 0.0  # wall time of this call (training, or just loading)

    @property
    def label(self) -> str:
        return _label(self.name)

    @property
    def checkpoint(self) -> Path:
        return self.out_dir / CHECKPOINT

    @property
    def final_accuracy(self) -> float:
        return self.history[-1]["test_acc"]

    def initial_model(self) -> ContinuousNet:
        """The model as training started (same seed, untrained)."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.config.seed)
            return build_model(self.config).eval()


def _finished(out: Path, cfg: TrainConfig) -> bool:
    try:
        res = json.loads((out / RESULTS).read_text())
    except (OSError, ValueError):
        return False
    return (out / CHECKPOINT).is_file() and int(res.get("epochs_done", 0)) >= cfg.epochs


def _configs(preset: Optional[str], root, device, data_dir, progress: bool, verbose: bool,
             overrides: Mapping[str, Any]) -> dict[str, TrainConfig]:
    name = preset_name(preset)
    base = image_runs(name)
    first = next(iter(base.values()))
    data_root = study_data_dir(name, data_dir, first.dataset, verbose=verbose)
    out = {}
    for run, cfg in base.items():
        cfg = dataclasses.replace(cfg, data_dir=str(data_root), device=str(device), resume=True,
                                  progress=progress, **dict(overrides))
        out[run] = dataclasses.replace(cfg, out_dir=str(run_dir(cfg, root)))
    return out


def _set_aside_damaged_checkpoint(folder: Path, label: str) -> None:
    """A cached run whose checkpoint cannot be read (truncated, damaged, foreign) is not lost and
    does not stop the chapter: the file is renamed ``checkpoint.pt.damaged-<time>`` and the run is
    trained again, with one sentence saying so."""
    ckpt = folder / CHECKPOINT
    problem = describe_checkpoint_file(ckpt) if ckpt.is_file() else None
    if problem:
        aside = ckpt.with_name(f"{CHECKPOINT}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
        ckpt.rename(aside)
        print(f"{label}: {problem}; it was moved to {aside.name} and this run is trained again.")


def trained_runs(preset: Optional[str] = None, *, root=None, device=None, data_dir=None, runs: Optional[Sequence[str]] = None,
                 progress: bool = False, verbose: bool = True, use_shipped: bool = True, **overrides) -> dict[str, StudyRun]:
    """The preset's image runs, trained once and afterwards reloaded: ``{run name: StudyRun}``.

    ``preset`` defaults to ``$CNET_PRESET``; ``root`` to ``$CNET_RUNS_DIR`` or
    ``~/.cache/cnet_lib/runs``; ``device`` to the default device.  A finished run is loaded from
    its checkpoint without touching the data; an interrupted one resumes from its last epoch.
    A run the book ships a trained model for (:func:`shipped_run`) is copied from it instead of
    trained, unless ``use_shipped=False``.  ``overrides`` are applied to every run's
    :class:`TrainConfig` (they change its hash).
    """
    device = resolve_device(device)
    cfgs = _configs(preset, root, device, data_dir, progress, verbose, overrides)
    if runs is not None:
        cfgs = {k: v for k, v in cfgs.items() if k in runs}
    out: dict[str, StudyRun] = {}
    data = None
    for run, cfg in cfgs.items():
        folder = Path(cfg.out_dir)
        t0 = time.perf_counter()
        _set_aside_damaged_checkpoint(folder, _label(run))
        if use_shipped and not _finished(folder, cfg):
            _install_shipped(folder, cfg, _label(run), verbose)
        if _finished(folder, cfg):
            model, ck = load_model(folder, device)
            diff = config_diff(ck["config"], cfg.identity())
            if not diff:
                snaps_path = folder / SNAPSHOTS
                snaps = json.loads(snaps_path.read_text())["snapshots"] if snaps_path.is_file() else []
                out[run] = StudyRun(run, cfg, model, list(ck["extra"]["history"]), folder, snaps, False,
                                    time.perf_counter() - t0)
                if verbose:
                    print(f"{_label(run)}: loaded the trained model from {folder} "
                          f"({len(out[run].history)} epochs, test accuracy {out[run].final_accuracy:.4f})")
                continue
        if data is None:
            data = study_data(cfg, device)
        folder.mkdir(parents=True, exist_ok=True)
        if verbose:
            print(f"{_label(run)}: training {cfg.epochs} epochs on {len(data.train_y)} images "
                  f"({cfg.scheme}, N_t = M: {cfg.n_steps or cfg.n_basis} -> {cfg.final_n_steps()}) into {folder}")
        rec = _SnapshotRecorder(folder, cfg, verbose, _label(run))
        try:
            result = train(cfg, data=data, on_epoch=rec)
        except KeyboardInterrupt:
            print(f"{_label(run)}: {interrupted_message(folder, how='run this cell again')}")
            raise
        out[run] = StudyRun(run, cfg, result.model, list(result.history), folder, rec.snaps, True,
                            time.perf_counter() - t0)
    return out


# --------------------------------------------------------------------------- sweeps, cached
def sweep_grid(preset: Optional[str] = None) -> dict:
    """The preset's sweep grid (schemes, n_steps, compress, compress_schemes)."""
    return dict(select_preset(IMAGE_PRESETS, preset_name(preset))["sweep"])


def sweep_runs(runs: Mapping[str, StudyRun], grid: Optional[dict] = None, *, device=None, progress: bool = False,
               verbose: bool = True) -> dict[str, list[dict]]:
    """The manifestation sweep of every run, computed once and cached beside its checkpoint.

    The cache file is ``sweep-<hash>.json`` where the hash covers the checkpoint file's hash, the
    grid, the test split, the device type and whether bf16 autocast is used (inference times and
    bf16 accuracy differ on a GPU).
    """
    out = {}
    for name, run in runs.items():
        cfg = run.config
        g = dict(grid) if grid is not None else sweep_grid(cfg.preset)
        dev = resolve_device(device) if device is not None else next(run.model.parameters()).device
        key = {"checkpoint": _file_hash(run.checkpoint), "grid": g, "n_test": cfg.n_test, "seed": cfg.seed,
               "dataset": cfg.dataset, "device": dev.type, "amp": bool(cfg.amp and amp_dtype(dev) is not None)}
        path = run.out_dir / f"sweep-{_short_hash(key, 12)}.json"
        if path.is_file():
            cached = json.loads(path.read_text())
            out[name] = cached["rows"]
            if verbose:
                print(f"{run.label}: sweep loaded from {path} ({_provenance(cached)})")
            continue
        data = study_data(cfg, dev, with_train=False)
        t0 = time.perf_counter()
        rows = manifestation_sweep(run.model.to(dev), data.test_x, data.test_y, data.mean, data.std,
                                   amp=cfg.amp, progress=progress, **g)
        write_sweep(path, rows, key=key, run=name, preset=cfg.preset, n_test=len(data.test_y), environment=environment(dev),
                    seconds=time.perf_counter() - t0)
        if verbose:
            print(f"{run.label}: swept {len(rows)} evaluations on {len(data.test_y)} test images in "
                  f"{time.perf_counter() - t0:.1f} s (cached in {path})")
        out[name] = rows
    return out


# --------------------------------------------------------------------------- robustness, cached
ROBUSTNESS_GRAPHS = {"rk4_refined": ("rk4_refined", None, None), "euler_fixed": ("euler_fixed", None, None),
                     "euler_fixed on rk4_classic": ("euler_fixed", "rk4_classic", None)}
"""The graphs of the robustness study: each model on its own graph, and the Euler model on a
higher-order graph (RK4-classic at its own N_t)."""


def robustness_grid(preset: Optional[str] = None) -> dict:
    """The preset's robustness grid (sigmas, seeds, bits, float_formats, input_noise, noise_seeds)."""
    return dict(select_preset(IMAGE_PRESETS, preset_name(preset))["robustness"])


def robustness_runs(runs: Mapping[str, StudyRun], grid: Optional[dict] = None, *, device=None, verbose: bool = True,
                    progress: bool = False) -> dict:
    """The robustness study (:mod:`cnet_lib.robustness`) of the preset's models on the same test
    images, computed once and cached beside the first run's checkpoint, keyed by a hash of both
    checkpoint files, the grid, the graphs, the test split and the device: ``{label: [Condition]}``."""
    names = list(runs)
    first = runs[names[0]]
    g = dict(grid) if grid is not None else robustness_grid(first.config.preset)
    graphs = {k: v for k, v in ROBUSTNESS_GRAPHS.items() if v[0] in runs}
    dev = resolve_device(device) if device is not None else next(first.model.parameters()).device
    key = {"checkpoints": {n: _file_hash(runs[n].checkpoint) for n in names}, "grid": g, "graphs": graphs,
           "n_test": first.config.n_test, "seed": first.config.seed, "dataset": first.config.dataset,
           "device": dev.type}
    path = first.out_dir / f"robustness-{_short_hash(key, 12)}.json"
    if path.is_file():
        cached = json.loads(path.read_text())
        if verbose:
            print(f"robustness study loaded from {path} ({_provenance(cached)})")
        return {label: conditions_from_json(rows) for label, rows in cached["study"].items()}
    data = study_data(first.config, dev, with_train=False)
    t0 = time.perf_counter()
    say = (lambda what: print(f"  {what}", flush=True)) if progress else None
    study = robustness_study({n: runs[n].model.to(dev) for n in names}, data.test_x, data.test_y, data.mean, data.std,
                             graphs=graphs, grid=g, progress=say)
    seconds = time.perf_counter() - t0
    atomic_write_text(path, json.dumps({"key": key, "seconds": seconds, "n_test": len(data.test_y),
                                        "environment": environment(dev), "created_utc": _utc_now(),
                                        "study": {k: conditions_to_json(v) for k, v in study.items()}}))
    if verbose:
        print(f"robustness study: {sum(len(c.correct) for v in study.values() for c in v)} evaluations on "
              f"{len(data.test_y)} test images in {seconds:.1f} s (cached in {path})")
    return study


def _utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _provenance(cached: Mapping) -> str:
    """Where and when cached results were computed, in words."""
    env = cached.get("environment") or {}
    where = env.get("device_name") or env.get("device") or "an unrecorded machine"
    when = (cached.get("created_utc") or "")[:10] or "an unrecorded date"
    return f"computed on {where}, {when}, in {cached.get('seconds', 0):.0f} s"


def find_row(rows: Sequence[dict], kind: str) -> Optional[dict]:
    """The first sweep row of ``kind`` (``trained``, ``identity``, ...), or None."""
    return next((r for r in rows if r["kind"] == kind), None)


def _find(rows: Sequence[dict], kind: str) -> Optional[dict]:
    return next((r for r in rows if r["kind"] == kind), None)


# --------------------------------------------------------------------------- the verdict
@dataclass
class Verdict:
    """What the numbers say.  ``print(verdict)`` prints :attr:`sentences`."""

    blocks_matter: bool
    contrast: bool
    gaps: dict  # run -> trained minus identity accuracy, in points
    drops: dict  # run -> largest loss off the trained graph (order >= 2, N_t >= trained N_t), in points
    sentences: list

    def __str__(self) -> str:
        return "\n".join(self.sentences)

    @property
    def text(self) -> str:
        return str(self)


def _off_graph(rows: Sequence[dict]) -> list[dict]:
    """Manifestations with a scheme of order >= 2 on a graph at least as fine as the trained one."""
    tr = _find(rows, "trained")
    nt = tr["n_steps"] if isinstance(tr["n_steps"], int) else max(tr["n_steps"])
    return [r for r in rows if r["kind"] == "manifestation" and not r.get("is_trained")
            and get_scheme(r["scheme"]).order >= 2 and isinstance(r["n_steps"], int) and r["n_steps"] >= nt]


def honest_verdict(rows: Mapping[str, Sequence[dict]], *, euler: str = "euler_fixed", rk4: str = "rk4_refined",
                   matter_points: float = 10.0, lose_points: float = 5.0, hold_points: float = 2.0,
                   n_test: Optional[int] = None, preset: Optional[str] = None) -> Verdict:
    """Judge a pair of sweeps ``{run: rows}`` (Euler-trained ``euler``, RK4-trained ``rk4``).

    * the blocks **matter** when, for both models, removing every OdeBlock (the ``identity`` row)
      costs at least ``matter_points`` percentage points of accuracy;
    * the **contrast** of the paper appears when the blocks matter and, off the trained graph —
      every scheme of order >= 2 at N_t >= the trained N_t — the Euler-trained model loses at least
      ``lose_points`` points somewhere while the RK4-trained model stays within ``hold_points``
      everywhere.

    Returns a :class:`Verdict` whose sentences quote the numbers.
    """
    for name in (euler, rk4):
        if name not in rows or _find(rows[name], "trained") is None or _find(rows[name], "identity") is None:
            raise ValueError(f"need sweep rows with 'trained' and 'identity' rows for {name!r}; got runs {list(rows)}")
    pts = lambda a: 100.0 * a  # noqa: E731
    s: list[str] = []
    gaps, drops, worst = {}, {}, {}
    for name in (euler, rk4):
        tr, ident = _find(rows[name], "trained"), _find(rows[name], "identity")
        gaps[name] = pts(tr["accuracy"] - ident["accuracy"])
        off = _off_graph(rows[name])
        if off:
            w = min(off, key=lambda r: r["accuracy"])
            drops[name] = pts(tr["accuracy"] - w["accuracy"])
            worst[name] = (w, min(r["accuracy"] for r in off), max(r["accuracy"] for r in off))
        else:
            drops[name] = float("nan")
    where = f" (preset {preset})" if preset else ""
    if n_test:
        s.append(f"These accuracies{where} are measured on {n_test} test images: one image is "
                 f"{100.0 / n_test:.2f} points, and the sampling error of an accuracy near 50% is about "
                 f"±{100 * math.sqrt(0.25 / n_test):.1f} points.")
    for name in (euler, rk4):
        tr, ident = _find(rows[name], "trained"), _find(rows[name], "identity")
        s.append(f"{_label(name)}: {pts(tr['accuracy']):.1f}% on its own graph ({tr['scheme']}, N_t = {tr['n_steps']}), "
                 f"{pts(ident['accuracy']):.1f}% with every OdeBlock replaced by the identity: the blocks are worth "
                 f"{gaps[name]:.1f} points.")
    matter = all(g >= matter_points for g in gaps.values())
    if not matter:
        weak = [_label(n) for n, g in gaps.items() if g < matter_points]
        s.append(f"VERDICT: the blocks do not matter enough ({', '.join(weak)}: removing them costs less than "
                 f"{matter_points:g} points). Whatever the sweep shows, flat curves here would only mean blocks that "
                 "do little; these numbers cannot show manifestation invariance, nor its absence.")
        return Verdict(False, False, gaps, drops, s)
    for name in (euler, rk4):
        if name in worst:
            w, lo, hi = worst[name]
            s.append(f"{_label(name)} off its own graph (schemes of order ≥ 2, N_t ≥ the trained N_t): "
                     f"{pts(lo):.1f}%–{pts(hi):.1f}%; worst {w['scheme']} at N_t = {w['n_steps']}, "
                     f"{drops[name]:.1f} points below its own graph.")
        else:
            s.append(f"{_label(name)}: the sweep has no graph with a scheme of order ≥ 2 and N_t ≥ the trained N_t.")
    e_loses = drops[euler] >= lose_points
    r_holds = drops[rk4] <= hold_points
    contrast = bool(e_loses and r_holds)
    if contrast:
        s.append(f"VERDICT: the blocks matter, and the paper's contrast appears: the Euler-trained model loses "
                 f"{drops[euler]:.1f} points off its own graph (≥ {lose_points:g}), the RK4-trained model stays within "
                 f"{drops[rk4]:.1f} points (≤ {hold_points:g}).")
    else:
        what = []
        if not e_loses:
            what.append(f"the Euler-trained model loses only {drops[euler]:.1f} points off its own graph "
                        f"(< {lose_points:g})")
        if not r_holds:
            what.append(f"the RK4-trained model loses {drops[rk4]:.1f} points (> {hold_points:g})")
        s.append("VERDICT: the blocks matter, but the paper's contrast does not appear at this scale: "
                 + " and ".join(what) + ".")
    return Verdict(True, contrast, gaps, drops, s)


# --------------------------------------------------------------------------- tables
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
        tr = _find(rows, "trained")
        nt = tr["n_steps"] if isinstance(tr["n_steps"], int) else max(tr["n_steps"])
        comp = [r for r in rows if r["kind"] == "compressed"]
        use = list(schemes) if schemes else (list(dict.fromkeys(r["scheme"] for r in comp)) or [tr["scheme"]])
        pick = [tr]
        pick += [r for r in rows if r["kind"] == "manifestation" and not r.get("is_trained") and r["scheme"] in use
                 and isinstance(r["n_steps"], int) and r["n_steps"] <= nt]
        pick += comp + [r for r in rows if r["kind"] == "identity"]
        for r in pick:
            out.append({**r, "model": _label(name), "run": name,
                        "speedup": tr["seconds"] / r["seconds"] if r["seconds"] > 0 else float("nan"),
                        "delta_points": 100.0 * (r["accuracy"] - tr["accuracy"])})
    return out


def format_table1(rows: Sequence[dict]) -> str:
    """Plain text of :func:`table1` rows."""
    head = ["model", "graph", "scheme", "N_t", "M", "units", "params", "ms/image", "speed-up", "accuracy", "Δ points"]
    cells = [head]
    for r in rows:
        graph = {"trained": "trained", "manifestation": "same θ", "compressed": "θ compressed",
                 "identity": "blocks removed"}[r["kind"]]
        cells.append([r["model"], graph, r.get("scheme") or "-", str(r.get("n_steps") or "-"),
                      str(r.get("n_basis") or "-"), str(r.get("units", "-")), str(r.get("n_parameters", "-")),
                      f"{r['ms_per_image']:.3f}", f"{r['speedup']:.2f}x", f"{100 * r['accuracy']:.1f}%",
                      f"{r['delta_points']:+.1f}"])
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def stage_table(scheme: str, n_steps: int, n_basis: int, basis: str = "piecewise_constant") -> list[dict]:
    """Where every stage of a manifestation reads θ: ``{"step", "stage", "t", "pieces"}`` per stage
    evaluation, ``pieces`` being the non-zero (β, φ_β) pairs of the basis at that exact position."""
    b = make_basis(basis, n_basis)
    return [{"step": p.k, "stage": p.stage, "t": p.t, "tau": p.tau,
             "pieces": b.weights(p.tau, p.side)} for p in stage_positions(scheme, n_steps)]
