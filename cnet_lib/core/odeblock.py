"""The OdeBlock: a residual block as an ODE in depth, with weights that are functions of time.

.. math::

    \\frac{dx}{dt} = \\varepsilon\\, s(t)\\, R\\big(x, \\theta(t)\\big), \\quad t \\in [0, T], \\qquad
    \\theta(t) = \\sum_{\\beta=1}^{M} \\varphi_\\beta(t/T)\\, \\hat\\theta_\\beta

``R`` is any ``nn.Module``; the block treats it as the pure function R(x, θ) of the
paper and owns the M coefficient sets θ̂_β (shape ``(M, *p.shape)`` for every parameter
``p`` of R, independently initialised like the M layers of a ResNet).  s(t) exists only
with ``skip_init=True`` (a zero-initialised basis expansion, so the block starts as the
identity).  BatchNorm layers inside R are time dependent: one set of running statistics
per basis interval (their affine weights are part of θ).

The computational graph — the *manifestation* — is chosen at call time: ``scheme`` and
``n_steps`` (N_t, default M) can be changed with :meth:`OdeBlock.manifest` without
touching the parameters; or an embedded pair with ``rtol`` and ``atol`` chooses its own steps
(:mod:`cnet_lib.core.adaptive`), never crossing the break points of θ(t) and of the BatchNorm
statistics (:meth:`OdeBlock.breakpoints`), and reports what it did in ``last_solve``.  :meth:`OdeBlock.refine` doubles M and N_t keeping θ(t);
:meth:`OdeBlock.project` compresses θ to another basis by L2 projection.  Both replace the coefficient
Parameters: given the optimizer that trains them, they point it at the new ones with its state mapped; an
optimizer left holding the old ones warns (:class:`StaleOptimizerWarning`) at its next ``step()`` instead of
silently training nothing.

:meth:`OdeBlock.config` holds everything that decides the computation (basis, M, scheme, N_t, ε, T, skip-init,
the adaptive options): ``OdeBlock(residual, **block.config())`` and ``load_state_dict`` compute what ``block``
computes.  The state dict carries only the structure it must match (basis, M, skip-init), checked with a
message that says how to fix a mismatch.

Each stage of step k reads θ at its exact position (k + c)/N_t on its own step's
interval (see :class:`cnet_lib.core.integrate.StagePosition`); with the piecewise-constant
basis, Euler and N_t = M, the block *is* a ResNet: x_{k+1} = x_k + h ε R(x_k, θ̂_k).
"""
from __future__ import annotations

import contextlib
import copy
import os
import sys
import warnings
import weakref
from fractions import Fraction
from numbers import Integral
from typing import Iterator, Optional, Union

import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_pre_hook

from .adaptive import AdaptiveStats, Tolerances, check_pair, integrate_adaptive_positions
from .bases import Basis, CoefficientMap, interval_map, make_basis, piece_index, remap_optimizer_state
from .integrate import StagePosition, check_n_steps, integrate_positions, weighted_sum
from .schemes import Tableau, get_scheme
from .validation import check_float

__all__ = ["OdeBlock", "coefficient_key", "remap_optimizer_state", "StaleOptimizerWarning"]

_BN = nn.modules.batchnorm._BatchNorm
_SEP = "__"  # '.' is not allowed in ParameterDict keys


def _key(name: str) -> str:
    return name.replace(".", _SEP)


def coefficient_key(name: str) -> str:
    """The key of residual parameter ``name`` in ``OdeBlock.coeffs`` (in a state dict:
    ``<block>.coeffs.<key>``), e.g. ``conv1.weight`` -> ``conv1__weight``."""
    return _key(name)


def _owner(root: nn.Module, name: str) -> tuple[nn.Module, str]:
    *path, attr = name.split(".")
    mod = root
    for p in path:
        mod = getattr(mod, p)
    return mod, attr


class StaleOptimizerWarning(UserWarning):
    """An optimizer stepped while holding coefficient Parameters that :meth:`OdeBlock.refine` or
    :meth:`OdeBlock.project` replaced without being given it: those steps train nothing."""


# the coefficient Parameters replaced without their optimizer: id -> (weak reference, "refine" or "project")
_RETIRED: dict[int, tuple[weakref.ref, str]] = {}
_WARNED: "weakref.WeakSet[torch.optim.Optimizer]" = weakref.WeakSet()
_STEP_HOOK = []
_TORCH_DIR = os.path.dirname(torch.__file__)


def _retire(params, how: str) -> None:
    """Remember ``params`` (replaced by ``how`` without an optimizer) until they are freed; the first time,
    register the optimizer step hook that looks for them (:func:`_stale_check`)."""
    for p in params:
        _RETIRED[id(p)] = (weakref.ref(p, lambda _, key=id(p): _RETIRED.pop(key, None)), how)
    if not _STEP_HOOK:
        _STEP_HOOK.append(register_optimizer_step_pre_hook(_stale_check))


def _stale_check(optimizer: torch.optim.Optimizer, args, kwargs) -> None:
    """Before any optimizer's step: warn once per optimizer when it holds replaced coefficient Parameters."""
    if not _RETIRED or optimizer in _WARNED:
        return
    stale = {}
    for group in optimizer.param_groups:
        for p in group["params"]:
            entry = _RETIRED.get(id(p))
            if entry is not None and entry[0]() is p:
                stale[entry[1]] = stale.get(entry[1], 0) + 1
    if stale:
        _WARNED.add(optimizer)
        how, first = " and ".join(stale), next(iter(stale))
        total = sum(stale.values())
        stacklevel = 2  # the caller of optimizer.step(), past torch's own frames
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename.startswith(_TORCH_DIR):
            stacklevel, frame = stacklevel + 1, frame.f_back
        warnings.warn(
            f"this {type(optimizer).__name__} holds {total} coefficient tensors that OdeBlock.{how}() replaced "
            f"without being given the optimizer, so its steps no longer train them. Pass the optimizer, "
            f"model.{first}({'n_basis, ' if first == 'project' else ''}optimizer=optimizer), which carries its state "
            f"(momentum) over, or build a new optimizer over model.parameters() after {how}()",
            StaleOptimizerWarning, stacklevel=stacklevel)


def _fresh_copy(module: nn.Module) -> nn.Module:
    """A deep copy with every sub-module's parameters re-drawn by its ``reset_parameters``."""
    out = copy.deepcopy(module)
    for m in out.modules():
        if hasattr(m, "reset_parameters"):
            m.reset_parameters()
    return out


class OdeBlock(nn.Module):
    """dx/dt = ε s(t) R(x, θ(t)) over [0, T], integrated with ``scheme`` in ``n_steps`` steps.

    :param residual: the module R; it is taken over: its parameters (and BatchNorm statistics) move
        into the block as M coefficient sets, and R keeps only shape placeholders.
    :param n_basis: M, the number of basis functions.
    :param basis: ``"piecewise_constant"`` (default), ``"piecewise_linear"``, ``"legendre"`` or a Basis.
    :param scheme: an RK scheme name (see :func:`cnet_lib.scheme_names`) or a Tableau.
    :param n_steps: N_t; ``None`` means N_t = M.
    :param epsilon: ε, a fixed scale of the rate.
    :param T: the depth-time horizon.
    :param skip_init: multiply the rate by a learned, zero-initialised s(t) (same basis).
    :param rtol: with ``atol``, the embedded pair ``scheme`` chooses its own steps (:meth:`manifest`);
        ``None`` (the default): ``n_steps`` fixed steps.
    :param atol: the absolute tolerance of adaptive steps.
    :param max_steps: the attempts an adaptive solve may make.
    :param norm: how the error of a batch is measured (``"max"`` or ``"rms"``).

    Example::

        block = OdeBlock(nn.Sequential(nn.Linear(8, 8), nn.Tanh()), n_basis=4, scheme="rk4_classic")
        y = block(torch.randn(32, 8))
    """

    def __init__(
        self,
        residual: nn.Module,
        n_basis: int,
        basis: Union[str, Basis] = "piecewise_constant",
        scheme: Union[str, Tableau] = "euler",
        n_steps: Optional[int] = None,
        epsilon: float = 1.0,
        T: float = 1.0,
        skip_init: bool = False,
        *,
        rtol: Optional[float] = None,
        atol: Optional[float] = None,
        max_steps: int = 10_000,
        norm: str = "max",
    ):
        super().__init__()
        if not isinstance(residual, nn.Module):
            raise TypeError(f"residual must be an nn.Module (the rate R(x, θ)), got {type(residual).__name__}")
        self.basis = make_basis(basis, n_basis)
        self.scheme = get_scheme(scheme)
        self.n_steps = self.basis.n_basis if n_steps is None else check_n_steps(n_steps)
        self.epsilon = check_float("epsilon", epsilon, example=1.0)
        self.T = check_float("T", T, low=0, low_open=True, example=1.0)
        self.skip_init = bool(skip_init)
        self.tolerances: Optional[Tolerances] = None  # set by manifest(pair, rtol=, atol=): adaptive steps
        self.last_solve: Optional[AdaptiveStats] = None  # what the last adaptive forward did
        self._label = "OdeBlock"  # how errors name the block (a ContinuousNet says which of its blocks)
        m = self.basis.n_basis

        # θ̂: the residual's own values for β = 0, fresh draws for the others
        copies = [residual] + [_fresh_copy(residual) for _ in range(m - 1)]
        named = [dict(c.named_parameters()) for c in copies]
        self._param_names = tuple(named[0])
        self.coeffs = nn.ParameterDict(
            {_key(n): nn.Parameter(torch.stack([d[n].detach() for d in named])) for n in self._param_names}
        )
        # time-dependent BatchNorm: running statistics per interval
        bn_names = []
        for mod_name, mod in residual.named_modules():
            if isinstance(mod, _BN) and mod.track_running_stats:
                for attr in ("running_mean", "running_var"):
                    full = f"{mod_name}.{attr}" if mod_name else attr
                    buf = getattr(mod, attr)
                    self.register_buffer("bn" + _SEP + _key(full), buf.detach().unsqueeze(0).repeat(self.basis.n_intervals, 1))
                    bn_names.append(full)
        self._bn_names: tuple[str, ...] = tuple(bn_names)
        # strip R's own tensors: it is a pure function of (x, θ) from now on; each becomes
        # a plain attribute holding a shape-only placeholder
        self._slots: dict[str, tuple[nn.Module, str]] = {}
        self._placeholders: dict[str, torch.Tensor] = {}
        for n in self._param_names + self._bn_names:
            mod, attr = _owner(residual, n)
            self._placeholders[n] = torch.empty(getattr(mod, attr).shape, device="meta")
            if attr in mod._parameters:
                del mod._parameters[attr]
            else:
                del mod._buffers[attr]
            object.__setattr__(mod, attr, self._placeholders[n])
            self._slots[n] = (mod, attr)
        self.residual = residual
        if self.skip_init:  # on the residual's device, in its dtype
            like = next(iter(self.coeffs.values()), torch.empty(0))
            self.skip_gain = nn.Parameter(torch.zeros(m, dtype=like.dtype, device=like.device))
        if rtol is not None or atol is not None:
            self.manifest(rtol=rtol, atol=atol, max_steps=max_steps, norm=norm)

    # ------------------------------------------------------------------ basics
    @property
    def n_basis(self) -> int:
        """M, the number of basis functions (of coefficient sets θ̂_β)."""
        return self.basis.n_basis

    @property
    def manifestation(self) -> tuple[str, int]:
        """(scheme name, N_t) of the graph the next call will build."""
        return self.scheme.name, self.n_steps

    def extra_repr(self) -> str:
        """The block's basis, M, manifestation, ε, T and skip-init, shown by ``print(block)``."""
        return (
            f"basis={self.basis.name}, n_basis={self.n_basis}, scheme={self.scheme.name}, "
            f"n_steps={self.n_steps}, epsilon={self.epsilon}, T={self.T}, skip_init={self.skip_init}"
            + (f", adaptive: rtol={self.tolerances.rtol:g}, atol={self.tolerances.atol:g}" if self.tolerances else "")
        )

    def coefficient(self, name: str) -> nn.Parameter:
        """θ̂ for the residual parameter ``name``: shape ``(M, *shape)``."""
        try:
            return self.coeffs[_key(name)]
        except KeyError:
            raise KeyError(f"the residual has no parameter {name!r}; it has {list(self._param_names)}") from None

    def running_stats(self, name: str) -> torch.Tensor:
        """The time-dependent BatchNorm statistic ``name`` of the residual (e.g.
        ``"bn1.running_mean"``): one row per basis interval, shape ``(n_intervals, channels)``."""
        if name not in self._bn_names:
            raise KeyError(f"the residual has no BatchNorm statistic {name!r}; it has {list(self._bn_names)}")
        return getattr(self, "bn" + _SEP + _key(name))

    # ------------------------------------------------------------------ θ(t)
    def _pieces(self) -> dict[str, tuple[torch.Tensor, ...]]:
        """θ̂_β of every parameter as views (one unbind per forward: one gradient op each)."""
        return {n: self.coeffs[_key(n)].unbind(0) for n in self._param_names}

    def _tensors_at(self, tau: Fraction, side: int, pieces) -> dict[str, torch.Tensor]:
        w = self.basis.weights(tau, side)
        out = {n: weighted_sum(w, pieces[n]) for n in self._param_names}
        if self._bn_names:
            piece = piece_index(tau, self.basis.n_intervals, side)
            for n in self._bn_names:
                out[n] = self.running_stats(n)[piece]
        return out

    def _tau(self, t) -> Fraction:
        """Normalised position t/T, read as the rational with denominator <= 10**6 within 1e-12
        of it when there is one: floats like ``k * h`` then land on the break point they mean
        (float(1/3) is a hair left of 1/3), and ``side`` decides there.  ``t`` may be a 0-dim tensor."""
        if torch.is_tensor(t):
            t = t.item()
        tau = Fraction(t) / Fraction(self.T)
        near = tau.limit_denominator(10**6)
        return near if abs(near - tau) < Fraction(1, 10**12) else tau

    def theta(self, t, side: int = 1) -> dict[str, torch.Tensor]:
        """θ(t): the residual's parameters at depth-time ``t`` in [0, T] (a float, a 0-dim tensor or an exact
        Fraction), keyed like ``residual.named_parameters()`` would be; ``side`` picks the
        one-sided limit at a break point (+1: right, the default).
        ``functional_call(block.residual, block.theta(t), (x,))`` is R(x, θ(t)) (with
        time-dependent BatchNorm statistics, use :meth:`rate` instead).
        """
        w = self.basis.weights(self._tau(t), side)
        return {n: weighted_sum(w, self.coeffs[_key(n)]) for n in self._param_names}

    def gain(self, t, side: int = 1) -> torch.Tensor:
        """ε s(t): the scale in front of R at time t (a float, a 0-dim tensor or a Fraction; ε alone without
        skip_init)."""
        if not self.skip_init:
            like = next(iter(self.coeffs.values()), torch.empty(0))
            return torch.tensor(self.epsilon, dtype=like.dtype, device=like.device)
        return self.epsilon * weighted_sum(self.basis.weights(self._tau(t), side), self.skip_gain)

    def _call_residual(self, tensors: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        """R(x, θ): what ``functional_call(self.residual, tensors, (x,))`` does, minus its
        bookkeeping (R's parameters are plain attributes here, so setting them is enough)."""
        slots = self._slots
        try:
            for n, t in tensors.items():
                mod, attr = slots[n]
                mod.__dict__[attr] = t
            return self.residual(x)
        except RuntimeError as err:
            if type(err) is not RuntimeError:  # out of memory and the like pass as they are
                raise
            first = next(iter(self._placeholders.items()), None)
            built = f" (its first parameter, {first[0]}, has shape {tuple(first[1].shape)})" if first else ""
            raise RuntimeError(
                f"{self._label}: its residual R failed on a state of shape {tuple(x.shape)}: "
                f"{str(err).splitlines()[0]}. Give the block a state of the width its residual was built for"
                f"{built}") from err
        finally:
            for n in tensors:
                mod, attr = slots[n]
                mod.__dict__[attr] = self._placeholders[n]

    def rate(self, pos: StagePosition, x: torch.Tensor, pieces=None) -> torch.Tensor:
        """ε s(t) R(x, θ(t)) at the exact stage position ``pos``."""
        pieces = self._pieces() if pieces is None else pieces
        r = self._call_residual(self._tensors_at(pos.tau, pos.side, pieces), x)
        if r.shape != x.shape:
            raise ValueError(f"{self._label}: its residual R maps a state of shape {tuple(x.shape)} to one of shape "
                             f"{tuple(r.shape)}; an ODE's rate has the state's shape. Change the width or resolution "
                             "between blocks (as a ContinuousNet's stitches do), not inside R")
        if self.skip_init:
            return (self.epsilon * weighted_sum(self.basis.weights(pos.tau, pos.side), self.skip_gain)) * r
        return r if self.epsilon == 1.0 else self.epsilon * r

    def breakpoints(self) -> tuple[Fraction, ...]:
        """The positions in [0, 1] (times t/T) where the rate may jump: the basis's break points (k/M for
        piecewise constants, the hats' nodes) and the ends of the BatchNorm statistics' intervals."""
        n = self.basis.n_intervals
        return tuple(sorted(set(self.basis.breakpoints) | {Fraction(k, n) for k in range(n + 1)}))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x(T) from x(0) = ``x``, in the current manifestation (fixed steps, or adaptive ones that set
        :attr:`last_solve`)."""
        pieces = self._pieces()
        rate = lambda pos, z: self.rate(pos, z, pieces)
        if self.tolerances is None:
            return integrate_positions(rate, x, self.scheme, self.n_steps, (0.0, self.T))
        if x.is_cuda and torch.cuda.is_current_stream_capturing():
            raise RuntimeError("an adaptive manifestation cannot be captured in a CUDA graph (each step is decided "
                               "on the host): evaluate it eagerly (graphs=False)")
        tol = self.tolerances
        sol = integrate_adaptive_positions(rate, x, self.scheme, (0.0, self.T), rtol=tol.rtol, atol=tol.atol,
                                           breakpoints=self.breakpoints(), max_steps=tol.max_steps, norm=tol.norm)
        self.last_solve = sol.stats
        return sol.x

    # ------------------------------------------------------------------ manifestation
    def manifest(self, scheme: Union[str, Tableau, None] = None, n_steps: Optional[int] = None, *,
                 rtol: Optional[float] = None, atol: Optional[float] = None, max_steps: int = 10_000,
                 norm: str = "max") -> "OdeBlock":
        """Choose the computational graph; parameters are untouched.  Fixed steps: ``scheme`` and N_t
        = ``n_steps`` (either may be left as it is).  Adaptive steps: an embedded pair (``scheme`` or the
        current one: ``bosh3``, ``dopri5``) with ``rtol`` and ``atol`` (both), at most ``max_steps``
        attempts, ``norm`` over a batch (:mod:`cnet_lib.core.adaptive`).  A later fixed-step call
        (a scheme or N_t without tolerances) ends the adaptive manifestation."""
        if rtol is None and atol is None:
            if scheme is not None:
                self.scheme = get_scheme(scheme)
            if n_steps is not None:
                self.n_steps = check_n_steps(n_steps)
            if scheme is not None or n_steps is not None:
                self.tolerances = None
            return self
        if rtol is None or atol is None:
            raise ValueError(f"adaptive steps need both rtol and atol, got rtol={rtol!r}, atol={atol!r} "
                             "(e.g. rtol=1e-3, atol=1e-3)")
        if n_steps is not None:
            raise ValueError("n_steps fixes the steps, rtol/atol let an embedded pair choose them: give one or the other")
        pair = check_pair(self.scheme if scheme is None else scheme)
        self.tolerances = Tolerances(rtol, atol, max_steps, norm)
        self.scheme = pair
        return self

    @contextlib.contextmanager
    def manifested(self, scheme=None, n_steps=None, **adaptive) -> Iterator["OdeBlock"]:
        """Context manager: evaluate with another manifestation (the arguments of :meth:`manifest`),
        then restore the current one."""
        saved = (self.scheme, self.n_steps, self.tolerances)
        try:
            yield self.manifest(scheme, n_steps, **adaptive)
        finally:
            self.scheme, self.n_steps, self.tolerances = saved

    # ------------------------------------------------------------------ refinement, projection
    def _apply_map(self, cmap: CoefficientMap, optimizer, how: str) -> None:
        """Replace every coefficient Parameter p by a new one holding cmap(p).

        New Parameter objects (not ``p.data = ...``): a graph still alive from a previous
        step holds the old parameter's gradient accumulator, with the old shape, and would
        fold later gradients back to it.  Without ``optimizer`` the old ones are remembered, and an
        optimizer that steps holding them warns (:class:`StaleOptimizerWarning`).
        """
        replaced: dict[nn.Parameter, nn.Parameter] = {}
        with torch.no_grad():
            for key, p in list(self.coeffs.items()):
                self.coeffs[key] = replaced[p] = nn.Parameter(cmap.apply(p.detach()), p.requires_grad)
            if self.skip_init:
                old = self.skip_gain
                self.skip_gain = replaced[old] = nn.Parameter(cmap.apply(old.detach()), old.requires_grad)
        if optimizer is not None:
            remap_optimizer_state(optimizer, replaced, cmap)
        else:
            _retire(replaced, how)

    def refine(self, optimizer: Optional[torch.optim.Optimizer] = None) -> "OdeBlock":
        """M -> 2M (hats: 2M - 1) and N_t -> 2 N_t with θ(t) unchanged.

        The coefficient Parameters are replaced by new, larger ones: pass the ``optimizer``
        that trains the block and it is pointed at them with its momentum mapped (see
        :func:`remap_optimizer_state`); otherwise build a new optimizer afterwards (an old one
        that steps warns, :class:`StaleOptimizerWarning`).
        BatchNorm statistics are copied to both halves of each interval.
        """
        new_basis, cmap = self.basis.refine()
        self._apply_map(cmap, optimizer, "refine")
        self._map_bn(interval_map(self.basis.n_intervals, new_basis.n_intervals), moments=False)
        self.basis = new_basis
        self.n_steps *= 2
        return self

    def project(self, n_basis: int, basis: Union[str, Basis, None] = None, n_steps: Optional[int] = None,
                optimizer: Optional[torch.optim.Optimizer] = None) -> "OdeBlock":
        """Compress θ to ``n_basis`` functions (of ``basis``, default the same kind) by L2
        projection; N_t becomes ``n_steps`` (default: the new M).  BatchNorm statistics are
        pooled by projecting their first and second moments.  The coefficient Parameters are
        replaced: pass the ``optimizer`` to train on, as for :meth:`refine` (its state is projected
        too; second moments through the absolute weights, so they stay non-negative), or build a new
        one afterwards.  ``n_basis`` must be an integer from 1 to the block's M: projection
        compresses (to grow M, use :meth:`refine`).
        """
        if isinstance(n_basis, bool) or not isinstance(n_basis, Integral) or not 1 <= n_basis <= self.n_basis:
            raise ValueError(f"project compresses θ(t): n_basis must be an integer from 1 to this block's M = "
                             f"{self.n_basis}, got {n_basis!r} (to grow M, use refine())")
        new_basis = make_basis(self.basis.name if basis is None else basis, int(n_basis))
        cmap = self.basis.project(new_basis)
        self._apply_map(cmap, optimizer, "project")
        self._map_bn(interval_map(self.basis.n_intervals, new_basis.n_intervals), moments=True)
        self.basis = new_basis
        self.n_steps = new_basis.n_basis if n_steps is None else check_n_steps(n_steps)
        return self

    def _map_bn(self, cmap: CoefficientMap, moments: bool) -> None:
        for n in self._bn_names:
            if not n.endswith("running_mean"):
                continue
            var_name = n[: -len("running_mean")] + "running_var"
            mean, var = self.running_stats(n), self.running_stats(var_name)
            new_mean = cmap.apply(mean)
            new_var = cmap.apply(var + mean**2) - new_mean**2 if moments else cmap.apply(var)
            setattr(self, "bn" + _SEP + _key(n), new_mean)
            setattr(self, "bn" + _SEP + _key(var_name), new_var)

    # ------------------------------------------------------------------ state dicts
    def config(self) -> dict:
        """Everything that decides the block's computation, as plain values: ``OdeBlock(residual,
        **block.config())`` with the same residual and ``load_state_dict(block.state_dict())`` computes
        what ``block`` computes (basis, M, scheme, N_t, ε, T, skip-init and the adaptive options;
        ``rtol`` and ``atol`` are None for fixed steps)."""
        tol = self.tolerances
        return {"basis": self.basis.name, "n_basis": self.n_basis, "scheme": self.scheme.name, "n_steps": self.n_steps,
                "epsilon": self.epsilon, "T": self.T, "skip_init": self.skip_init,
                "rtol": tol.rtol if tol else None, "atol": tol.atol if tol else None,
                "max_steps": tol.max_steps if tol else 10_000, "norm": tol.norm if tol else "max"}

    def _structure(self) -> dict:
        """What a state dict must match to load into this block: the shapes of its tensors follow from it."""
        return {"basis": self.basis.name, "n_basis": self.n_basis, "skip_init": self.skip_init}

    def get_extra_state(self) -> dict:
        """The block's structure (basis, n_basis, skip_init), stored in its state dict so that loading into a
        block of another structure fails with a message that says how to fix it (the manifestation is not
        stored there: it is :meth:`config`'s)."""
        return self._structure()

    def set_extra_state(self, state: dict) -> None:
        """Check the structure stored by :meth:`get_extra_state` against this block's."""
        self._check_config(state)

    def _check_config(self, state) -> None:
        mine = self._structure()
        if state != mine:
            raise ValueError(
                f"this state dict was saved from an OdeBlock with {state}, but this block has {mine}. "
                "Build the model with the same basis, n_basis and skip_init (or refine()/project() it "
                "to that configuration) before loading."
            )

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        extra = state_dict.get(prefix + "_extra_state")
        if extra is not None:
            self._check_config(extra)  # before any shape mismatch, with a message that says how to fix it
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
