"""The ODE-Net of the paper's Section 3: a learned rate inside one Runge–Kutta step, its rollouts and its training.

The paper learns a rate ``G(x) = A tanh(W x + b)`` (50 hidden units) and embeds it in one step of a
Runge–Kutta scheme, ``F(x_k) = step(G, x_k, Δt_data)``, trained on the one-step loss
``Σ_k ‖F(x_k) − x_{k+1}‖²`` over states sampled every ``Δt_data`` (:mod:`cnet_lib.pendulum.physics`).
The step is computed with torchdiffeq's fixed-grid ``odeint`` (as in the paper) when torchdiffeq
has the scheme, otherwise with :func:`cnet_lib.integrate`; the two agree to round-off (tested).

Several models and several schemes roll out at once: :class:`StackedRate` evaluates M ODE-Nets on M states in
one batched product, and :func:`multi_scheme_rollout` advances row m of a state with its own scheme, at one
shared Δt (every row evaluates as many stages as the longest scheme has, with its own tableau's coefficients,
zero where its scheme has no such entry).  An added 0 is exact, so each row is the rollout
:func:`cnet_lib.integrate` computes with its own scheme, given the same rate values: bit for bit where every row
of the tableau is a single weight (Euler, midpoint), to rounding where integrate sums equal weights first
(:func:`cnet_lib.core.integrate.combination`) and a row here takes the weights one by one
(tests/test_pendulum_batched.py).
"""
from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence, Union

import numpy as np
import torch
from torch import nn

from ..core.integrate import check_n_steps, integrate
from ..core.schemes import Tableau, get_scheme
from ..core.validation import check_float, check_int
from ..runtime.device import torch_threads
from ..runtime.progress import progress_bar
from ..runtime.rich_text import scheme_label
from .physics import G, PendulumData, RHO0, exact_solution

__all__ = ["TORCHDIFFEQ_METHODS", "ODENet", "ODENetFit", "odenet_label", "one_step", "rollout", "global_error",
           "train_odenet", "initial_odenet", "check_training", "StackedRate", "multi_scheme_rollout"]

TORCHDIFFEQ_METHODS = {
    "euler": "euler",
    "midpoint": "midpoint",
    "heun": "heun2",
    "rk4_38": "rk4",
}
"""``cnet_lib`` scheme name -> torchdiffeq fixed-grid method with the *same* Butcher tableau.

torchdiffeq 0.2's fixed-grid solvers are ``euler``, ``midpoint``, ``heun2``, ``heun3``, ``rk4``
(Kutta's 3/8 rule, i.e. our ``rk4_38``) and the multistep Adams methods.  It has no classic
RK4, Ralston or Kutta's RK3 (its ``heun3`` is a different third-order tableau), so for
``rk4_classic``, ``ralston`` and ``rk3`` the step is computed with :func:`cnet_lib.integrate`.
"""


# --------------------------------------------------------------------------- the ODE-Net
class ODENet(nn.Module):
    """The learned rate ``G(x) = A tanh(W x + b)``: W is (hidden, 2), b (hidden,), A (2, hidden).

    ``forward(x)`` evaluates G on ``x`` of shape (..., 2); :meth:`rate` is the same as
    ``G(t, x)`` for integrators (the pendulum is autonomous, t is ignored).
    """

    def __init__(self, hidden: int = 50, dim: int = 2):
        super().__init__()
        self.hidden = hidden
        self.inner = nn.Linear(dim, hidden)  # W, b
        self.outer = nn.Linear(hidden, dim, bias=False)  # A

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.outer(torch.tanh(self.inner(x)))

    def rate(self, t, x: torch.Tensor) -> torch.Tensor:
        return self(x)


def odenet_label(scheme: str) -> str:
    """The book's name of the ODE-Net trained with ``scheme``: ``"euler"`` -> ``"ODE-Net(Euler)"``."""
    return f"ODE-Net({scheme_label(scheme)})"


class _TimeFree(nn.Module):
    """Wrap ``G(x)`` as ``func(t, x)`` for torchdiffeq (which calls ``func(t, y)``)."""

    def __init__(self, G: Callable[[torch.Tensor], torch.Tensor]):
        super().__init__()
        self.G = G

    def forward(self, t, x):
        return self.G(x)


def _as_rate(G) -> Callable[[float, torch.Tensor], torch.Tensor]:
    """``G(x)`` (an :class:`ODENet`, or :func:`true_rate`) as ``f(t, x)`` for :func:`cnet_lib.integrate`."""
    return lambda t, x: G(x)


def _backend_for(scheme: Union[str, Tableau], backend: str) -> str:
    tab = get_scheme(scheme)
    if backend not in ("auto", "torchdiffeq", "cnet"):
        raise ValueError(f"backend must be 'auto', 'torchdiffeq' or 'cnet', got {backend!r}")
    if backend == "torchdiffeq" and tab.name not in TORCHDIFFEQ_METHODS:
        raise ValueError(
            f"torchdiffeq has no fixed-grid method with the tableau of {tab.name!r}; "
            f"it covers {sorted(TORCHDIFFEQ_METHODS)} (its 'rk4' is our 'rk4_38'). Use backend='cnet'."
        )
    if backend == "auto":
        return "torchdiffeq" if tab.name in TORCHDIFFEQ_METHODS else "cnet"
    return backend


def one_step(G, x: torch.Tensor, scheme: Union[str, Tableau], dt: float, backend: str = "auto") -> torch.Tensor:
    """One step ``F(x) = step(G, x, Δt)`` of ``scheme`` for the autonomous rate ``G(x)``; batched over x.

    ``backend='torchdiffeq'`` calls ``odeint(func, x, [0, Δt], method=m, options={'step_size': Δt})``
    as the paper did (``m`` from :data:`TORCHDIFFEQ_METHODS`); ``'cnet'`` uses
    :func:`cnet_lib.integrate` with one step; ``'auto'`` (default) picks torchdiffeq when it has
    the scheme and cnet_lib otherwise (e.g. ``rk4_classic``).
    """
    tab = get_scheme(scheme)
    dt = float(dt)
    which = _backend_for(tab, backend)
    if which == "torchdiffeq":
        from torchdiffeq import odeint

        t = torch.tensor([0.0, dt], dtype=x.dtype, device=x.device)
        return odeint(_TimeFree(G), x, t, method=TORCHDIFFEQ_METHODS[tab.name], options={"step_size": dt})[-1]
    return integrate(_as_rate(G), x, tab, 1, t_span=(0.0, dt))


def rollout(
    G,
    x0,
    scheme: Union[str, Tableau],
    dt: float,
    n_steps: int,
    backend: str = "cnet",
) -> torch.Tensor:
    """Roll the scheme out from ``x0`` for ``N_t = n_steps`` steps of size ``Δt``: x_{n+1} = step(G, x_n, Δt).

    Returns the float64 path of shape ``(n_steps + 1, *x0.shape)``, without gradients.  ``G``
    is a rate ``G(x)`` (e.g. a trained :class:`ODENet`), or use ``G=true_rate`` for the true
    rate f.  ``backend='cnet'`` (default, fastest) uses :func:`cnet_lib.integrate`;
    ``'torchdiffeq'`` calls torchdiffeq's ``odeint`` on the exact grid ``t_n = n Δt``.
    """
    tab = get_scheme(scheme)
    x0 = torch.as_tensor(x0, dtype=torch.float64)
    dt = float(dt)
    with torch.no_grad():
        which = _backend_for(tab, backend)
        if which == "torchdiffeq":
            from torchdiffeq import odeint

            t = dt * torch.arange(n_steps + 1, dtype=torch.float64)
            return odeint(_TimeFree(G), x0, t, method=TORCHDIFFEQ_METHODS[tab.name])
        return integrate(_as_rate(G), x0, tab, int(n_steps), t_span=(0.0, dt * n_steps), return_path=True)


def global_error(path, t_final: float, rho0: float = RHO0, g: float = G) -> float:
    """The global error ``E = ‖x_N − x(t_final)‖₂`` of a rolled-out path whose last state is at ``t_final``.

    Non-finite paths (a blown-up rollout) give ``inf``.
    """
    xN = np.asarray(path[-1].detach().cpu() if isinstance(path, torch.Tensor) else path[-1], dtype=np.float64)
    if not np.all(np.isfinite(xN)):
        return math.inf
    return float(np.linalg.norm(xN - exact_solution(t_final, rho0, g)))


# --------------------------------------------------------------------------- training
@dataclass
class ODENetFit:
    """A trained ODE-Net and its history; pass it back as ``resume=`` to keep training.

    ``losses[i]`` is the one-step loss (mean over pairs of ‖F(x_k) − x_{k+1}‖² / Δt_data²) at
    iteration ``i``; ``seconds`` is the wall time spent training (all sessions together), shared by the
    ``trained_with`` models trained together in one batch (:func:`cnet_lib.pendulum.train_batched`; 1 when
    trained alone), on ``device``.
    """

    model: ODENet
    scheme: str
    dt_data: float
    lr: float
    seed: int
    backend: str
    losses: list = field(default_factory=list)
    seconds: float = 0.0
    optimizer_state: Optional[dict] = None
    trained_with: int = 1
    device: str = "cpu"

    @property
    def n_iters(self) -> int:
        return len(self.losses)

    @property
    def final_loss(self) -> float:
        return self.losses[-1] if self.losses else math.nan

    def one_step_rms(self) -> float:
        """RMS one-step residual ``sqrt(mean ‖F(x_k) − x_{k+1}‖²)`` implied by the last loss."""
        return math.sqrt(self.final_loss) * self.dt_data


def train_odenet(
    data: PendulumData,
    scheme: Union[str, Tableau],
    n_iters: int,
    lr: float = 1e-2,
    lr_final: Optional[float] = 1e-4,
    seed: int = 0,
    hidden: int = 50,
    backend: str = "auto",
    resume: Optional[ODENetFit] = None,
    progress: bool = True,
    threads: int = 1,
) -> ODENetFit:
    """Train ``G`` so that one step of ``scheme`` maps each ``x_k`` to ``x_{k+1}``.

    Full-batch Adam in float64 on the one-step loss

    .. math::

        L = \\frac{1}{N} \\sum_{k=0}^{N-1} \\frac{\\lVert F(x_k) - x_{k+1} \\rVert^2}{\\Delta t_\\text{data}^2},
        \\qquad F(x_k) = \\mathrm{step}(G, x_k, \\Delta t_\\text{data}),

    the paper's loss divided by Δt_data² (the same minimiser; without it the gradients are
    ~1e-10 and Adam's ε = 1e-8 would stall the optimiser).  The learning rate decays
    geometrically from ``lr`` to ``lr_final`` over the ``n_iters`` iterations (``lr_final=None``:
    constant).  ``seed`` fixes the initialisation.  ``resume=`` continues a previous
    :class:`ODENetFit` for ``n_iters`` more iterations (model and Adam state are copied, the
    original is left untouched).  Runs with ``threads`` torch threads (default 1, restored after).
    """
    tab = get_scheme(scheme)
    which = _backend_for(tab, backend)
    check_training(n_iters, lr, lr_final, hidden, threads, seed)
    model, losses, seconds = _starting_point(data, tab, seed, hidden, resume)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    if resume is not None and resume.optimizer_state is not None:
        opt.load_state_dict(copy.deepcopy(resume.optimizer_state))
        for group in opt.param_groups:
            group["lr"] = lr
    gamma = 1.0 if (lr_final is None or n_iters == 0) else (lr_final / lr) ** (1.0 / n_iters)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma)
    t0 = time.perf_counter()
    with torch_threads(threads):
        _fit(model, opt, sched, data, tab, which, n_iters, losses, progress)
    seconds += time.perf_counter() - t0
    return ODENetFit(
        model=model.eval(),
        scheme=tab.name,
        dt_data=data.dt_data,
        lr=lr,
        seed=seed,
        backend=which,
        losses=losses,
        seconds=seconds,
        optimizer_state=copy.deepcopy(opt.state_dict()),
    )


def check_training(n_iters: int, lr: float, lr_final: Optional[float], hidden: int, threads: int, seed: int) -> None:
    """Every training argument checked before any work (see :mod:`cnet_lib.core.validation`)."""
    check_int("n_iters", n_iters, low=0, example=4000)
    check_float("lr", lr, low=0, low_open=True, example=1e-2)
    if lr_final is not None:
        check_float("lr_final", lr_final, low=0, low_open=True, example=1e-4)
    check_int("hidden", hidden, low=1, example=50)
    check_int("threads", threads, low=1, example=1)
    check_int("seed", seed, example=0)


def initial_odenet(seed: int, hidden: int = 50) -> ODENet:
    """The untrained float64 ODE-Net that training with ``seed`` starts from (the global random state is
    left as it was): the same for :func:`train_odenet` and :func:`cnet_lib.pendulum.train_batched`."""
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
        return ODENet(hidden).double()


def _starting_point(data: PendulumData, tab: Tableau, seed: int, hidden: int,
                    resume: Optional[ODENetFit]) -> tuple[ODENet, list, float]:
    """``(model, losses so far, seconds so far)``: a copy of ``resume``'s (which must have been trained
    with the same scheme at the same Δt_data), else a fresh float64 ODE-Net drawn from ``seed``."""
    if resume is None:
        return initial_odenet(seed, hidden), [], 0.0
    if resume.scheme != tab.name or resume.dt_data != data.dt_data:
        raise ValueError(
            f"cannot resume a model trained with {resume.scheme!r} at Δt_data={resume.dt_data} "
            f"as {tab.name!r} at Δt_data={data.dt_data}"
        )
    return copy.deepcopy(resume.model), list(resume.losses), resume.seconds


def _fit(model: ODENet, opt: torch.optim.Optimizer, sched, data: PendulumData, tab: Tableau, backend: str,
         n_iters: int, losses: list, progress: bool) -> None:
    """``n_iters`` full-batch steps on the one-step loss (divided by Δt_data²), each loss appended to
    ``losses``; a progress bar when ``progress``."""
    x_in, x_out = data.pairs()
    dt = data.dt_data
    bar = progress_bar(total=n_iters, desc=f"ODE-Net({tab.name})") if progress and n_iters > 0 else None
    for it in range(n_iters):
        opt.zero_grad(set_to_none=True)
        pred = one_step(model, x_in, tab, dt, backend=backend)
        loss = ((pred - x_out) ** 2).sum(-1).mean() / dt**2
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
        if bar is not None and (it % 200 == 0 or it == n_iters - 1):
            bar.n = it + 1
            bar.set_postfix(loss=f"{losses[-1]:.2e}", refresh=False)
            bar.refresh()
    if bar is not None:
        bar.close()


# --------------------------------------------------------------------------- several models and schemes at once
class StackedRate(nn.Module):
    """Several ODE-Nets evaluated at once: state ``x`` of shape (M, 2) -> ``[G_m(x_m)]`` (M, 2).

    Rolling M models out together costs about as much as rolling out one (the work is tiny,
    the per-call overhead is what counts).
    """

    def __init__(self, models: Sequence[ODENet]):
        super().__init__()
        with torch.no_grad():
            self.W = torch.stack([m.inner.weight for m in models]).double()  # (M, H, 2)
            self.b = torch.stack([m.inner.bias for m in models]).double().unsqueeze(-1)  # (M, H, 1)
            self.A = torch.stack([m.outer.weight for m in models]).double()  # (M, 2, H)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = torch.baddbmm(self.b, self.W, x.unsqueeze(-1))
        return torch.bmm(self.A, torch.tanh(z)).squeeze(-1)


def _coefficients(schemes: Sequence[str], dtype) -> tuple:
    """``(a, b, stages)``: ``a[i]`` the ``(j, column (M, 1))`` of stage i's non-zero columns over all rows,
    ``b`` likewise for the weights, ``stages`` the most used stages of any row."""
    tabs = [get_scheme(s) for s in schemes]
    stages = max(max(t.used_stages) + 1 for t in tabs)

    def column(values: list):
        return torch.tensor(values, dtype=dtype).unsqueeze(1)

    a = []
    for i in range(stages):
        rows = [[float(t.a[i][j]) if i < t.stages and j < len(t.a[i]) else 0.0 for t in tabs] for j in range(i)]
        a.append([(j, column(r)) for j, r in enumerate(rows) if any(r)])
    b_rows = [[float(t.b[j]) if j < t.stages else 0.0 for t in tabs] for j in range(stages)]
    return a, [(j, column(r)) for j, r in enumerate(b_rows) if any(r)], stages


def _combine(pairs: list, ks: list) -> torch.Tensor:
    acc = pairs[0][1] * ks[pairs[0][0]]
    for j, w in pairs[1:]:
        acc = acc + w * ks[j]
    return acc


def multi_scheme_rollout(rate: Callable[[torch.Tensor], torch.Tensor], x0: torch.Tensor, schemes: Sequence[str],
                         dt: float, n_steps: int) -> torch.Tensor:
    """Row m of ``x0`` (M, 2) rolled out with ``schemes[m]`` for ``n_steps`` steps of ``dt`` (the step
    :func:`rollout` takes: ``(dt · N_t) / N_t``); returns the path (n_steps + 1, M, 2),
    without gradients.  ``rate`` maps the states of all rows (M, 2) to their rates."""
    check_n_steps(n_steps)
    a, b, stages = _coefficients(schemes, x0.dtype)
    h = (float(dt) * n_steps - 0.0) / n_steps
    x = x0
    path = [x0]
    with torch.no_grad():
        for _ in range(n_steps):
            ks: list = [None] * stages
            for i in range(stages):
                ks[i] = rate(x + h * _combine(a[i], ks) if a[i] else x)
            x = x + h * _combine(b, ks)
            path.append(x)
    return torch.stack(path)
