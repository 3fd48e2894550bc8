"""The ODE-Nets of the chapter "Is a ResNet a forward-Euler integrator?": their settings, a check of the
two integration back-ends, and the trained models, cached for the session and on disk.

:func:`train_models` gives ODE-Net(A) for each training scheme A, obtained once per session: the cache is
keyed on the scheme and the *whole* frozen :class:`cnet_lib.pendulum.pendulum_presets.PendulumConfig` the
model is trained from (:func:`training_key`, from ``dataclasses.asdict``), so a changed or new field of
the config never reuses a stale model.  A missing model comes with its whole study (:func:`obtain_study`:
the shipped study, the reader's own on disk, or every ODE-Net of the study trained at once), so the
chapters that share a study train it once per machine, not once per chapter.
"""
from __future__ import annotations

import contextlib
import dataclasses
from typing import Mapping, Optional, Sequence

import torch

from ..core.schemes import get_scheme
from ..runtime.checkpoint import CheckpointError, remove_stale_temporaries
from ..runtime.locks import folder_lock
from ..runtime.progress import duration
from ..runtime.settings import Settings
from .batched_training import TrainingJob, train_batched
from .odenet import ODENet, ODENetFit, one_step
from .pendulum_presets import PendulumConfig
from .study_store import load_study, read_study, save_study, shipped_study_path, store_path, study_key
from .study_training import NOTICE_SECONDS, choose_device, choose_threads, training_notice

__all__ = ["setup_facts", "backend_agreement", "training_summary", "training_key", "study_configs", "job_for",
           "train_models", "obtain_study", "study_source"]

_TRAINED: dict = {}  # training_key -> ODENetFit, for this session


def setup_facts(cfg: PendulumConfig) -> dict:
    """The data and training settings of ``cfg``, as a flat dict: ``preset, dt_data, T_data, n_pairs``
    (training pairs (x_k, x_k+1)), ``n_iters, lr, lr_final, seed, hidden`` and ``n_parameters`` (of G)."""
    with torch.random.fork_rng(devices=[]):  # building G draws initial weights: leave the global state alone
        n_parameters = sum(p.numel() for p in ODENet(cfg.hidden).parameters())
    return dict(preset=cfg.name, dt_data=cfg.dt_data, T_data=cfg.T_data, n_pairs=cfg.data().n_pairs, n_iters=cfg.n_iters,
                lr=cfg.lr, lr_final=cfg.lr_final, seed=cfg.seed, hidden=cfg.hidden, n_parameters=n_parameters)


def backend_agreement(cfg: PendulumConfig, seed: int = 0) -> list[dict]:
    """One step of each training scheme with torchdiffeq and with ``cnet_lib.integrate``, from every
    training state, with an untrained G (initialised from ``torch.manual_seed(seed)``).

    Rows: ``scheme, max_difference`` (the largest absolute difference between the two steps).
    The global random state is left as it was.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        G = ODENet(hidden=cfg.hidden).double()
    x_in, _ = cfg.data().pairs()
    rows = []
    with torch.no_grad():
        for s in cfg.train_schemes:
            a = one_step(G, x_in, s, cfg.dt_data, backend="torchdiffeq")
            b = one_step(G, x_in, s, cfg.dt_data, backend="cnet")
            rows.append(dict(scheme=s, max_difference=(a - b).abs().max().item()))
    return rows


def training_summary(models: Mapping[str, ODENetFit]) -> list[dict]:
    """Rows ``trained, final_loss, one_step_rms, n_iters, seconds, trained_with, device``, one per trained model (see
    :class:`ODENetFit`: the seconds of the batch its ``trained_with`` models were trained in)."""
    return [dict(trained=a, final_loss=r.final_loss, one_step_rms=r.one_step_rms(), n_iters=r.n_iters, seconds=r.seconds,
                 trained_with=r.trained_with, device=r.device) for a, r in models.items()]


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
    one for this key, else the reader's own (``settings.runs_dir``, :mod:`cnet_lib.pendulum.study_store`),
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
