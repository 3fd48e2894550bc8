"""Basis functions for weight functions θ(t) = Σ_β φ_β(t) θ̂_β on the normalised span [0, 1].

A basis evaluates on *exact* positions: ``weights(tau, side)`` takes ``tau`` as a
:class:`fractions.Fraction` in [0, 1] and returns the non-zero ``(β, φ_β(tau))`` pairs.
For piecewise bases the piece is found in rational arithmetic (never ``int(t * M)`` on
floats); at a break point ``side = +1`` takes the right limit and ``side = -1`` the left
limit (the OdeBlock passes the side of the stage's own step, see
:class:`cnet_lib.core.integrate.StagePosition`).

* :class:`PiecewiseConstant` ``(M)``: indicator functions of the M equal intervals.  With
  Euler and ``N_t = M`` each step reads one piece: a ResNet.
* :class:`PiecewiseLinear` ``(M)``: M continuous hat functions on the nodes j/(M-1).
* :class:`Legendre` ``(M)``: Legendre polynomials P_0..P_{M-1} of (2 tau - 1).

``refine()`` returns ``(finer basis, CoefficientMap)`` with θ(t) unchanged:
piecewise constant M -> 2M (each piece copied, bit for bit), hats M -> 2M - 1 (the
nested refinement: new midpoint nodes take the average), Legendre M -> 2M (zero padding).
``project_matrix(other)`` is the L2 projection onto any other basis (for compression),
computed with Gauss–Legendre quadrature on the union of break points.

Also here: the maps that carry state along when an OdeBlock's basis changes (:func:`interval_map`,
:func:`remap_optimizer_state`).
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Sequence

import numpy as np
import torch
from torch import nn

__all__ = ["Basis", "PiecewiseConstant", "PiecewiseLinear", "Legendre", "CoefficientMap", "make_basis", "basis_names",
           "piece_index", "interval_map", "remap_optimizer_state", "SQUARED_STATE"]


Weights = tuple[tuple[int, float], ...]


def _check_m(n_basis) -> int:
    if isinstance(n_basis, bool) or not isinstance(n_basis, int):
        raise TypeError(f"n_basis must be a positive int (the number of basis functions M), got {n_basis!r}")
    if n_basis < 1:
        raise ValueError(f"n_basis must be >= 1 (the number of basis functions M), got {n_basis}")
    return n_basis


def _check_tau(tau) -> Fraction:
    tau = Fraction(tau)  # floats convert exactly
    if not 0 <= tau <= 1:
        raise ValueError(f"position tau must lie in [0, 1], got {tau} ({float(tau)})")
    return tau


@dataclass(frozen=True)
class CoefficientMap:
    """A linear map θ̂_new = R θ̂_old on the leading (basis) axis, stored row by row.

    ``rows[i]`` lists the ``(old index, weight)`` pairs of new coefficient ``i``.  A row
    that is a single ``(j, 1)`` is a copy, applied without arithmetic, so copies are exact
    bit for bit (signed zeros and NaNs included).
    """

    n_old: int
    rows: tuple[tuple[tuple[int, float], ...], ...]

    @property
    def n_new(self) -> int:
        """The number of new coefficients (rows of the map)."""
        return len(self.rows)

    @classmethod
    def from_matrix(cls, matrix: np.ndarray, tol: float = 0.0) -> "CoefficientMap":
        """The map of a dense ``(n_new, n_old)`` matrix, keeping the entries whose magnitude exceeds ``tol``."""
        matrix = np.asarray(matrix, dtype=np.float64)
        rows = tuple(
            tuple((int(j), float(matrix[i, j])) for j in range(matrix.shape[1]) if abs(matrix[i, j]) > tol)
            for i in range(matrix.shape[0])
        )
        return cls(matrix.shape[1], rows)

    def matrix(self) -> np.ndarray:
        """The map as a dense ``(n_new, n_old)`` array."""
        out = np.zeros((self.n_new, self.n_old))
        for i, row in enumerate(self.rows):
            for j, w in row:
                out[i, j] += w
        return out

    def apply(self, coeffs: torch.Tensor) -> torch.Tensor:
        """Map a tensor whose leading axis holds the ``n_old`` coefficients."""
        if coeffs.shape[0] != self.n_old:
            raise ValueError(f"coefficient tensor has {coeffs.shape[0]} basis entries, the map expects {self.n_old}")
        out = []
        for row in self.rows:
            if len(row) == 1 and row[0][1] == 1.0:
                out.append(coeffs[row[0][0]].clone())
            elif not row:
                out.append(torch.zeros_like(coeffs[0]))
            else:
                acc = row[0][1] * coeffs[row[0][0]]
                for j, w in row[1:]:
                    acc = acc + w * coeffs[j]
                out.append(acc)
        return torch.stack(out)


class Basis(ABC):
    """M scalar functions φ_β on [0, 1]; a weight function is θ(tau) = Σ_β φ_β(tau) θ̂_β."""

    name: str = "basis"

    def __init__(self, n_basis: int):
        self.n_basis = _check_m(n_basis)

    # ---- evaluation
    @abstractmethod
    def _weights(self, tau: Fraction, side: int) -> Weights: ...

    def weights(self, tau, side: int = 1) -> Weights:
        """Non-zero ``(β, φ_β(tau))`` pairs; ``side`` picks the one-sided limit at break points."""
        if side not in (-1, 1):
            raise ValueError(f"side must be +1 (right limit) or -1 (left limit), got {side!r}")
        return _cached_weights(self, _check_tau(tau), side)

    def matrix(self, taus: Sequence[float], side: int = 1) -> np.ndarray:
        """Dense ``(len(taus), M)`` array of φ_β(tau) (for plots and quadrature)."""
        out = np.zeros((len(taus), self.n_basis))
        for r, tau in enumerate(taus):
            for beta, w in self.weights(tau, side):
                out[r, beta] = w
        return out

    @property
    @abstractmethod
    def breakpoints(self) -> tuple[Fraction, ...]:
        """The points 0 = p_0 < ... < p_n = 1 between which every φ_β is a polynomial."""

    @property
    @abstractmethod
    def degree(self) -> int:
        """Polynomial degree of each φ_β between break points."""

    def steps_align(self, n_steps: int) -> bool:
        """Whether ``n_steps`` equal steps of [0, 1] put a step boundary on every break point, in exact arithmetic:
        then θ(t) is one polynomial inside every step, and a Runge–Kutta step keeps its order (its stages read one
        piece: the last stage takes the left limit, :class:`cnet_lib.core.integrate.StagePosition`).  A step that
        holds a break point inside it integrates a right-hand side with a jump (or a kink) and loses its order."""
        if isinstance(n_steps, bool) or not isinstance(n_steps, int) or n_steps < 1:
            raise ValueError(f"n_steps must be an int >= 1 (the number of steps N_t), got {n_steps!r}")
        return all((p * n_steps).denominator == 1 for p in self.breakpoints)

    @property
    def n_intervals(self) -> int:
        """Equal intervals of [0, 1] that time-dependent BatchNorm statistics live on
        (M by default; hats use the M - 1 intervals between their nodes)."""
        return self.n_basis

    # ---- refinement and projection
    @abstractmethod
    def refine(self) -> tuple["Basis", CoefficientMap]:
        """The finer basis and the exact coefficient map that keeps θ(t) unchanged."""

    def with_n_basis(self, n_basis: int) -> "Basis":
        """A basis of the same kind with ``n_basis`` functions."""
        return type(self)(n_basis)

    def project_matrix(self, other: "Basis") -> np.ndarray:
        """The ``(other.M, self.M)`` matrix P of the L2 projection onto ``other``.

        P = G⁻¹ B with Gram matrix G_ij = ∫ φ'_i φ'_j and B_ij = ∫ φ'_i φ_j over [0, 1],
        integrated exactly by Gauss–Legendre quadrature on every interval between the
        union of both bases' break points.
        """
        pts = sorted(set(self.breakpoints) | set(other.breakpoints))
        n_q = (self.degree + other.degree) // 2 + 2
        xg, wg = np.polynomial.legendre.leggauss(n_q)
        taus, wts = [], []
        for lo, hi in zip(pts[:-1], pts[1:]):
            lo, hi = float(lo), float(hi)
            taus.extend(lo + (hi - lo) * (xg + 1) / 2)
            wts.extend(wg * (hi - lo) / 2)
        wts = np.asarray(wts)
        # quadrature nodes are interior, so one-sided limits do not matter
        phi_new = other.matrix(taus)
        phi_old = self.matrix(taus)
        gram = phi_new.T @ (wts[:, None] * phi_new)
        cross = phi_new.T @ (wts[:, None] * phi_old)
        return np.linalg.solve(gram, cross)

    def project(self, other: "Basis") -> CoefficientMap:
        """The L2 projection onto ``other`` (:meth:`project_matrix`) as a :class:`CoefficientMap`."""
        return CoefficientMap.from_matrix(self.project_matrix(other))

    # ---- identity
    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.n_basis == other.n_basis

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.n_basis))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.n_basis})"


@lru_cache(maxsize=65536)
def _cached_weights(basis: Basis, tau: Fraction, side: int) -> Weights:
    return basis._weights(tau, side)


def piece_index(tau: Fraction, n: int, side: int) -> int:
    """Index of the interval [j/n, (j+1)/n] of [0, 1] holding ``tau``, computed exactly; at a break
    point ``side = +1`` takes the interval on the right, ``-1`` the one on the left."""
    s = tau * n
    j = math.floor(s) if side > 0 else math.ceil(s) - 1
    return min(max(j, 0), n - 1)


class PiecewiseConstant(Basis):
    """φ_β = indicator of [β/M, (β+1)/M): the paper's piecewise-constant basis (ResNet weights)."""

    name = "piecewise_constant"

    def _weights(self, tau, side):
        return ((piece_index(tau, self.n_basis, side), 1.0),)

    @property
    def breakpoints(self):
        return tuple(Fraction(j, self.n_basis) for j in range(self.n_basis + 1))

    @property
    def degree(self):
        return 0

    def refine(self):
        rows = tuple(((j // 2, 1.0),) for j in range(2 * self.n_basis))
        return PiecewiseConstant(2 * self.n_basis), CoefficientMap(self.n_basis, rows)


class PiecewiseLinear(Basis):
    """M continuous hat functions on the nodes j/(M-1) (M = 1: the constant function)."""

    name = "piecewise_linear"

    def _weights(self, tau, side):
        m = self.n_basis
        if m == 1:
            return ((0, 1.0),)
        s = tau * (m - 1)
        j = min(math.floor(s), m - 2)
        w = s - j
        out = []
        if w != 1:
            out.append((j, float(1 - w)))
        if w != 0:
            out.append((j + 1, float(w)))
        return tuple(out)

    @property
    def breakpoints(self):
        m = self.n_basis
        return (Fraction(0), Fraction(1)) if m == 1 else tuple(Fraction(j, m - 1) for j in range(m))

    @property
    def degree(self):
        return 1

    @property
    def n_intervals(self):
        return max(self.n_basis - 1, 1)

    def refine(self):
        m = self.n_basis
        if m == 1:
            return PiecewiseLinear(2), CoefficientMap(1, (((0, 1.0),), ((0, 1.0),)))
        rows = []
        for i in range(2 * m - 1):
            rows.append(((i // 2, 1.0),) if i % 2 == 0 else ((i // 2, 0.5), (i // 2 + 1, 0.5)))
        return PiecewiseLinear(2 * m - 1), CoefficientMap(m, tuple(rows))


class Legendre(Basis):
    """φ_β(tau) = P_β(2 tau - 1), β = 0..M-1: polynomials of degree < M on the whole span."""

    name = "legendre"

    def _weights(self, tau, side):
        x = 2 * tau - 1
        p = [Fraction(1), x]
        for n in range(1, self.n_basis - 1):
            p.append(((2 * n + 1) * x * p[n] - n * p[n - 1]) / (n + 1))
        return tuple((beta, float(p[beta])) for beta in range(self.n_basis))

    @property
    def breakpoints(self):
        return (Fraction(0), Fraction(1))

    @property
    def degree(self):
        return self.n_basis - 1

    def refine(self):
        m = self.n_basis
        rows = tuple(((i, 1.0),) if i < m else () for i in range(2 * m))
        return Legendre(2 * m), CoefficientMap(m, rows)


_BASES = {cls.name: cls for cls in (PiecewiseConstant, PiecewiseLinear, Legendre)}


def basis_names() -> tuple[str, ...]:
    """The names :func:`make_basis` knows: ``piecewise_constant``, ``piecewise_linear``, ``legendre``."""
    return tuple(_BASES)


def make_basis(basis, n_basis: int) -> Basis:
    """A basis from its name (``piecewise_constant``, ``piecewise_linear``, ``legendre``) and M."""
    if isinstance(basis, Basis):
        if basis.n_basis != n_basis:
            raise ValueError(f"basis {basis!r} has M = {basis.n_basis}, but n_basis = {n_basis} was given")
        return basis
    try:
        cls = _BASES[basis]
    except (KeyError, TypeError):
        raise ValueError(f"unknown basis {basis!r}; valid names are: {', '.join(_BASES)}") from None
    return cls(n_basis)


# Maps that carry state along when an OdeBlock's basis changes: the BatchNorm statistics' intervals
# (:func:`interval_map`) and an optimizer's per-parameter state (:func:`remap_optimizer_state`).
# Used by :meth:`cnet_lib.core.odeblock.OdeBlock.refine` and :meth:`~cnet_lib.core.odeblock.OdeBlock.project`.

SQUARED_STATE = frozenset({"exp_avg_sq", "max_exp_avg_sq", "square_avg", "sum"})
"""Optimizer state entries that average squared gradients (Adam, AdamW, RMSprop, Adagrad): non-negative."""


def interval_map(n_old: int, n_new: int) -> CoefficientMap:
    """Map piecewise-constant statistics from n_old to n_new equal intervals."""
    if n_new == n_old:
        return CoefficientMap(n_old, tuple(((i, 1.0),) for i in range(n_old)))
    if n_new == 2 * n_old:
        return PiecewiseConstant(n_old).refine()[1]
    return PiecewiseConstant(n_old).project(PiecewiseConstant(n_new))


def remap_optimizer_state(
    optimizer: torch.optim.Optimizer, replaced: dict[nn.Parameter, nn.Parameter], cmap: CoefficientMap
) -> None:
    """Point ``optimizer`` at the new Parameters and carry their state through ``cmap``.

    ``replaced`` maps each old coefficient Parameter to its successor.  The optimizer's
    parameter groups are updated in place, and every per-parameter state tensor of the old
    parameter's shape (SGD's momentum buffer, Adam's moments) is mapped along its leading
    (basis) axis, so momentum survives refinement; scalars such as Adam's step are kept.
    The running averages of squared gradients (:data:`SQUARED_STATE`: Adam's ``exp_avg_sq``,
    RMSprop's ``square_avg``, Adagrad's ``sum``) are mapped with the absolute weights, so that a
    projection with negative weights leaves them non-negative (refinement's weights are non-negative
    already: there both maps agree).
    """
    absolute = CoefficientMap(cmap.n_old, tuple(tuple((j, abs(w)) for j, w in row) for row in cmap.rows))
    for group in optimizer.param_groups:
        group["params"] = [replaced.get(p, p) for p in group["params"]]
    for old, new in replaced.items():
        state = optimizer.state.pop(old, None)
        if state:
            optimizer.state[new] = {
                k: (absolute if k in SQUARED_STATE else cmap).apply(v)
                if torch.is_tensor(v) and v.dim() > 0 and v.shape == old.shape else v
                for k, v in state.items()
            }
