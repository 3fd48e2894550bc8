"""Fixed-step explicit Runge–Kutta integration.

``integrate(f, x0, scheme, n_steps)`` solves ``x' = f(t, x)`` on ``t_span = (t0, t1)``
with ``N_t = n_steps`` equal steps of size ``h = (t1 - t0) / N_t``:

* step ``k`` starts at ``t_k = t0 + (t1 - t0) * k / N_t`` (computed from the integer
  ``k``, never accumulated, so there is no drift);
* stage ``i`` of step ``k`` sits at the exact rational position ``(k + c_i) / N_t`` of
  the span, exposed to callers as a :class:`StagePosition` (the OdeBlock uses it to pick
  the weight piece exactly);
* tableau entries equal to zero are skipped, and so is a stage no weight uses (the last stage of an
  embedded pair taken as a fixed-step scheme); every coefficient is a Python float, so the loop
  never synchronises host and device.

Adaptive steps chosen by an embedded pair's error estimate are in :mod:`cnet_lib.core.adaptive`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Iterator, Sequence, Union

import torch

from .schemes import Tableau, get_scheme

__all__ = ["StagePosition", "integrate", "integrate_positions", "stage_positions", "step_times", "check_n_steps",
           "weighted_sum"]


@dataclass(frozen=True)
class StagePosition:
    """Where one stage evaluation sits: step ``k`` of ``n_steps``, at fraction ``c`` of it.

    ``tau = (k + c) / n_steps`` is the exact position in the normalised span [0, 1];
    ``t`` is the float time ``t0 + (t1 - t0) * tau``.  ``stage`` is the stage index ``i``.
    """

    k: int
    stage: int
    c: Fraction
    n_steps: int
    t: float

    @property
    def tau(self) -> Fraction:
        return (self.k + self.c) / self.n_steps

    @property
    def side(self) -> int:
        """Which one-sided limit the stage reads at a break point: -1 (left) for c = 1, else +1.

        A stage always reads the weights of its own step's interval [t_k, t_{k+1}]: the
        last stage of a step (c = 1) takes the left limit, every other stage (c = 0
        included) the right limit.
        """
        return -1 if self.c == 1 else 1


def check_n_steps(n_steps) -> int:
    if isinstance(n_steps, bool) or not isinstance(n_steps, int):
        raise TypeError(f"n_steps must be a positive int (the number of steps N_t), got {n_steps!r}")
    if n_steps < 1:
        raise ValueError(f"n_steps must be >= 1 (the number of steps N_t), got {n_steps}")
    return n_steps


def _check_span(t_span) -> tuple[float, float]:
    try:
        t0, t1 = (float(v) for v in t_span)
    except (TypeError, ValueError):
        raise ValueError(f"t_span must be a pair of numbers (t0, t1), got {t_span!r}") from None
    if not (math.isfinite(t0) and math.isfinite(t1)) or t1 == t0:
        raise ValueError(f"t_span must be two different finite times (t0, t1), got {t_span!r} (e.g. t_span=(0.0, 1.0))")
    return t0, t1


def step_times(n_steps: int, t_span: Sequence[float] = (0.0, 1.0)) -> list[float]:
    """The N_t + 1 grid times ``t0 + (t1 - t0) * k / N_t``, k = 0..N_t."""
    check_n_steps(n_steps)
    t0, t1 = _check_span(t_span)
    return [t0 + (t1 - t0) * k / n_steps for k in range(n_steps + 1)]


def stage_positions(
    scheme: Union[str, Tableau], n_steps: int, t_span: Sequence[float] = (0.0, 1.0)
) -> Iterator[StagePosition]:
    """Every stage evaluation of a run, in the order :func:`integrate` makes them (a stage no weight
    uses, :attr:`Tableau.used_stages`, is not evaluated)."""
    tab = get_scheme(scheme)
    check_n_steps(n_steps)
    t0, t1 = _check_span(t_span)
    used = tab.used_stages
    for k in range(n_steps):
        for i in used:
            c = tab.c[i]
            yield StagePosition(k, i, c, n_steps, t0 + (t1 - t0) * float((k + c) / n_steps))


def integrate_positions(
    f: Callable[[StagePosition, torch.Tensor], torch.Tensor],
    x0: torch.Tensor,
    scheme: Union[str, Tableau],
    n_steps: int,
    t_span: Sequence[float] = (0.0, 1.0),
    return_path: bool = False,
) -> torch.Tensor:
    """Like :func:`integrate`, but ``f`` receives the exact :class:`StagePosition` of each stage."""
    tab = get_scheme(scheme)
    check_n_steps(n_steps)
    t0, t1 = _check_span(t_span)
    h = (t1 - t0) / n_steps
    a, b = tab.float_a, tab.float_b
    positions = stage_positions(tab, n_steps, (t0, t1))
    x = x0
    path = [x0] if return_path else None
    used = tab.used_stages
    for _ in range(n_steps):
        ks: list = [None] * tab.stages
        for i in used:
            xi = x
            if a[i]:
                inc = weighted_sum(a[i], ks)
                xi = x + h * inc
            ks[i] = f(next(positions), xi)
        x = x + h * weighted_sum(b, ks)
        if path is not None:
            path.append(x)
    return torch.stack(path) if path is not None else x


def weighted_sum(coeffs: Sequence[tuple[int, float]], items: Sequence[torch.Tensor]) -> torch.Tensor:
    """Σ_j w_j items[j] over the ``(j, w_j)`` pairs (the non-zero coefficients only); a lone weight
    1 is no multiplication, so reading one item through it is exact.  Used for the stages of a
    Runge–Kutta step and for θ(t) = Σ_β φ_β θ̂_β (:mod:`cnet_lib.core.odeblock`)."""
    (j, w), *rest = coeffs
    acc = items[j] if w == 1.0 else w * items[j]
    for j, w in rest:
        acc = acc + w * items[j]
    return acc


def integrate(
    f: Callable[[float, torch.Tensor], torch.Tensor],
    x0: torch.Tensor,
    scheme: Union[str, Tableau],
    n_steps: int,
    t_span: Sequence[float] = (0.0, 1.0),
    return_path: bool = False,
) -> torch.Tensor:
    """Integrate ``x' = f(t, x)`` from ``x0`` over ``t_span`` with ``n_steps`` RK steps.

    Returns ``x(t1)``, or with ``return_path=True`` the tensor of shape
    ``(n_steps + 1, *x0.shape)`` holding the state at every grid time (see :func:`step_times`).
    ``t`` is passed to ``f`` as a Python float.
    """
    return integrate_positions(lambda pos, x: f(pos.t, x), x0, scheme, n_steps, t_span, return_path)
