"""Every ODE-Net of a study trained at once: one loop, each model with its own scheme, data, seed, Adam state
and learning-rate schedule.

:func:`train_batched` takes :class:`TrainingJob` s (what :func:`cnet_lib.pendulum.train_odenet` takes for one
model) and trains them together: their weights are stacked and each iteration computes every model's loss and
gradients in one pass (:mod:`cnet_lib.pendulum.stacked_step`), then takes one Adam step per model.  Adam is
elementwise, so stacking changes nothing in it: :class:`StackedAdam` does torch's single-tensor Adam
(``torch.optim.Adam``'s defaults, the same operations in the same order) on the stacked tensors, each model with
its own learning rate, decayed geometrically from ``lr`` to ``lr_final`` over its own ``n_iters`` as
``ExponentialLR`` does.  A model whose iterations are done leaves the batch (the models are ordered by their
number of iterations, so the ones still training are a prefix of the stack).

Each result equals training that model alone up to round-off (the products are summed in another order):
tests/test_pendulum_batched.py states the tolerance.  On CUDA the iteration is recorded once per phase as a CUDA
graph (:class:`cnet_lib.runtime.cuda_graphs.StepRunner`) and replayed; on the CPU it runs with ``threads`` torch
threads (default 1: the models are tiny).
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Optional, Sequence

import torch

from ..core.schemes import get_scheme
from ..core.validation import check_int
from ..runtime.cuda_graphs import StepRunner, graph_class
from ..runtime.device import resolve_device
from ..runtime.progress import progress_bar
from ..runtime.threads import torch_threads
from .odenet import ODENet, ODENetFit, check_training, initial_odenet
from .physics import RHO0, G, PendulumData, make_data
from .stacked_step import ModelPairs, StackedParams, block_rows_for, make_layout, stacked_loss_and_grads

__all__ = ["TrainingJob", "StackedAdam", "train_batched"]

BETAS = (0.9, 0.999)
EPS = 1e-8
"""``torch.optim.Adam``'s defaults, which :func:`cnet_lib.pendulum.train_odenet` uses."""


@dataclass(frozen=True)
class TrainingJob:
    """One ODE-Net to train: the arguments of :func:`cnet_lib.pendulum.train_odenet` for it, and its data
    (``dt_data``, ``T_data``, ``rho0``, ``g``: :func:`cnet_lib.pendulum.make_data`)."""

    scheme: str
    dt_data: float
    n_iters: int
    lr: float = 1e-2
    lr_final: Optional[float] = 1e-4
    seed: int = 0
    hidden: int = 50
    T_data: float = 10.0
    rho0: float = RHO0
    g: float = G

    def __post_init__(self) -> None:
        object.__setattr__(self, "scheme", get_scheme(self.scheme).name)
        check_training(self.n_iters, self.lr, self.lr_final, self.hidden, 1, self.seed)

    def data(self) -> PendulumData:
        return make_data(self.dt_data, self.T_data, self.rho0, self.g)

    def gamma(self) -> float:
        """The factor the learning rate is multiplied by after each iteration (as in ``train_odenet``)."""
        return 1.0 if (self.lr_final is None or self.n_iters == 0) else (self.lr_final / self.lr) ** (1.0 / self.n_iters)


class StackedAdam:
    """torch's single-tensor Adam on stacked weights (module doc), one learning rate per model.

    The step count is shared (the models start together); its bias corrections are computed in Python as
    torch computes them and read from a table by a step counter on the device, so an iteration never
    synchronises with the host.  :meth:`update` updates the first ``k`` models of the stack.
    """

    def __init__(self, params: StackedParams, lrs: Sequence[float], gammas: Sequence[float], n_steps: int):
        device = params.Wt.device
        self.params = params.tensors()
        self.exp_avg = [torch.zeros_like(p) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in self.params]
        self.lr = torch.tensor(list(lrs), dtype=torch.float64, device=device)
        self.gamma = torch.tensor(list(gammas), dtype=torch.float64, device=device)
        b1, b2 = BETAS
        self.bc1 = torch.tensor([1 - b1 ** float(s) for s in range(1, n_steps + 1)], dtype=torch.float64, device=device)
        self.bc2_sqrt = torch.tensor([(1 - b2 ** float(s)) ** 0.5 for s in range(1, n_steps + 1)], dtype=torch.float64,
                                     device=device)
        self.step = torch.zeros(1, dtype=torch.long, device=device)  # steps taken so far

    def update(self, grads: Sequence[torch.Tensor], k: int) -> None:
        """One Adam step of the first ``k`` models, then their learning rates decay and the count advances."""
        b1, b2 = BETAS
        bc1, bc2_sqrt = self.bc1.index_select(0, self.step), self.bc2_sqrt.index_select(0, self.step)
        neg_step_size = -(self.lr[:k] / bc1)
        for p, g, m, v in zip(self.params, grads, self.exp_avg, self.exp_avg_sq):
            p, g, m, v = p[:k], g[:k], m[:k], v[:k]
            m.lerp_(g, 1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = (v.sqrt() / bc2_sqrt).add_(EPS)
            p.add_(neg_step_size.view(k, 1, 1) * m / denom)
        self.lr[:k].mul_(self.gamma[:k])
        self.step.add_(1)

    def state_dict_for(self, m: int, model: ODENet, n_steps: int) -> dict:
        """Model ``m``'s Adam state as ``torch.optim.Adam(model.parameters()).state_dict()`` would hold it
        (so ``train_odenet(..., resume=fit)`` continues it)."""
        opt = torch.optim.Adam(model.parameters(), lr=float(self.lr[m]))
        layouts = (lambda t: t.t(), lambda t: t[0], lambda t: t)  # Wt -> W, b (1, H) -> (H,), A as it is
        for p, f, m_avg, v_avg in zip(model.parameters(), layouts, self.exp_avg, self.exp_avg_sq):
            opt.state[p] = {"step": torch.tensor(float(n_steps)), "exp_avg": f(m_avg[m]).detach().cpu().clone(),
                            "exp_avg_sq": f(v_avg[m]).detach().cpu().clone()}
        return copy.deepcopy(opt.state_dict())


def _phases(n_iters: Sequence[int]) -> list:
    """``(k, start, stop)``: iterations ``start..stop-1`` train the first ``k`` models (``n_iters`` descending)."""
    out, start = [], 0
    for k in range(len(n_iters), 0, -1):
        stop = n_iters[k - 1]
        if stop > start:
            out.append((k, start, stop))
            start = stop
    return out


def _check_jobs(jobs: Sequence[TrainingJob]) -> None:
    if not jobs:
        raise ValueError("train_batched needs at least one TrainingJob")
    widths = sorted({j.hidden for j in jobs})
    if len(widths) > 1:
        raise ValueError(f"the models of one batch must have one hidden width; these have {widths}: "
                         "train each width in its own call")


def train_batched(jobs: Sequence[TrainingJob], device=None, progress: bool = True, threads: int = 1,
                  graphs: bool = True, block_rows: Optional[int] = None, desc: str = "ODE-Nets") -> list:
    """Train every job's ODE-Net in one loop (module doc); returns their :class:`ODENetFit` s, in the order of
    ``jobs``, on the CPU.

    ``device``: where to train (``None``: the CPU, where these tiny models are usually fastest; see
    :func:`cnet_lib.pendulum.training_device`).  ``graphs``: record each phase's iteration as a CUDA graph on
    CUDA.  ``block_rows``: rows per block of pairs (default :func:`~cnet_lib.pendulum.block_rows_for`).  Each
    fit's ``seconds`` is the wall time of the whole batch and ``trained_with`` the number of models in it.
    """
    _check_jobs(jobs)
    check_int("threads", threads, low=1, example=1)
    device = torch.device("cpu") if device is None else resolve_device(device)
    order = sorted(range(len(jobs)), key=lambda i: -jobs[i].n_iters)  # still training = a prefix of the stack
    ordered = [jobs[i] for i in order]
    pairs = [ModelPairs(pos, get_scheme(j.scheme), j.dt_data, *j.data().pairs()) for pos, j in enumerate(ordered)]
    r = block_rows or block_rows_for([p.x_in.shape[0] for p in pairs])
    params = StackedParams.from_models([initial_odenet(j.seed, j.hidden) for j in ordered], device)
    total = ordered[0].n_iters
    adam = StackedAdam(params, [j.lr for j in ordered], [j.gamma() for j in ordered], max(total, 1))
    losses = torch.full((max(total, 1), len(jobs)), float("nan"), dtype=torch.float64, device=device)
    t0 = time.perf_counter()
    with torch_threads(threads):
        _run(params, adam, pairs, losses, [j.n_iters for j in ordered], device, graphs, r, progress, desc)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - t0
    fits = _fits(ordered, params, adam, losses.cpu(), seconds, str(device))
    out = [None] * len(jobs)
    for pos, i in enumerate(order):
        out[i] = fits[pos]
    return out


def _run(params, adam, pairs, losses, n_iters, device, graphs, r, progress, desc) -> None:
    """The iterations, phase by phase (:func:`_phases`); a progress bar every 200 iterations."""
    total = n_iters[0]
    bar = progress_bar(total=total, desc=f"{desc} ×{len(pairs)}") if progress and total > 0 else None
    runner = StepRunner(lambda *_: (), graph_class(device, graphs), warmup=2)
    anchor = torch.zeros(1, device=device)  # the graph's (unused) input: it puts the warm-up on a side stream
    for phase, (k, start, stop) in enumerate(_phases(n_iters)):
        layout = make_layout(pairs[:k], len(pairs), device, r)

        def body(*_, layout=layout, k=k):
            loss, grads = stacked_loss_and_grads(params, layout)
            losses.index_copy_(0, adam.step, loss.unsqueeze(0))
            adam.update(grads, k)
            return ()

        runner.body = body
        for it in range(start, stop):
            runner(phase, anchor)
            if bar is not None and (it % 200 == 199 or it == stop - 1):
                bar.n = it + 1
                bar.set_postfix(models=k, loss=f"{float(losses[it, :k].max()):.2e}", refresh=False)
                bar.refresh()
    runner.reset()
    if bar is not None:
        bar.close()


def _fits(ordered: Sequence[TrainingJob], params: StackedParams, adam: StackedAdam, losses: torch.Tensor,
          seconds: float, device: str) -> list:
    out = []
    for m, job in enumerate(ordered):
        with torch.random.fork_rng(devices=[]):  # building a module draws weights: leave the global state alone
            model = ODENet(job.hidden).double()
        params.write_into(m, model)
        out.append(ODENetFit(model=model.eval(), scheme=job.scheme, dt_data=job.dt_data, lr=job.lr, seed=job.seed,
                             backend="stacked", losses=losses[:job.n_iters, m].tolist(), seconds=seconds,
                             optimizer_state=adam.state_dict_for(m, model, job.n_iters), trained_with=len(ordered),
                             device=device))
    return out
