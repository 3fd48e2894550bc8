"""The ODE-Nets of the chapter "Is a ResNet a forward-Euler integrator?": their settings, a check of the
two integration back-ends, and the trained models, cached for the session.

:func:`train_models` trains ODE-Net(A) for each training scheme A once per session: the cache is keyed
on the scheme and the *whole* frozen :class:`cnet_lib.pendulum.pendulum_presets.PendulumConfig` the
model is trained from (:func:`training_key`, from ``dataclasses.asdict``), so a changed or new field of
the config never reuses a stale model.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping, Optional, Sequence

import torch

from ..core.schemes import get_scheme
from .batched_training import TrainingJob
from .odenet import ODENet, ODENetFit, one_step, train_odenet
from .pendulum_presets import PendulumConfig

__all__ = ["setup_facts", "backend_agreement", "training_summary", "training_key", "study_configs", "job_for",
           "train_models"]

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
    """Rows ``trained, final_loss, one_step_rms, n_iters, seconds``, one per trained model (see :class:`ODENetFit`)."""
    return [dict(trained=a, final_loss=r.final_loss, one_step_rms=r.one_step_rms(), n_iters=r.n_iters, seconds=r.seconds)
            for a, r in models.items()]


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
) -> dict:
    """ODE-Net(A) for each training scheme A on the same data: ``{A: ODENetFit}``.

    All models share the data (Δt_data, T_data) and the seed, so they start from the same initial
    G.  ``dt_data`` and ``n_iters`` replace the config's for this call.  Results are cached for the
    session under :func:`training_key` of the config they are trained from: asking again is free.
    """
    schemes = tuple(cfg.train_schemes if schemes is None else schemes)
    cfg = dataclasses.replace(cfg, dt_data=cfg.dt_data if dt_data is None else dt_data,
                              n_iters=cfg.n_iters if n_iters is None else n_iters)
    data = cfg.data()
    out = {}
    for s in schemes:
        key = training_key(cfg, s)
        if key not in _TRAINED:
            _TRAINED[key] = train_odenet(data, s, cfg.n_iters, lr=cfg.lr, lr_final=cfg.lr_final, seed=cfg.seed,
                                         hidden=cfg.hidden, progress=progress)
        out[s] = _TRAINED[key]
    return out
