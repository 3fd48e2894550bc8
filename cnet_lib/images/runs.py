"""Trained runs of the image study: where they live, trained once, reloaded everywhere.

The three image chapters share two trained models per preset (:data:`cnet_lib.images.presets.IMAGE_PRESETS`):
an RK4-classic ContinuousNet grown by refinement (``rk4_refined``) and an Euler ContinuousNet trained
at its final depth from the start (``euler_fixed``).  :func:`trained_runs` trains each run of the
preset **once** and afterwards reloads it.  A run lives in ``<runs root>/<preset>-<run>-<hash>/``,
where the runs root is ``$CNET_RUNS_DIR``, else ``~/.cache/cnet_lib/runs``, and ``<hash>`` is a short
hash of the run's identity (:meth:`TrainConfig.identity`, the number of epochs and the data
folder), so a changed preset never picks up a stale checkpoint.  While training, θ(t) of a few
weights is recorded after every epoch (``theta_snapshots.json``).  A run the book ships a trained
model for (``cnet_lib/shipped/<preset>-<run>/``, written by ``python -m cnet_lib.ship``) is copied
from it instead of trained.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import torch

from ..core.models import ContinuousNet
from ..runtime.checkpoint import atomic_write_text, config_diff, describe_checkpoint_file, file_digest, load_checkpoint
from ..runtime.device import default_device, resolve_device
from ..runtime.presets import preset_name, select_preset
from ..runtime.vocabulary import run_label
from .data import (DATASETS, DatasetNotFoundError, custom_source, ensure_dataset, load_dataset, normalize, resolve_data_dir,
                   write_fake_cifar)
from .presets import IMAGE_PRESETS, expected_training, image_runs
from .theta import theta_snapshot
from .training import CHECKPOINT, RESULTS, TrainConfig, build_model, interrupted_message, load_model, train

__all__ = [
    "RUNS_ENV", "SNAPSHOTS", "SHIPPED", "MANIFEST", "StudyRun",
    "short_hash", "file_hash", "runs_root", "identity_hash", "run_hash", "run_dir", "shipped_run",
    "study_data_dir", "study_data", "sample_batch", "trained_runs", "is_finished", "training_time",
]

RUNS_ENV = "CNET_RUNS_DIR"
SNAPSHOTS = "theta_snapshots.json"


def short_hash(obj: Any, n: int = 10) -> str:
    """The first ``n`` hex digits of the SHA-256 of ``obj`` as sorted JSON."""
    text = json.dumps(obj, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def file_hash(path: Path, n: int = 12) -> str:
    """The first ``n`` hex digits of the SHA-256 of a file's bytes."""
    return file_digest(path)[:n]

# --------------------------------------------------------------------------- where runs live
def runs_root(root=None) -> Path:
    """``root`` if given, else ``$CNET_RUNS_DIR``, else ``~/.cache/cnet_lib/runs``."""
    if root is None:
        root = os.environ.get(RUNS_ENV) or Path.home() / ".cache" / "cnet_lib" / "runs"
    return Path(root).expanduser()


def identity_hash(cfg: TrainConfig) -> str:
    """Short hash of the run's identity: ``cfg.identity()`` and the number of epochs (what a
    shipped model must match to stand in for this run, whatever folder the data is in)."""
    return short_hash({"identity": cfg.identity(), "epochs": cfg.epochs})


def run_hash(cfg: TrainConfig) -> str:
    """Short hash of what the trained model depends on: ``cfg.identity()``, the number of
    epochs and the data folder (a fake data set and the real one never share a checkpoint)."""
    data = str(resolve_data_dir(cfg.data_dir).resolve())
    return short_hash({"identity": cfg.identity(), "epochs": cfg.epochs, "data": data})


# --------------------------------------------------------------------------- models shipped with the book
SHIPPED = Path(__file__).resolve().parents[1] / "shipped"
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

    A configuration without ``data_dir`` (e.g. straight from :func:`cnet_lib.images.presets.image_runs`)
    reads the folder :func:`study_data_dir` chooses for its preset, as :func:`trained_runs` does:
    the real data when it can be had, else the announced fake data set.
    """
    device = torch.device(device) if device is not None else torch.device(cfg.device or default_device())
    data_dir = cfg.data_dir if cfg.data_dir is not None else study_data_dir(cfg.preset, None, cfg.dataset)
    return load_dataset(cfg.dataset, data_dir, cfg.n_train if with_train else None, cfg.n_test,
                        seed=cfg.seed, device=device, progress=False)


def sample_batch(cfg: TrainConfig, device=None, n: int = 64) -> torch.Tensor:
    """The first ``n`` test images of the run's data (:func:`study_data`), normalised like the
    training data, on ``device``: a batch to push through a model."""
    data = study_data(cfg, device, with_train=False)
    return normalize(data.test_x[:n], data.mean, data.std)


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
    epoch, see :func:`cnet_lib.images.training.train`), ``snapshots`` (θ̂ after every epoch)."""

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
        return run_label(self.name)

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


def training_time(run: StudyRun) -> dict:
    """How long a run trained and where: ``{"epochs", "train_seconds"`` (the sum over its history,
    evaluation excluded), ``"device", "device_name"`` (from the run's results file, which a shipped
    model brings along; ``None`` when it has none)``}``."""
    try:
        env = json.loads((run.out_dir / RESULTS).read_text()).get("environment") or {}
    except (OSError, ValueError):
        env = {}
    return {"epochs": len(run.history), "train_seconds": sum(h["train_seconds"] for h in run.history),
            "device": env.get("device"), "device_name": env.get("device_name")}


def is_finished(out: Path, cfg: TrainConfig) -> bool:
    """Whether ``out`` holds a finished run of ``cfg`` (its checkpoint, and results of every epoch)."""
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


def _training_notice(cfgs: Mapping[str, TrainConfig], use_shipped: bool) -> None:
    """Before any training: which runs will be trained, how long that takes, and, when the preset
    ships no trained models, which preset does (loading instead of training)."""
    to_train = [run for run, cfg in cfgs.items()
                if not is_finished(Path(cfg.out_dir), cfg) and not (use_shipped and shipped_run(cfg) is not None)]
    if not to_train:
        return
    first = next(iter(cfgs.values()))
    print(f"{', '.join(run_label(r) for r in to_train)}: not trained yet for the '{first.preset}' preset; training "
          f"takes {expected_training(first.preset)}, once: later chapters and runs reload the models from "
          f"{Path(first.out_dir).parent}.")
    preset = first.preset
    shipping = sorted({p.parent.name.split("-", 1)[0] for p in SHIPPED.glob(f"*/{MANIFEST}")} - {preset})
    if shipping and preset != "smoke":
        print(f"   Trained models ship with the book for the {' and '.join(repr(p) for p in shipping)} preset: set "
              f"%env CNET_PRESET={shipping[0]} before the setup cell to load them instead of training.")


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
    if verbose:
        _training_notice(cfgs, use_shipped)
    out: dict[str, StudyRun] = {}
    data = None
    for run, cfg in cfgs.items():
        folder = Path(cfg.out_dir)
        t0 = time.perf_counter()
        _set_aside_damaged_checkpoint(folder, run_label(run))
        if use_shipped and not is_finished(folder, cfg):
            _install_shipped(folder, cfg, run_label(run), verbose)
        if is_finished(folder, cfg):
            model, ck = load_model(folder, device)
            diff = config_diff(ck["config"], cfg.identity())
            if not diff:
                snaps_path = folder / SNAPSHOTS
                snaps = json.loads(snaps_path.read_text())["snapshots"] if snaps_path.is_file() else []
                out[run] = StudyRun(run, cfg, model, list(ck["extra"]["history"]), folder, snaps, False,
                                    time.perf_counter() - t0)
                if verbose:
                    print(f"{run_label(run)}: loaded the trained model from {folder} "
                          f"({len(out[run].history)} epochs, test accuracy {out[run].final_accuracy:.4f})")
                continue
        if data is None:
            data = study_data(cfg, device)
        folder.mkdir(parents=True, exist_ok=True)
        if verbose:
            print(f"{run_label(run)}: training {cfg.epochs} epochs on {len(data.train_y)} images "
                  f"({cfg.scheme}, N_t = M: {cfg.n_steps or cfg.n_basis} -> {cfg.final_n_steps()}) into {folder}")
        rec = _SnapshotRecorder(folder, cfg, verbose, run_label(run))
        try:
            result = train(cfg, data=data, on_epoch=rec)
        except KeyboardInterrupt:
            print(f"{run_label(run)}: {interrupted_message(folder, how='run this cell again')}")
            raise
        out[run] = StudyRun(run, cfg, result.model, list(result.history), folder, rec.snaps, True,
                            time.perf_counter() - t0)
    return out
