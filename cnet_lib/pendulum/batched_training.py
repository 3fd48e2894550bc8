"""Every ODE-Net of a study trained at once: one loop, each model with its own scheme, data, seed, Adam state
and learning-rate schedule, on the device measured faster.

:func:`train_batched` takes :class:`TrainingJob` s (what :func:`cnet_lib.pendulum.train_odenet` takes for one
model) and trains them together: their weights are stacked and each iteration computes every model's loss and
gradients in one pass (:func:`stacked_loss_and_grads`), then takes one Adam step per model.  Adam is
elementwise, so stacking changes nothing in it: :class:`StackedAdam` does torch's single-tensor Adam
(``torch.optim.Adam``'s defaults, the same operations in the same order) on the stacked tensors, each model with
its own learning rate, decayed geometrically from ``lr`` to ``lr_final`` over its own ``n_iters`` as
``ExponentialLR`` does.  A model whose iterations are done leaves the batch (the models are ordered by their
number of iterations, so the ones still training are a prefix of the stack).

Each result equals training that model alone up to round-off (the products are summed in another order):
tests/test_pendulum_batched.py states the tolerance.  On CUDA the iteration is recorded once per phase as a CUDA
graph (:class:`cnet_lib.runtime.cuda_graphs.StepRunner`) and replayed; on the CPU it runs with ``threads`` torch
threads (default 1: the models are tiny).

*One step of many ODE-Nets.*  M ODE-Nets ``G_m(x) = A_m tanh(W_m x + b_m)`` (one hidden width) are held as stacked
tensors, :class:`StackedParams`: ``Wt`` (M, 2, H) = W_mᵀ, ``b`` (M, 1, H), ``A`` (M, 2, H) = A_m.  Every (M, ·, H)
layout puts the hidden units last, where the batched products with two rows or columns are fastest: with
``A`` stored as (M, H, 2) the products ``tanh · Aᵀ`` and ``tanhᵀ · dk`` took twice and three times as long on
a CPU (MKL, float64, measured).  Each model has its own training pairs (its own Δt_data, so its own count N_m),
its own scheme and its own step h = Δt_data.

*Blocks.*  The pairs of every model are cut into blocks of ``r`` rows (the last one padded with masked rows),
so that the pairs of all models form one tensor (B, r, 2) whatever their counts, and each block reads its
model's weights (a gather of B small matrices).  The blocks of the models trained with one scheme form a
*group*; a group runs its scheme's stages with batched matrix products (``torch.baddbmm``/``torch.bmm``), so
no model computes a stage its scheme does not have and no pair is computed twice.

*Gradients by hand.*  The step ``y = x + h Σ_i b_i k_i``, ``k_i = G(x + h Σ_j a_ij k_j)``, is differentiated in
reverse stage order (``dk_j = h b_j dy + Σ_{i>j} h a_ij dx_i``; through G: ``dz = (dk A) ⊙ (1 − tanh²)``,
``dW += dzᵀ x_i``, ``db += Σ dz``, ``dA += dkᵀ tanh``, ``dx_i = dz W``): the same products autograd would
form, without its bookkeeping, and with no host synchronisation (so a CUDA graph can record the step).  The
loss of model m is ``Σ_k ‖F(x_k) − x_{k+1}‖² / N_m / Δt_m²``, that of :func:`cnet_lib.pendulum.train_odenet`;
tests/test_pendulum_batched.py checks the gradients against autograd and the training against training alone.

*Where and how long.*  :func:`estimate_seconds` times a few iterations of :func:`train_batched` on a device,
twice (two lengths, so that the fixed costs, the set-up and on CUDA the capture of the graph, are told apart
from the cost of an iteration), for each phase of the training (the models still training), and adds up the
phases.  :func:`choose_device` does it on the CPU and on the session's accelerator and keeps the faster: the
pendulum's ODE-Nets are tiny, and in float64 a GPU is not faster for every study on every card, so the choice is
measured, on the reader's machine, each time a study is trained (a fraction of a second).  :func:`choose_threads`
measures the CPU's side the same way, one thread against every core this process may use, where the settings
leave the thread count to the library (the stacked models' products are split between the threads, which may
change the last bits of a sum: the results agree to round-off, tests/test_pendulum_batched.py).
"""
from __future__ import annotations

import copy
import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Optional, Sequence

import torch

from ..core.integrate import weighted_sum
from ..core.schemes import Tableau, get_scheme
from ..core.validation import check_int
from ..runtime.cuda_graphs import StepRunner, graph_class
from ..runtime.device import available_cores, resolve_device, torch_threads
from ..runtime.progress import progress_bar
from .odenet import ODENet, ODENetFit, check_training, initial_odenet
from .physics import G, PendulumData, RHO0, make_data

__all__ = ["StackedParams", "ModelPairs", "StepGroup", "BlockLayout", "block_rows_for", "make_layout", "fast_tanh",
           "stacked_loss_and_grads", "TrainingJob", "StackedAdam", "train_batched", "PROBE_ITERS", "estimate_seconds",
           "choose_threads", "choose_device"]


# --------------------------------------------------------------------------- one step of many ODE-Nets
GROUP_ROWS = 1000
"""Rows of pairs per group at most (see :func:`make_layout`)."""


@dataclass
class StackedParams:
    """The weights of M ODE-Nets (module doc): ``Wt`` (M, 2, H), ``b`` (M, 1, H), ``A`` (M, 2, H)."""

    Wt: torch.Tensor
    b: torch.Tensor
    A: torch.Tensor

    def tensors(self) -> tuple:
        return self.Wt, self.b, self.A

    @classmethod
    def from_models(cls, models: Sequence[torch.nn.Module], device: torch.device) -> "StackedParams":
        """Stack :class:`cnet_lib.pendulum.ODENet` modules (float64) onto ``device``."""
        with torch.no_grad():
            Wt = torch.stack([m.inner.weight.t() for m in models]).to(device, torch.float64).contiguous()
            b = torch.stack([m.inner.bias for m in models]).unsqueeze(1).to(device, torch.float64).contiguous()
            A = torch.stack([m.outer.weight for m in models]).to(device, torch.float64).contiguous()
        return cls(Wt, b, A)

    def write_into(self, m: int, model: torch.nn.Module) -> None:
        """Copy model ``m``'s weights into an ODENet ``model`` (on the CPU, float64)."""
        with torch.no_grad():
            model.inner.weight.copy_(self.Wt[m].t().cpu())
            model.inner.bias.copy_(self.b[m, 0].cpu())
            model.outer.weight.copy_(self.A[m].cpu())


@dataclass(frozen=True)
class ModelPairs:
    """What one model of a batch trains on: its index in the stack, its scheme, ``dt`` (= Δt_data, the step)
    and its pairs ``x_in``, ``x_out`` (N, 2)."""

    index: int
    tab: Tableau
    dt: float
    x_in: torch.Tensor
    x_out: torch.Tensor


@dataclass
class StepGroup:
    """The blocks of the models trained with one scheme: ``idx`` (B,) the model of each block and ``member``
    (M, B) its one-hot matrix (block sums are gathered per model by a matrix product, the same order on every
    device, where ``index_add_`` adds in a varying order on CUDA), ``x_in``, ``x_out`` (B, r, 2), ``mask``
    (B, r, 1) 1 on real pairs and 0 on padding, ``h`` (B, 1, 1) the step and ``c`` (B, 1, 1) the loss's factor
    1 / N_m / Δt_m² of each block's model."""

    tab: Tableau
    idx: torch.Tensor
    member: torch.Tensor
    x_in: torch.Tensor
    x_out: torch.Tensor
    mask: torch.Tensor
    h: torch.Tensor
    c: torch.Tensor


@dataclass
class BlockLayout:
    """The groups of one batch, the number of models ``M`` of the stack, ``inv_n`` and ``inv_dt2`` (M,)
    (1/N_m and 1/Δt_m²; 0 for a model not in the batch) and the block rows ``r``."""

    groups: list
    M: int
    inv_n: torch.Tensor
    inv_dt2: torch.Tensor
    r: int


def block_rows_for(counts: Sequence[int], smallest: int = 32, padded: int = 100) -> int:
    """Rows per block for models with these pair counts: their greatest common divisor when it is at least
    ``smallest`` (no padding at all), else ``padded`` (each model's last block padded), never more than the
    largest count."""
    r = math.gcd(*counts)
    return r if r >= smallest else min(padded, max(counts))


def _blocks(p: ModelPairs, r: int, dtype, device) -> tuple:
    """``(x_in, x_out, mask)`` of one model cut into blocks of ``r`` rows, the last block padded by
    repeating the last pair (masked out, so it adds nothing)."""
    n = p.x_in.shape[0]
    nb = -(-n // r)
    pad = nb * r - n
    x_in = torch.cat([p.x_in, p.x_in[-1:].expand(pad, 2)]) if pad else p.x_in
    x_out = torch.cat([p.x_out, p.x_out[-1:].expand(pad, 2)]) if pad else p.x_out
    mask = torch.cat([torch.ones(n, 1, dtype=dtype), torch.zeros(pad, 1, dtype=dtype)])
    to = dict(device=device, dtype=dtype)
    return x_in.reshape(nb, r, 2).to(**to), x_out.reshape(nb, r, 2).to(**to), mask.reshape(nb, r, 1).to(**to)


def _group(tab: Tableau, blocks: Sequence[tuple], M: int, device: torch.device) -> StepGroup:
    """A :class:`StepGroup` of ``blocks``: ``(model index, dt, c, x_in, x_out, mask)`` each."""
    dtype = torch.float64
    idx = torch.tensor([bl[0] for bl in blocks], device=device)
    h = torch.tensor([bl[1] for bl in blocks], dtype=dtype, device=device).view(-1, 1, 1)
    c = torch.tensor([bl[2] for bl in blocks], dtype=dtype, device=device).view(-1, 1, 1)
    member = (torch.arange(M, device=device).unsqueeze(1) == idx.unsqueeze(0)).to(dtype)
    x_in, x_out, mask = (torch.stack([bl[k] for bl in blocks]).to(device) for k in (3, 4, 5))
    return StepGroup(tab, idx, member, x_in, x_out, mask, h, c)


def make_layout(pairs: Sequence[ModelPairs], M: int, device: torch.device, r: int,
                group_rows: int = GROUP_ROWS) -> BlockLayout:
    """The :class:`BlockLayout` of the models ``pairs`` (a subset of a stack of ``M``) in blocks of ``r`` rows,
    the blocks of one scheme in groups of at most ``group_rows`` rows (at least one block each)."""
    dtype = torch.float64
    by_scheme: dict = {}
    for p in pairs:
        x_in, x_out, mask = _blocks(p, r, dtype, torch.device("cpu"))
        c = 1.0 / p.dt**2 / p.x_in.shape[0]
        tab, blocks = by_scheme.setdefault(p.tab.name, (p.tab, []))
        blocks += [(p.index, p.dt, c, x_in[k], x_out[k], mask[k]) for k in range(x_in.shape[0])]
    per_group = max(1, group_rows // r)
    groups = [_group(tab, blocks[k:k + per_group], M, device)
              for tab, blocks in by_scheme.values() for k in range(0, len(blocks), per_group)]
    inv_n = torch.zeros(M, dtype=dtype)
    inv_dt2 = torch.zeros(M, dtype=dtype)
    for p in pairs:
        inv_n[p.index], inv_dt2[p.index] = 1.0 / p.x_in.shape[0], 1.0 / p.dt**2
    return BlockLayout(groups, M, inv_n.to(device), inv_dt2.to(device), r)


def fast_tanh(z2: torch.Tensor) -> torch.Tensor:
    """``tanh(z) = 2σ(2z) − 1`` from ``z2`` = 2z, in place.  On the CPU torch's float64 sigmoid is vectorised and
    its tanh is not: this is about 4 times faster (measured on 2 cores); it is within 4e-16 of ``torch.tanh``
    (tests/test_pendulum_batched.py)."""
    return torch.sigmoid_(z2).mul_(2.0).sub_(1.0)


def _forward(g: StepGroup, wt, bb, a) -> tuple:
    """The scheme's stages on every block: ``(stage inputs, tanh values, stage rates, y)``; the pre-activation is
    computed doubled, from doubled weights (exact: a power of two), for :func:`fast_tanh`."""
    tab, h, x = g.tab, g.h, g.x_in
    wt2, bb2, at = 2.0 * wt, 2.0 * bb, a.transpose(1, 2)
    xs, ts, ks = [None] * tab.stages, [None] * tab.stages, [None] * tab.stages
    for i in tab.used_stages:
        xi = x + h * weighted_sum(tab.float_a[i], ks) if tab.float_a[i] else x
        xs[i] = xi
        ts[i] = fast_tanh(torch.baddbmm(bb2, xi, wt2))
        ks[i] = torch.bmm(ts[i], at)
    return xs, ts, ks, x + h * weighted_sum(tab.float_b, ks)


def _backward(g: StepGroup, wt, a, xs, ts, hdy) -> tuple:
    """Reverse stage order from ``hdy`` = h·∂L/∂y: the block gradients ``(dWt, db, dA)``."""
    tab = g.tab
    b = dict(tab.float_b)
    later = {j: [(i, w) for i in tab.used_stages for jj, w in tab.float_a[i] if jj == j] for j in tab.used_stages}
    dws, dbs, das = [], [], []
    hdx = [None] * tab.stages  # h·∂L/∂x_i of the stages whose input reads earlier stages
    for j in reversed(tab.used_stages):
        terms = ([(0, b[j])] if j in b else []) + [(1 + i, w) for i, w in later[j]]
        dk = weighted_sum(terms, [hdy] + hdx)
        dz = torch.ops.aten.tanh_backward(torch.bmm(dk, a), ts[j])
        das.append(torch.bmm(dk.transpose(1, 2), ts[j]))
        dws.append(torch.bmm(xs[j].transpose(1, 2), dz))
        dbs.append(dz.sum(1, keepdim=True))
        if tab.float_a[j]:
            hdx[j] = g.h * torch.bmm(dz, wt.transpose(1, 2))
    return sum(dws[1:], dws[0]), sum(dbs[1:], dbs[0]), sum(das[1:], das[0])


def stacked_loss_and_grads(params: StackedParams, layout: BlockLayout) -> tuple:
    """``(loss (M,), (gWt, gb, gA))``: each model's one-step loss and its gradients (module doc); zero for
    the models of the stack that are not in ``layout``.  No host synchronisation."""
    Wt, b, A = params.tensors()
    raw = torch.zeros(layout.M, dtype=Wt.dtype, device=Wt.device)
    grads = [torch.zeros_like(t) for t in (Wt, b, A)]
    for g in layout.groups:
        wt, bb, a = Wt.index_select(0, g.idx), b.index_select(0, g.idx), A.index_select(0, g.idx)
        xs, ts, _, y = _forward(g, wt, bb, a)
        diff = (y - g.x_out) * g.mask
        raw.addmv_(g.member, (diff * diff).sum((1, 2)))
        hdy = g.h * (g.c * (2 * diff))
        for full, block in zip(grads, _backward(g, wt, a, xs, ts, hdy)):
            full.view(layout.M, -1).addmm_(g.member, block.reshape(block.shape[0], -1))
    return raw * layout.inv_n * layout.inv_dt2, tuple(grads)


# --------------------------------------------------------------------------- the training loop
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
    :func:`choose_device`).  ``graphs``: record each phase's iteration as a CUDA graph on
    CUDA.  ``block_rows``: rows per block of pairs (default :func:`block_rows_for`).  Each
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


# --------------------------------------------------------------------------- where and how long, measured
PROBE_ITERS = (8, 24)
"""The two lengths of the probe runs (iterations)."""


def _job_phases(jobs: Sequence[TrainingJob]) -> list:
    """``(jobs still training, iterations)`` of each phase, longest-training models first."""
    order = sorted(jobs, key=lambda j: -j.n_iters)
    out, done = [], 0
    for k in range(len(order), 0, -1):
        stop = order[k - 1].n_iters
        if stop > done:
            out.append((order[:k], stop - done))
            done = stop
    return out


def _probe(jobs: Sequence[TrainingJob], n: int, device, threads: int, graphs: bool) -> float:
    """Seconds of ``n`` iterations of ``jobs`` trained together, the set-up included."""
    short = [dataclasses.replace(j, n_iters=n) for j in jobs]
    t0 = time.perf_counter()
    train_batched(short, device=device, progress=False, threads=threads, graphs=graphs)
    return time.perf_counter() - t0


def estimate_seconds(jobs: Sequence[TrainingJob], device, threads: int = 1, graphs: bool = True) -> float:
    """The estimated wall time of ``train_batched(jobs)`` on ``device`` (module doc)."""
    total = 0.0
    a, b = PROBE_ITERS
    for members, iters in _job_phases(jobs):
        _probe(members, 1, device, threads, graphs)  # warm-up: first kernels, allocations
        ta, tb = _probe(members, a, device, threads, graphs), _probe(members, b, device, threads, graphs)
        per_iter = max(tb - ta, 1e-9) / (b - a)
        total += max(ta - a * per_iter, 0.0) + iters * per_iter
    return total


def choose_threads(jobs: Sequence[TrainingJob], threads: Optional[int] = None) -> tuple:
    """``(threads, {threads: estimated seconds on the CPU})``: ``threads`` where it is given (the settings'
    ``threads``), else one thread or every available core, whichever :func:`estimate_seconds` measures faster
    (``{}`` when nothing was measured)."""
    if threads is not None:
        return threads, {}
    candidates = sorted({1, available_cores()})
    if len(candidates) == 1:
        return 1, {}
    estimates = {n: estimate_seconds(jobs, torch.device("cpu"), n, graphs=False) for n in candidates}
    return min(estimates, key=estimates.get), estimates


def choose_device(jobs: Sequence[TrainingJob], device: Optional[torch.device], threads: int = 1,
                  graphs: bool = True, cpu_seconds: Optional[float] = None) -> tuple:
    """``(device, {device name: estimated seconds})``: the CPU, or ``device`` (the session's) where that is an
    accelerator and its estimate is smaller.  ``cpu_seconds``: the CPU's estimate at ``threads`` where it was
    measured already (:func:`choose_threads`), so the CPU is not probed twice."""
    cpu = cpu_seconds if cpu_seconds is not None else estimate_seconds(jobs, torch.device("cpu"), threads, graphs)
    estimates = {"cpu": cpu}
    device = None if device is None else resolve_device(device)
    if device is not None and device.type != "cpu":
        estimates[str(device)] = estimate_seconds(jobs, device, threads, graphs)
    best = min(estimates, key=estimates.get)
    return torch.device(best), estimates
