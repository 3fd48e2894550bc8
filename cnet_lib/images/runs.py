"""Trained runs of the image study: where they live, trained once, reloaded everywhere.

The three image chapters share two trained models per preset (:data:`cnet_lib.images.presets.IMAGE_PRESETS`):
an RK4-classic ContinuousNet grown by refinement (``rk4_refined``) and an Euler ContinuousNet trained
at its final depth from the start (``euler_fixed``).  :func:`trained_runs` trains each run of the
preset **once** and afterwards reloads it.  A run lives in ``<runs root>/<preset>-<run>-<hash>/``,
where the runs root is ``$CNET_RUNS_DIR``, else ``~/.cache/cnet_lib/runs``, and ``<hash>`` is a short
hash of the run's identity (:meth:`TrainConfig.identity`, the number of epochs and the data
folder), so a changed preset never picks up a stale checkpoint.  While training, θ(t) of a few
weights is recorded after every epoch (``theta_snapshots.json``).

A run the book ships a trained model for (``cnet_lib/shipped/<preset>-<run>/``, written by
``python -m cnet_lib.ship``) is used instead of trained, unless the reader has trained that run
themselves: every shipped file is first checked against the SHA-256 its manifest records
(:func:`verify_shipped`), then copied into its own folder, ``<preset>-<run>-<hash>-shipped/``, beside
the reader's.  A reader's own run folder is never written by a shipped model.

Each run folder is locked while it is checked, loaded or trained
(:func:`cnet_lib.runtime.locks.folder_lock`): a second notebook or process on the same runs root
waits, with a message, and then loads what the first one trained.
"""
from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import torch

from ..core.models import ContinuousNet
from ..core.validation import check_int
from ..runtime.checkpoint import (CheckpointError, atomic_copy, config_diff, describe_checkpoint_file, file_digest,
                                  load_checkpoint)
from ..runtime.device import default_device, resolve_device
from ..runtime.files import FolderNotWritable, check_writable, private_temp_dir, set_aside
from ..runtime.json_cache import read_cache, write_cache
from ..runtime.locks import folder_lock
from ..runtime.presets import preset_name, select_preset
from ..runtime.vocabulary import run_label
from .data import (DATASETS, DatasetNotFoundError, custom_source, ensure_dataset, load_dataset, normalize, resolve_data_dir,
                   write_fake_cifar)
from .presets import IMAGE_PRESETS, expected_training, image_runs
from .theta import theta_snapshot
from .training import CHECKPOINT, RESULTS, TrainConfig, build_model, interrupted_message, load_model, train

__all__ = [
    "RUNS_ENV", "SNAPSHOTS", "SHIPPED", "MANIFEST", "StudyRun", "ShippedFileError",
    "short_hash", "file_hash", "runs_root", "identity_hash", "run_hash", "run_dir", "shipped_run", "verify_shipped",
    "shipped_copy_dir", "study_data_dir", "study_data", "sample_batch", "trained_runs", "is_finished", "training_time",
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
REINSTALL = ("reinstall cnet_lib (pip install --force-reinstall --no-deps of the same source; in Colab: Runtime > "
             "Disconnect and delete runtime, then run the chapter again from its first cell), or train the model "
             "yourself with trained_runs(use_shipped=False)")


class ShippedFileError(CheckpointError):
    """A file shipped with the book does not match its manifest: the installed package is damaged."""


def _manifest(folder: Path) -> dict:
    path = folder / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ShippedFileError(f"the shipped manifest {path} cannot be read ({type(err).__name__}: "
                               f"{str(err)[:80]}): the installed package is damaged; {REINSTALL}") from None
    if not isinstance(manifest, dict):
        raise ShippedFileError(f"the shipped manifest {path} is not a manifest: the installed package is damaged; "
                               f"{REINSTALL}")
    return manifest


def shipped_run(cfg: TrainConfig) -> Optional[Path]:
    """The folder of the model shipped with the book for this run, when there is one and its
    manifest's identity hash is the run's (a changed preset never picks up a stale model).  A
    shipped folder whose manifest cannot be read raises :class:`ShippedFileError`."""
    folder = SHIPPED / f"{cfg.preset}-{cfg.run_name}"
    if not folder.is_dir():
        return None
    return folder if _manifest(folder).get("identity_hash") == identity_hash(cfg) else None


def verify_shipped(folder: Path) -> dict:
    """The manifest of the shipped folder ``folder``, after checking every file it lists against the
    SHA-256 it records; a missing or changed file (a truncated checkpoint, zeroed weights) raises
    :class:`ShippedFileError` naming the file and what to do (reinstall).  Nothing is copied or
    trained from a folder that fails."""
    manifest = _manifest(folder)
    files = manifest.get("files")
    if not isinstance(files, dict) or CHECKPOINT not in files:
        raise ShippedFileError(f"the shipped manifest {folder / MANIFEST} lists no checksums for its files: the "
                               f"installed package is damaged; {REINSTALL}")
    for name, digest in files.items():
        path = folder / name
        if Path(name).name != name or name in ("", ".", ".."):  # only files of this folder, never a path
            raise ShippedFileError(f"the shipped manifest {folder / MANIFEST} names {name!r}, which is not a file of "
                                   f"its folder: the installed package is damaged; {REINSTALL}")
        if not path.is_file():
            raise ShippedFileError(f"the shipped file {path} is missing: the installed package is damaged; {REINSTALL}")
        got = file_digest(path)
        if got != digest:
            raise ShippedFileError(f"the shipped file {path} does not match the SHA-256 its manifest records (expected "
                                   f"{digest[:12]}…, found {got[:12]}…): the installed package is damaged or was "
                                   f"changed; {REINSTALL}")
    return manifest


def _install_shipped(folder: Path, cfg: TrainConfig, label: str, verbose: bool) -> bool:
    """Copy the shipped model of ``cfg`` (checkpoint, history, θ snapshots, its sweep and robustness
    results) into ``folder``, after :func:`verify_shipped`: a file already there with the recorded
    SHA-256 is kept, any other one (missing, damaged) is copied atomically and checked again.
    Says where the model comes from and how to retrain; False without a shipped model."""
    src = shipped_run(cfg)
    if src is None:
        return False
    manifest = verify_shipped(src)
    folder.mkdir(parents=True, exist_ok=True)
    for name, digest in manifest["files"].items():
        dest = folder / name
        if dest.is_file() and file_digest(dest) == digest:
            continue
        atomic_copy(src / name, dest)
        if file_digest(dest) != digest:
            raise ShippedFileError(f"the copy {dest} of the shipped file {src / name} differs from it after copying "
                                   "(a failing disk?): check the disk and run again")
    if verbose:
        minutes = manifest.get("train_seconds", 0) / 60
        print(f"{label}: using the model shipped with the book for this preset (trained by `{manifest.get('command')}` "
              f"on {manifest.get('machine', {}).get('device_name', 'a CPU')}, {minutes:.0f} min of training, "
              f"{manifest.get('data', {}).get('description', '')}). To train it yourself instead, run "
              f"trained_runs(use_shipped=False) (about {minutes:.0f} min on such a machine).")
    return True


def shipped_copy_dir(cfg: TrainConfig, root=None) -> Path:
    """Where the shipped model of ``cfg`` is copied: ``<runs root>/<preset>-<run>-<hash>-shipped``,
    beside (never inside) the reader's own run folder :func:`run_dir`."""
    own = run_dir(cfg, root)
    return own.with_name(f"{own.name}-shipped")


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
    small *fake* CIFAR in the standard layout is written to a temporary folder only this user
    can write (class-coloured noise: no real images) and a message says so, and how to get the
    real images: the chapters then run, but their numbers describe the fake data.
    """
    name = preset_name(preset)
    download = name != "smoke" or custom_source(dataset)
    try:
        ensure_dataset(dataset, data_dir, download=download, progress=False)
        return resolve_data_dir(data_dir)
    except DatasetNotFoundError as err:
        n_train, n_test = _fake_sizes(name)
        fake = _fake_data(dataset, n_train, n_test)
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


def _fake_data(dataset: str, n_train: int, n_test: int) -> Path:
    """The folder of the fake data set: ``cnet_lib-fake-<dataset>-<n_train>-<n_test>`` in a folder only
    this user can write (:func:`cnet_lib.runtime.files.private_temp_dir`), written once, whole (into a
    fresh temporary folder, then renamed into place) and under a lock, so two notebooks never read
    a half-written copy."""
    fake = private_temp_dir() / f"cnet_lib-fake-{dataset}-{n_train}-{n_test}"
    with folder_lock(fake, f"writing a fake {dataset}"):
        try:
            ensure_dataset(dataset, fake, download=False)
        except DatasetNotFoundError:
            fake.mkdir(exist_ok=True)
            with tempfile.TemporaryDirectory(dir=fake, prefix=".writing-") as tmp:
                written = write_fake_cifar(tmp, n_train=n_train, n_test=n_test,
                                           num_classes=DATASETS[dataset].num_classes, seed=0)
                target = fake / written.name
                if target.exists():  # an incomplete copy: kept aside, never read
                    set_aside(target)
                os.replace(written, target)
    return fake


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
    training data, on ``device``: a batch to push through a model (``n``: an integer >= 1)."""
    check_int("n", n, low=1, example=64)
    data = study_data(cfg, device, with_train=False)
    return normalize(data.test_x[:n], data.mean, data.std)


def _snapshots_problem(obj: Any) -> Optional[str]:
    """What is wrong with the parsed contents of a θ snapshots file (``None``: nothing)."""
    snaps = obj.get("snapshots") if isinstance(obj, dict) else None
    if not isinstance(snaps, list) or not all(
            isinstance(s, dict) and isinstance(s.get("epoch"), int) and isinstance(s.get("blocks"), list) for s in snaps):
        return "it does not hold a list of snapshots, each with an epoch and its blocks (an older format?)"
    return None


def _read_snapshots(folder: Path, label: str) -> Optional[list]:
    """The θ snapshots recorded in ``folder`` (``None`` without a usable file: a damaged or
    older-format one is set aside with one sentence, :func:`cnet_lib.runtime.json_cache.read_cache`)."""
    obj = read_cache(folder / SNAPSHOTS, f"{label}: the θ(t) snapshots", _snapshots_problem)
    return None if obj is None else obj["snapshots"]


def _initial_snapshot(cfg: TrainConfig) -> dict:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)  # train() builds the initial model exactly like this
        init = build_model(cfg)
    return theta_snapshot(init, cfg.basis, epoch=0)


class _SnapshotRecorder:
    """``on_epoch`` callback of :func:`train`: reads the checkpoint just written and appends θ̂.

    A snapshots file that cannot be read is set aside (one sentence) and the record starts again
    from the initial θ(t): the epochs it held are not recorded any more."""

    def __init__(self, out: Path, cfg: TrainConfig, verbose: bool, label: str):
        self.out, self.cfg, self.verbose, self.label = out, cfg, verbose, label
        self.snaps = _read_snapshots(out, label) or []
        if not self.snaps:
            self.snaps = [_initial_snapshot(cfg)]
            self._write()

    def _write(self):
        write_cache(self.out / SNAPSHOTS, json.dumps({"run_hash": run_hash(self.cfg), "snapshots": self.snaps}),
                    f"{self.label}: the θ(t) snapshots")

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
    checkpoint_sha256: str = ""  # of the checkpoint file the model was loaded from, or just written
    shipped: bool = False  # the model shipped with the book (out_dir is its copy)

    @property
    def label(self) -> str:
        return run_label(self.name)

    @property
    def checkpoint(self) -> Path:
        return self.out_dir / CHECKPOINT

    @property
    def checkpoint_digest(self) -> str:
        """The SHA-256 of the checkpoint this model came from: recorded when it was loaded or
        trained (under the run folder's lock), else read from the file now."""
        return self.checkpoint_sha256 or file_digest(self.checkpoint)

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


def _set_aside_damaged_checkpoint(folder: Path, label: str, then: str = "this run is trained again") -> None:
    """A cached run whose checkpoint cannot be read (truncated, damaged, foreign) is not lost and
    does not stop the chapter: the file is renamed ``checkpoint.pt.damaged-<time>``, with one
    sentence saying so and what happens ``then`` (by default the run is trained again)."""
    ckpt = folder / CHECKPOINT
    problem = describe_checkpoint_file(ckpt) if ckpt.is_file() else None
    if problem:
        aside = set_aside(ckpt)
        print(f"{label}: {problem}; it was moved to {aside.name} and {then}.")


def _epochs_saved(folder: Path) -> int:
    """The epochs a run folder's checkpoint holds (0 without a readable one)."""
    try:
        return int(load_checkpoint(folder / CHECKPOINT, map_location="cpu")["extra"]["epoch"])
    except (OSError, CheckpointError, KeyError, TypeError, ValueError):
        return 0


def _load_finished(run: str, cfg: TrainConfig, folder: Path, device, t0: float, verbose: bool,
                   writable: bool, shipped: bool = False) -> Optional[StudyRun]:
    """The finished run in ``folder`` (its lock held, or the folder unwritable), or ``None`` when the
    folder holds no finished run of ``cfg``.  The checkpoint's SHA-256 is recorded with it; θ
    snapshots that cannot be read are rebuilt from the checkpoint (the first and the last epoch)."""
    label = run_label(run)
    if not is_finished(folder, cfg):
        return None
    digest = file_digest(folder / CHECKPOINT)
    model, ck = load_model(folder, device)
    if config_diff(ck["config"], cfg.identity()):
        return None
    history = list(ck["extra"]["history"])
    recorded = (folder / SNAPSHOTS).is_file()
    snaps = _read_snapshots(folder, label)
    if snaps is None:
        snaps = []
        if recorded:  # it was there, but damaged: rebuilt from what the checkpoint holds
            snaps = [_initial_snapshot(cfg), theta_snapshot(ck["model"], cfg.basis, epoch=history[-1]["epoch"],
                                                            refined=bool(history[-1].get("refined")))]
            print(f"{label}: θ(t) is now recorded for epochs 0 and {history[-1]['epoch']} only (from the checkpoint); "
                  "the epochs between were in the damaged file.")
            if writable:
                write_cache(folder / SNAPSHOTS, json.dumps({"run_hash": run_hash(cfg), "snapshots": snaps}),
                            f"{label}: the θ(t) snapshots")
    out = StudyRun(run, cfg, model, history, folder, snaps, False, time.perf_counter() - t0, digest, shipped)
    if verbose:
        print(f"{label}: loaded the trained model from {folder} ({len(history)} epochs, test accuracy "
              f"{out.final_accuracy:.4f})")
    return out


def _own_finished(run: str, cfg: TrainConfig, device, t0: float, verbose: bool) -> Optional[StudyRun]:
    """The reader's own finished run of ``cfg`` (None when there is none).  The folder is locked
    only when it exists, and a damaged checkpoint is set aside; an unfinished run is left as it
    is, with a sentence saying it is kept and how to continue it."""
    folder = Path(cfg.out_dir)
    if not folder.is_dir():
        return None
    label = run_label(run)
    with folder_lock(folder, f"loading {label}", required=False) as locked:
        if locked:
            _set_aside_damaged_checkpoint(folder, label, "the model shipped with the book is used instead")
        loaded = _load_finished(run, cfg, folder, device, t0, verbose, locked)
        if loaded is None and (folder / CHECKPOINT).is_file():
            done = _epochs_saved(folder)
            print(f"{label}: your own training of this run is kept in {folder} (epoch {done} of {cfg.epochs} saved); "
                  "the model shipped with the book is used meanwhile. To continue yours, run "
                  "trained_runs(use_shipped=False).")
    return loaded


def _writable_copy_dir(copy: Path, label: str) -> Path:
    """``copy`` when its runs folder can be written, else the same name in this user's private
    temporary folder (said in one sentence): the shipped package's own folder is never written."""
    try:
        with folder_lock(copy, f"checking the shipped {label}"):
            check_writable(copy)
        return copy
    except FolderNotWritable:
        fallback = private_temp_dir() / copy.name
        print(f"{label}: the runs folder {copy.parent} cannot be written, so the shipped model is copied to "
              f"{fallback.parent}, which the system may clear; set CNET_RUNS_DIR to a folder you can write to keep "
              "what is computed from it.")
        return fallback


def _shipped_run(run: str, cfg: TrainConfig, root, device, t0: float, verbose: bool) -> StudyRun:
    """The model shipped with the book for ``cfg``: verified, copied (once) into
    :func:`shipped_copy_dir` under its lock (into this user's private temporary folder when the
    runs root cannot be written), and loaded from there."""
    label = run_label(run)
    folder = _writable_copy_dir(shipped_copy_dir(cfg, root), label)
    with folder_lock(folder, f"installing the shipped {label}"):
        _install_shipped(folder, cfg, label, verbose)
        loaded = _load_finished(run, dataclasses.replace(cfg, out_dir=str(folder)), folder, device, t0, False, True,
                                shipped=True)
    if loaded is None:
        raise ShippedFileError(f"the shipped model in {folder} is not a finished run of the {cfg.preset} preset's "
                               f"{run!r}: {REINSTALL}")
    loaded.config = cfg
    return loaded


def _train_own(run: str, cfg: TrainConfig, device, t0: float, verbose: bool, data_box: list) -> StudyRun:
    """The reader's own run of ``cfg``, loaded when finished, else trained (or resumed) in its
    folder, under the folder's lock for the whole time (a second process waits, then loads it)."""
    folder = Path(cfg.out_dir)
    label = run_label(run)
    fix = "set CNET_RUNS_DIR (or root=) to a folder you can write to"
    with folder_lock(folder, f"training {label}", required=False) as locked:
        if locked:
            _set_aside_damaged_checkpoint(folder, label)
        loaded = _load_finished(run, cfg, folder, device, t0, verbose, locked) if folder.is_dir() else None
        if loaded is not None:
            return loaded
        if not locked:
            raise FolderNotWritable(errno.EACCES, f"{label} must be trained, but the runs folder {folder.parent} "
                                                  f"cannot be written: {fix}")
        check_writable(folder, fix)
        if data_box[0] is None:
            data_box[0] = study_data(cfg, device)
        data = data_box[0]
        if verbose:
            print(f"{label}: training {cfg.epochs} epochs on {len(data.train_y)} images "
                  f"({cfg.scheme}, N_t = M: {cfg.n_steps or cfg.n_basis} -> {cfg.final_n_steps()}) into {folder}")
        rec = _SnapshotRecorder(folder, cfg, verbose, label)
        try:
            result = train(cfg, data=data, on_epoch=rec)
        except KeyboardInterrupt:
            print(f"{label}: {interrupted_message(folder, how='run this cell again')}")
            raise
        digest = file_digest(folder / CHECKPOINT)
    return StudyRun(run, cfg, result.model, list(result.history), folder, rec.snaps, True, time.perf_counter() - t0,
                    digest)


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


def _check_run_names(runs, preset: str, known: Sequence[str]) -> list[str]:
    """``runs`` as a list of the preset's run names (a single name may be given as a string)."""
    names = [runs] if isinstance(runs, str) else list(runs)
    if not names:
        raise ValueError(f"runs names no run; give some of {', '.join(known)} (or runs=None for all)")
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown run {unknown[0]!r}: the {preset} preset's runs are {', '.join(known)} "
                         f"(e.g. runs=[{known[0]!r}])")
    return names


def trained_runs(preset: Optional[str] = None, *, root=None, device=None, data_dir=None, runs: Optional[Sequence[str]] = None,
                 progress: bool = False, verbose: bool = True, use_shipped: bool = True, **overrides) -> dict[str, StudyRun]:
    """The preset's image runs, trained once and afterwards reloaded: ``{run name: StudyRun}``.

    ``preset`` defaults to ``$CNET_PRESET``; ``root`` to ``$CNET_RUNS_DIR`` or
    ``~/.cache/cnet_lib/runs``; ``device`` to the default device; ``runs`` (names of the preset's
    runs; an unknown one is refused) to all of them.  A finished run is loaded from its checkpoint
    without touching the data; an interrupted one resumes from its last epoch.  ``overrides`` are
    applied to every run's :class:`TrainConfig` (they change its hash).

    With ``use_shipped`` (the default), a run the book ships a trained model for (:func:`shipped_run`)
    is loaded from its verified copy (:func:`verify_shipped`, :func:`shipped_copy_dir`) unless the
    reader has finished that run themselves; a reader's unfinished run is kept as it is (a sentence
    says how to continue it).  ``use_shipped=False`` loads or trains the reader's own run.  Every run
    folder is locked while it is used (a second process waits, then loads the result).
    """
    device = resolve_device(device)
    names = None if runs is None else _check_run_names(runs, preset_name(preset), list(image_runs(preset_name(preset))))
    cfgs = _configs(preset, root, device, data_dir, progress, verbose, overrides)
    if names is not None:
        cfgs = {k: v for k, v in cfgs.items() if k in names}
    if verbose:
        _training_notice(cfgs, use_shipped)
    out: dict[str, StudyRun] = {}
    data_box: list = [None]  # the data, loaded once for every run that trains
    for run, cfg in cfgs.items():
        t0 = time.perf_counter()
        if use_shipped and shipped_run(cfg) is not None:
            out[run] = _own_finished(run, cfg, device, t0, verbose) or _shipped_run(run, cfg, root, device, t0, verbose)
        else:
            out[run] = _train_own(run, cfg, device, t0, verbose, data_box)
    return out
