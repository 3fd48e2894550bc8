"""The pendulum study's trained ODE-Nets: what each run-size preset trains (:class:`PendulumConfig`), the study on
disk and as it ships, and the models obtained once per session and once per machine.

*Presets.*  Which preset a session runs is its setting (``ctx.preset``, :class:`cnet_lib.runtime.settings.Settings`);
:func:`config_for` returns the configuration of a preset, with field overrides.

*Obtained once.*  :func:`train_models` gives ODE-Net(A) for each training scheme A, obtained once per session: the
cache is keyed on the scheme and the *whole* frozen :class:`PendulumConfig` the model is trained from
(:func:`training_key`, from ``dataclasses.asdict``), so a changed or new field of the config never reuses a stale
model.  A missing model comes with its whole study (:func:`obtain_study`: the shipped study, the reader's own on
disk, or every ODE-Net of the study trained at once by :func:`cnet_lib.pendulum.train_batched`), so the chapters
that share a study train it once per machine, not once per chapter.

*On disk.*  A study (:func:`study_configs`: the ODE-Nets of the training schemes, and the coarse-Δt_data controls)
is saved as one checkpoint (:func:`cnet_lib.runtime.checkpoint.save_checkpoint`: written atomically, read with
``weights_only=True``) at ``<runs root>/pendulum/<preset>-<hash>.pt``, where ``<hash>`` is a short hash of
:func:`study_key`: every field of the config (``dataclasses.asdict``) and the list of models, so a changed field
never reuses a stale study.  The key is also stored in the file and compared when it is read.  A file that is cut
off, damaged, of another key or not a file (a link, a pipe) is set aside (``<name>.damaged-<time>``, kept, never
deleted), one sentence says so, and the study is trained again, as the image study's caches are
(:mod:`cnet_lib.runtime.checkpoint`).  The ``gpu`` preset's study ships with the book, in the same format
(``cnet_lib/shipped/pendulum/``), so that its chapters on a machine without a GPU load it instead of training it
for minutes on the CPU.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Optional, Sequence, Union

import torch

from ..core.schemes import get_scheme
from ..core.validation import check_float, check_int
from ..runtime.checkpoint import (CheckpointError, CheckpointSaveError, load_checkpoint, remove_stale_temporaries,
    save_checkpoint)
from ..runtime.device import environment
from ..runtime.files import folder_lock, set_aside, shown_path, write_problem
from ..runtime.progress import duration
from ..runtime.records import kind_of
from ..runtime.settings import Settings, select_preset
from .batched_training import TrainingJob, choose_device, choose_threads, train_batched
from .odenet import ODENet, ODENetFit
from .physics import G as G_DEFAULT, RHO0, make_data

__all__ = ["PendulumConfig", "PENDULUM_PRESETS", "config_for", "STORE_FORMAT", "SHIPPED_PENDULUM", "study_key",
           "study_hash", "store_path", "shipped_study_path", "save_study", "load_study", "read_study", "training_key",
           "study_configs", "job_for", "train_models", "obtain_study", "study_source", "NOTICE_SECONDS",
           "training_notice"]


# --------------------------------------------------------------------------- the presets
@dataclass(frozen=True)
class PendulumConfig:
    """Sizes of one run of the study (one entry of :data:`PENDULUM_PRESETS`).

    Data: ``Δt_data``, ``T_data``, ``ρ0``, ``g``.  Training: ``train_schemes`` (ODE-Net(A) for
    each A; the paper's "RK4" is torchdiffeq's ``rk4``, i.e. ``rk4_38``), ``n_iters`` full-batch
    Adam iterations with the learning rate decaying from ``lr`` to ``lr_final``, ``seed``.
    Evaluation: ``eval_schemes``; ``h_values`` (Δt = h·Δt_data) for Fig. 4(a) and the rollout
    explorer, ``interchange_h`` for Fig. 4(b); the ODE-Net slopes are fitted over
    ``h ∈ fit_h_odenet``.  Integrators: ``integrator_h`` and ``integrator_t_final`` for the
    convergence study on the true rate, slopes fitted over ``h ∈ fit_h_integrators``.
    Control: ODE-Nets trained at each coarser ``control_dt_data`` for ``control_iters``.
    ``flow_h``: the flow of a trained G is followed with classic RK4 at Δt = flow_h·Δt_data
    (its truncation error, ~1e-9, is far below any trained model's error).
    """

    name: str
    dt_data: float = 0.01
    T_data: float = 10.0
    rho0: float = RHO0
    g: float = G_DEFAULT
    train_schemes: tuple = ("euler", "midpoint", "rk4_38")
    eval_schemes: tuple = ("euler", "midpoint", "rk4_classic", "rk4_38")
    n_iters: int = 4000
    lr: float = 1e-2
    lr_final: float = 1e-5
    seed: int = 0
    hidden: int = 50
    h_values: tuple = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
    interchange_h: tuple = (0.5, 1.0, 2.0)
    fit_h_odenet: tuple = (2.0, 8.0)
    integrator_h: tuple = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0, 2.0, 4.0)
    integrator_t_final: float = 1.0
    fit_h_integrators: tuple = (1 / 16, 1.0)
    control_dt_data: tuple = (0.02, 0.05, 0.1)
    control_schemes: tuple = ("midpoint", "rk4_38")
    control_iters: int = 3000
    flow_h: float = 0.25

    def __post_init__(self) -> None:
        """Check every size before any work (see :mod:`cnet_lib.core.validation`)."""
        for name, example in (("dt_data", 0.01), ("T_data", 10.0), ("g", G_DEFAULT), ("lr", 1e-2), ("lr_final", 1e-5),
                              ("integrator_t_final", 1.0), ("flow_h", 0.25)):
            check_float(name, getattr(self, name), low=0, low_open=True, example=example)
        check_float("rho0", self.rho0, low=-math.pi, high=math.pi, low_open=True, high_open=True, example=RHO0)
        for name, example in (("n_iters", 4000), ("control_iters", 3000), ("hidden", 50)):
            check_int(name, getattr(self, name), low=1 if name == "hidden" else 0, example=example)
        for name in ("train_schemes", "eval_schemes", "control_schemes"):
            for scheme in getattr(self, name):
                get_scheme(scheme)
        for name in ("h_values", "interchange_h", "fit_h_odenet", "integrator_h", "fit_h_integrators", "control_dt_data"):
            for i, v in enumerate(getattr(self, name)):
                check_float(f"{name}[{i}]", v, low=0, low_open=True, example=1.0)

    def data(self, dt_data: Optional[float] = None):
        """The training data of this config (at ``dt_data`` instead of its own, when given)."""
        return make_data(self.dt_data if dt_data is None else dt_data, self.T_data, self.rho0, self.g)


PENDULUM_PRESETS: dict = {
    # CI: the smallest run at which every qualitative claim of the chapter still holds.
    "smoke": PendulumConfig(
        name="smoke",
        n_iters=1000,
        lr_final=1e-4,
        h_values=(0.5, 1.0, 2.0),
        interchange_h=(0.5, 1.0, 2.0),
        fit_h_odenet=(1.0, 2.0),
        integrator_h=(1 / 8, 1 / 4, 1 / 2, 1.0),
        fit_h_integrators=(1 / 8, 1.0),
        control_dt_data=(0.05,),
        control_iters=500,
    ),
    # The default without a GPU: each chapter in a few minutes on 2 CPU cores.
    "cpu": PendulumConfig(name="cpu", n_iters=4000, control_iters=3000),
    # The models are tiny and train on the CPU either way; the gpu preset just trains longer.
    "gpu": PendulumConfig(name="gpu", n_iters=10000, control_iters=6000, h_values=(0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)),
    "paper": PendulumConfig(
        name="paper",
        n_iters=20000,
        lr_final=1e-6,
        control_iters=10000,
        h_values=(0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0),
        integrator_h=(1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0, 2.0, 4.0),
        fit_h_integrators=(1 / 32, 1.0),
    ),
}


def config_for(preset: str, **overrides) -> PendulumConfig:
    """The :class:`PendulumConfig` of ``preset`` (``ctx.preset`` in a chapter), with field overrides."""
    cfg = select_preset(PENDULUM_PRESETS, preset)
    return replace(cfg, **overrides) if overrides else cfg


# --------------------------------------------------------------------------- on disk and as it ships
PathLike = Union[str, os.PathLike]
STORE_FORMAT = 1
"""Raised when what the file holds changes: an older file then has another key and is trained again."""
SHIPPED_PENDULUM = Path(__file__).resolve().parents[1] / "shipped" / "pendulum"
"""Where the studies that ship with the book are (package data)."""


def study_key(cfg: PendulumConfig, models: Sequence[tuple]) -> dict:
    """What a study's trained ODE-Nets depend on: the store's format, every field of ``cfg`` and ``models``,
    ``(scheme, Δt_data, n_iters)`` of each ODE-Net in order; as JSON gives it back (tuples become lists)."""
    key = {"study": "pendulum ODE-Nets", "format": STORE_FORMAT, "config": dataclasses.asdict(cfg),
           "models": [list(m) for m in models]}
    return json.loads(json.dumps(key, sort_keys=True))


def study_hash(key: dict, n: int = 12) -> str:
    """The first ``n`` hex digits of the SHA-256 of ``key`` as sorted JSON."""
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:n]


def store_path(cfg: PendulumConfig, key: dict, runs_dir: PathLike) -> Path:
    """``<runs_dir>/pendulum/<preset>-<hash of the key>.pt``."""
    return Path(runs_dir).expanduser() / "pendulum" / f"{cfg.name}-{study_hash(key)}.pt"


def shipped_study_path(cfg: PendulumConfig, key: dict) -> Optional[Path]:
    """The study that ships with the book for this key, when there is one."""
    path = SHIPPED_PENDULUM / f"{cfg.name}-{study_hash(key)}.pt"
    return path if path.is_file() else None


def save_study(path: PathLike, key: dict, fits: Sequence[ODENetFit], say: Callable[[str], None] = print) -> bool:
    """Write the study ``fits`` (in the order of ``key["models"]``, with the machine they were trained on) to
    ``path`` atomically; True when written.
    A folder that refuses (read-only, full disk) is said in one sentence and the models are kept for this
    session only."""
    state = {f"{i}.{name}": t.detach().cpu() for i, fit in enumerate(fits) for name, t in fit.model.state_dict().items()}
    records = [dict(scheme=f.scheme, dt_data=f.dt_data, lr=f.lr, seed=f.seed, backend=f.backend,
                    losses=torch.tensor(f.losses, dtype=torch.float64), seconds=f.seconds, trained_with=f.trained_with,
                    optimizer_state=f.optimizer_state, device=f.device) for f in fits]
    extra = {"fits": records, "trained_on": environment(fits[0].device), "date": time.strftime("%Y-%m-%d")}
    try:
        save_checkpoint(path, state, key, extra)
        return True
    except CheckpointSaveError as err:
        say(f"the trained ODE-Nets could not be saved in {path} ({write_problem(err)}): they are used for this session "
            "only; to keep them, set CNET_RUNS_DIR to a folder you can write to (or free some space).")
        return False


def read_study(path: PathLike, key: dict) -> tuple:
    """``(fits, provenance)`` of the study at ``path`` (its key must be ``key``); raises
    :class:`cnet_lib.runtime.checkpoint.CheckpointError` for a damaged or foreign file.  ``provenance``:
    ``trained_on`` (the machine, :func:`cnet_lib.runtime.device.environment`), ``date`` and ``seconds``."""
    ck = load_checkpoint(path, expected_config=key)
    try:
        fits = []
        for i, (record, (scheme, dt_data, n_iters)) in enumerate(zip(ck["extra"]["fits"], key["models"], strict=True)):
            hidden = ck["model"][f"{i}.inner.weight"].shape[0]
            with torch.random.fork_rng(devices=[]):  # building a module draws weights: leave the global state alone
                model = ODENet(hidden).double()
            model.load_state_dict({k.split(".", 1)[1]: v for k, v in ck["model"].items() if k.split(".", 1)[0] == str(i)})
            losses = record["losses"].tolist()
            if record["scheme"] != scheme or len(losses) != n_iters:
                raise ValueError(f"model {i} is {record['scheme']} with {len(losses)} iterations, not {scheme} with {n_iters}")
            fits.append(ODENetFit(model=model.eval(), scheme=scheme, dt_data=float(dt_data), lr=record["lr"],
                                  seed=record["seed"], backend=record["backend"], losses=losses, seconds=record["seconds"],
                                  optimizer_state=record["optimizer_state"], trained_with=record["trained_with"],
                                  device=record["device"]))
    except (KeyError, ValueError, TypeError, AttributeError, RuntimeError) as err:
        raise CheckpointError(f"{path} is not a whole pendulum study ({type(err).__name__}: {str(err)[:120]})") from None
    seconds = max((f.seconds for f in fits), default=0.0)
    return fits, {"trained_on": ck["extra"].get("trained_on", {}), "date": ck["extra"].get("date", "?"), "seconds": seconds}


def load_study(path: PathLike, key: dict, what: str, say: Callable[[str], None] = print) -> Optional[tuple]:
    """:func:`read_study`, or ``None`` when there is no file; a damaged file or one of another key is set aside
    (kept as ``<name>.damaged-<time>``) with one sentence through ``say`` naming ``what``, and ``None`` is
    returned so that the caller trains the study again."""
    path = Path(path)
    if not os.path.lexists(path):
        return None
    try:
        if path.is_symlink() or not path.is_file():  # planted in a shared runs folder: never read through
            raise CheckpointError(f"{path} is {kind_of(os.lstat(path).st_mode)}, not a study file")
        return read_study(path, key)
    except CheckpointError as err:
        problem = str(err)
    try:
        where = f"it was moved to {set_aside(path).name} (kept) and is trained again"
    except OSError as err:
        where = f"it cannot be moved aside ({write_problem(err)}), so it is trained again for this session only"
    say(f"{what}: {shown_path(path)} cannot be used ({problem[:200]}); {where}.")
    return None


# --------------------------------------------------------------------------- obtained once per session and per machine
_TRAINED: dict = {}  # training_key -> ODENetFit, for this session


def training_key(cfg: PendulumConfig, scheme: str) -> tuple:
    """The cache key of ODE-Net(``scheme``) trained from ``cfg``: the scheme's canonical name and every
    field of the frozen config (``dataclasses.asdict``), sorted by name."""
    return (get_scheme(scheme).name, tuple(sorted(dataclasses.asdict(cfg).items())))


def study_configs(cfg: PendulumConfig, controls: bool = True) -> list:
    """The ODE-Nets of the study of ``cfg``: ``[(config, schemes)]``, the config each is trained from (the
    cache key, :func:`training_key`) with its schemes: ``cfg`` with its training schemes, then (``controls``)
    each coarser ``control_dt_data`` with the control schemes, ``control_iters`` iterations."""
    out = [(cfg, tuple(cfg.train_schemes))]
    if controls:
        out += [(dataclasses.replace(cfg, dt_data=d, n_iters=cfg.control_iters), tuple(cfg.control_schemes))
                for d in cfg.control_dt_data]
    return out


def job_for(cfg: PendulumConfig, scheme: str) -> TrainingJob:
    """The :class:`TrainingJob` of ODE-Net(``scheme``) trained from ``cfg``."""
    return TrainingJob(scheme, cfg.dt_data, cfg.n_iters, lr=cfg.lr, lr_final=cfg.lr_final, seed=cfg.seed,
                       hidden=cfg.hidden, T_data=cfg.T_data, rho0=cfg.rho0, g=cfg.g)


def train_models(
    cfg: PendulumConfig,
    schemes: Optional[Sequence[str]] = None,
    dt_data: Optional[float] = None,
    n_iters: Optional[int] = None,
    progress: bool = True,
    settings: Optional[Settings] = None,
    use_shipped: bool = True,
) -> dict:
    """ODE-Net(A) for each training scheme A on the same data: ``{A: ODENetFit}``.

    All models share the data (Δt_data, T_data) and the seed, so they start from the same initial
    G.  ``dt_data`` and ``n_iters`` replace the config's for this call.  Results are cached for the
    session under :func:`training_key` of the config they are trained from: asking again is free.

    A model not yet in this session comes with its whole study (:func:`study_configs`: the training
    schemes and the coarse-Δt_data controls, all trained at once by :func:`cnet_lib.pendulum.train_batched`),
    from the first place that has it (:func:`obtain_study`): the study that ships with the book
    (``use_shipped``), the reader's own, saved under ``settings.runs_dir`` (with ``settings``, a chapter's
    ``ctx.settings``), or trained now, on the device :func:`cnet_lib.pendulum.choose_device` measures faster.
    """
    schemes = tuple(get_scheme(s).name for s in (cfg.train_schemes if schemes is None else schemes))
    sub = dataclasses.replace(cfg, dt_data=cfg.dt_data if dt_data is None else dt_data,
                              n_iters=cfg.n_iters if n_iters is None else n_iters)
    keys = {s: training_key(sub, s) for s in schemes}
    if any(k not in _TRAINED for k in keys.values()):
        base, configs = _study_of(cfg, sub, schemes)
        obtain_study(base, configs, settings=settings, use_shipped=use_shipped, progress=progress)
    return {s: _TRAINED[k] for s, k in keys.items()}


def study_source(cfg: PendulumConfig, settings: Settings) -> tuple:
    """Where :func:`train_models` with ``settings`` (and the shipped studies used) takes the study of ``cfg``
    from, without loading it: ``("shipped", path)``, ``("saved", path)`` (the reader's own) or
    ``("trained", None)``."""
    configs = study_configs(cfg)
    key = study_key(cfg, [(get_scheme(s).name, c.dt_data, c.n_iters) for c, ss in configs for s in ss])
    shipped = shipped_study_path(cfg, key)
    if shipped is not None:
        return "shipped", shipped
    path = store_path(cfg, key, settings.runs_dir)
    return ("saved", path) if path.is_file() else ("trained", None)


def _study_of(cfg: PendulumConfig, sub: PendulumConfig, schemes: Sequence[str]) -> tuple:
    """``(base config, study_configs)`` of the study that holds ODE-Net(s) trained from ``sub`` for each s of
    ``schemes``: the study of ``cfg`` (with ``sub``'s iterations when ``sub`` is at ``cfg``'s Δt_data), else
    just these models."""
    base = dataclasses.replace(cfg, n_iters=sub.n_iters) if sub.dt_data == cfg.dt_data else cfg
    configs = study_configs(base)
    inside = {training_key(c, s) for c, ss in configs for s in ss}
    if all(training_key(sub, s) in inside for s in schemes):
        return base, configs
    return sub, [(sub, tuple(schemes))]


def obtain_study(base: PendulumConfig, configs: Sequence[tuple], settings: Optional[Settings] = None,
                 use_shipped: bool = True, progress: bool = True) -> list:
    """Every ODE-Net of ``configs`` (``[(config, schemes)]``, :func:`study_configs` of ``base``) into this
    session's cache, and returned in that order: the shipped study when ``use_shipped`` and the book ships
    one for this key, else the reader's own (``settings.runs_dir``, :func:`save_study`),
    else trained now and saved there.  The study's file is locked meanwhile (two notebooks never train it
    twice: the second waits, then loads it)."""
    entries = [(c, get_scheme(s).name) for c, ss in configs for s in ss]
    keys = [training_key(c, s) for c, s in entries]
    if all(k in _TRAINED for k in keys):
        return [_TRAINED[k] for k in keys]
    key = study_key(base, [(s, c.dt_data, c.n_iters) for c, s in entries])
    path = store_path(base, key, settings.runs_dir) if settings is not None else None
    lock = folder_lock(path, "training the pendulum's ODE-Nets", required=False) if path else contextlib.nullcontext()
    with lock as locked:
        if locked:  # what a save killed mid-write left (only ended processes' files)
            remove_stale_temporaries(path.parent, [path.name])
        fits = _load(base, key, path, use_shipped)
        if fits is None:
            fits = _train([job_for(c, s) for c, s in entries], base.name, settings, progress)
            if path is not None:
                save_study(path, key, fits)
    for k, fit in zip(keys, fits):
        _TRAINED[k] = fit
    return list(fits)


def _provenance(fits: Sequence[ODENetFit], prov: dict) -> str:
    on = prov["trained_on"]
    if str(on.get("device", "")).startswith("cuda"):
        machine = f"a {on.get('device_name') or 'CUDA'} GPU"
    else:
        machine = f"a {on['cpu_count']}-core CPU" if on.get("cpu_count") else "a CPU"
    return f"{len(fits)} trained at once in {duration(prov['seconds'])} on {machine}, {prov['date']}"


def _load(base: PendulumConfig, key: dict, path, use_shipped: bool) -> Optional[list]:
    """The study from the book's shipped copy (``use_shipped``) or from ``path``, each said in one line; None."""
    shipped = shipped_study_path(base, key) if use_shipped else None
    if shipped is not None:
        try:
            fits, prov = read_study(shipped, key)
        except CheckpointError as err:
            print(f"the shipped pendulum study {shipped} cannot be read ({str(err)[:160]}): the installed package is "
                  "damaged (reinstall cnet_lib); the ODE-Nets are trained instead.")
        else:
            print(f"ODE-Nets of the '{base.name}' preset: the ones that ship with the book ({_provenance(fits, prov)}). "
                  "To train them yourself: pendulum.train_models(cfg, settings=ctx.settings, use_shipped=False).")
            return fits
    got = load_study(path, key, "the pendulum's trained ODE-Nets") if path is not None else None
    if got is not None:
        print(f"ODE-Nets of the '{base.name}' preset: the ones trained here before ({_provenance(*got)}), kept in the "
              "pendulum folder of the runs folder (ctx.settings.runs_dir); delete that folder to train them again.")
        return got[0]
    return None


def _train(jobs: Sequence[TrainingJob], preset: str, settings: Optional[Settings], progress: bool) -> list:
    """``jobs`` trained at once on the device measured faster, announced first when that takes long."""
    threads, cpu = choose_threads(jobs, settings.threads if settings is not None else None)
    graphs = settings.cuda_graphs if settings is not None else True
    device, estimates = choose_device(jobs, None if settings is None else settings.device, threads, graphs,
                                      cpu_seconds=cpu.get(threads))
    if len(estimates) > 1 or max(estimates.values()) > NOTICE_SECONDS:
        print(training_notice(preset, len(jobs), device, estimates))
    return train_batched(jobs, device=device, progress=progress, threads=threads, graphs=graphs,
                         desc=f"ODE-Nets ({preset})")


NOTICE_SECONDS = 30.0
"""A training estimated to take longer is announced before it starts (:func:`training_notice`)."""


def _smaller_presets(cfg_name: str) -> list:
    """The presets whose pendulum study trains fewer iterations than ``cfg_name``'s (smallest last)."""
    own = PENDULUM_PRESETS.get(cfg_name)
    if own is None:
        return ["cpu", "smoke"]
    size = lambda c: c.n_iters + c.control_iters  # noqa: E731
    return sorted((n for n, c in PENDULUM_PRESETS.items() if size(c) < size(own)), key=lambda n: -size(PENDULUM_PRESETS[n]))


def training_notice(preset: str, n_models: int, device: torch.device, estimates: dict) -> str:
    """What is said before a long training: how many ODE-Nets, where, the estimated time (and the other
    device's), and how to wait less (a smaller preset: ``%env CNET_PRESET=...`` and the setup cell again)."""
    chosen = estimates[str(device) if str(device) in estimates else device.type]
    others = "; ".join(f"{name}: about {duration(s)}" for name, s in estimates.items() if s != chosen)
    text = (f"Training the {n_models} ODE-Nets of the '{preset}' preset at once on {device}: about {duration(chosen)} "
            f"(estimated from a few iterations just now{'; ' + others if others else ''}).")
    smaller = _smaller_presets(preset)
    if smaller:
        text += (f" To wait less, run %env CNET_PRESET={smaller[0]} (fewer iterations), then the setup cell and this "
                 "cell again.")
    return text
