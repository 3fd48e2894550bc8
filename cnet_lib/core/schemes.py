"""Explicit Runge–Kutta schemes as exact, checked Butcher tableaux.

A scheme with ``s`` stages advances ``x' = f(t, x)`` by one step of size ``h``:

.. math::

    k_i = f\\Big(t_n + c_i h,\\; x_n + h \\sum_{j<i} a_{ij} k_j\\Big), \\qquad
    x_{n+1} = x_n + h \\sum_i b_i k_i .

Every entry is a :class:`fractions.Fraction`, so the consistency conditions
(``sum_j a_ij = c_i``, ``sum_i b_i = 1``) and the order conditions (one per rooted
tree, Butcher 1963) are checked *exactly* when a :class:`Tableau` is built.

Naming: ``rk4_classic`` is Kutta's classic fourth-order method (c = 0, 1/2, 1/2, 1);
``rk4_38`` is Kutta's 3/8 rule (c = 0, 1/3, 2/3, 1).  torchdiffeq's fixed-grid
method called ``"rk4"`` is the 3/8 rule, so the bare name ``"rk4"`` is refused here.

Embedded pairs (:class:`EmbeddedPair`: a second weight row ``b_hat`` whose difference from ``b``
estimates the local error, for adaptive steps, :mod:`cnet_lib.core.adaptive`): ``bosh3`` is
Bogacki–Shampine 3(2) and ``dopri5`` Dormand–Prince 5(4), both FSAL and both propagating the
higher-order row (local extrapolation), with the names and the propagated rows of torchdiffeq's
adaptive solvers.  Used with ``n_steps`` like any scheme they are fixed-step methods of order 3
and 5 (the error row unused); ``rk45`` and ``rk23`` (scipy's names) are refused as ambiguous.
The order conditions are checked in :mod:`cnet_lib.core.schemes`.

Also here: Butcher's order conditions in exact rational arithmetic, rooted trees and elementary weights
(:func:`rooted_trees`, :func:`check_row_order`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, lru_cache
from typing import Iterator, Sequence, Union

__all__ = ["Tableau", "get_scheme", "register_scheme", "unregister_scheme", "scheme_names", "rooted_trees",
           "EmbeddedPair", "is_embedded_pair", "tree_order", "density", "stage_weights", "elementary_weight",
           "row_satisfies", "check_row_order"]


# Butcher's order conditions, in exact rational arithmetic: rooted trees and elementary weights.
#
# A Runge–Kutta method with matrix ``A`` and a weight row ``w`` has order ``p`` when, for every rooted
# tree ``τ`` with at most ``p`` vertices (Butcher 1963; Hairer, Nørsett and Wanner I, §II.2),
#
# .. math::
#
#     \sum_i w_i\, \Phi_i(\tau) = \frac{1}{\gamma(\tau)},
#
# with the stage weights ``Φ_i`` (``Φ_i(•) = 1``; ``Φ_i(τ) = Π_{children u} (A Φ(u))_i``) and the density
# ``γ(τ) = |τ| · Π_{children u} γ(u)``.  Every quantity here is a :class:`fractions.Fraction`, so a
# condition holds or fails exactly.  :class:`cnet_lib.core.schemes.Tableau` checks its weight row ``b``
# and an embedded pair also its second row ``b_hat`` (:func:`check_row_order`).

# A rooted tree is the sorted tuple of its children's trees; the single vertex is ().
def _grow(tree: tuple) -> Iterator[tuple]:
    """Every tree obtained by attaching one new leaf to some vertex of ``tree``."""
    yield tuple(sorted(tree + ((),)))
    for i, child in enumerate(tree):
        for grown in _grow(child):
            yield tuple(sorted(tree[:i] + (grown,) + tree[i + 1 :]))


@lru_cache(maxsize=None)
def rooted_trees(order: int) -> tuple[tuple, ...]:
    """All rooted trees with ``order`` vertices (1, 1, 2, 4, 9, 20, ... of them)."""
    if order < 1:
        raise ValueError(f"order must be >= 1, got {order}")
    if order == 1:
        return ((),)
    found = {g for t in rooted_trees(order - 1) for g in _grow(t)}
    return tuple(sorted(found))


def tree_order(tree: tuple) -> int:
    """|τ|: the number of vertices."""
    return 1 + sum(tree_order(c) for c in tree)


def density(tree: tuple) -> int:
    """γ(τ): |τ| times the densities of the subtrees."""
    return tree_order(tree) * math.prod(density(c) for c in tree)


def stage_weights(tree: tuple, a: Sequence[Sequence[Fraction]]) -> list[Fraction]:
    """Φ_i(τ) = Π over children u of (A Φ(u))_i, with Φ(single vertex) = 1."""
    s = len(a)
    phi = [Fraction(1)] * s
    for child in tree:
        inner = stage_weights(child, a)
        for i in range(s):
            phi[i] *= sum(a[i][j] * inner[j] for j in range(s))
    return phi


def elementary_weight(tree: tuple, a: Sequence[Sequence[Fraction]], weights: Sequence[Fraction]) -> Fraction:
    """Σ_i w_i Φ_i(τ); the order condition for ``tree`` is that this equals 1/γ(τ)."""
    return sum(w * p for w, p in zip(weights, stage_weights(tree, a)))


def row_satisfies(a: Sequence[Sequence[Fraction]], weights: Sequence[Fraction], p: int) -> bool:
    """True when the weight row satisfies every order condition for trees with at most ``p`` vertices."""
    return all(elementary_weight(t, a, weights) == Fraction(1, density(t))
               for q in range(1, p + 1) for t in rooted_trees(q))


def check_row_order(name: str, row: str, a: Sequence[Sequence[Fraction]], weights: Sequence[Fraction],
                    order: int) -> None:
    """Raise ``ValueError`` unless the weight row ``row`` (e.g. ``"b"``) of tableau ``name`` has exactly
    the declared ``order``: every condition up to ``order`` holds and at least one of order ``order + 1``
    fails (so the declared order is the true one)."""
    if sum(weights) != 1:
        raise ValueError(f"tableau {name!r}: the weights {row} sum to {sum(weights)}, not 1 (inconsistent scheme)")
    for p in range(1, order + 1):
        for tree in rooted_trees(p):
            lhs = elementary_weight(tree, a, weights)
            if lhs != Fraction(1, density(tree)):
                reached = max((q for q in range(order) if row_satisfies(a, weights, q)), default=0)
                shown = "(" + ", ".join(str(w) for w in weights) + ")"
                raise ValueError(
                    f"tableau {name!r} claims order {order} for {row} but fails the order-{p} condition "
                    f"for tree {tree}: {row}.Phi = {lhs}, needs 1/{density(tree)}. The weights {row} = {shown} reach "
                    f"order {reached}: declare that order for them; to combine a tableau's stages with other weights "
                    "(an embedded pair's b_hat), compute the combination from the stages yourself"
                )
    if row_satisfies(a, weights, order + 1):
        raise ValueError(
            f"tableau {name!r} claims order {order} for {row} but satisfies every order-{order + 1} "
            "condition too; declare its true order"
        )


# ---------------------------------------------------------------------- the module's own part (its docstring above)

Number = Union[int, Fraction, str]


def _frac(v: Number) -> Fraction:
    if isinstance(v, float):
        raise TypeError(
            f"tableau entries must be exact (int, Fraction or a string like '1/3'), got the float {v!r}; "
            "write it as Fraction or a string so the order conditions can be checked exactly"
        )
    return Fraction(v)


# --------------------------------------------------------------------------- tableau
@dataclass(frozen=True)
class Tableau:
    """An explicit Runge–Kutta Butcher tableau with exact rational entries.

    :param name: registry name (e.g. ``"rk4_classic"``).
    :param order: the order ``p`` the scheme claims; every order condition for trees with at
        most ``p`` vertices is checked exactly, and at least one of order ``p + 1`` must
        fail (so the declared order is the true order).
    :param a: the ``s x s`` strictly lower-triangular matrix (rows may be given short: row
        ``i`` needs only its first ``i`` entries).
    :param b: the ``s`` weights.
    :param c: the ``s`` nodes.

    Example::

        heun = Tableau("my_heun", 2, a=((), (1,)), b=("1/2", "1/2"), c=(0, 1))
        register_scheme(heun)
    """

    name: str
    order: int
    a: tuple[tuple[Fraction, ...], ...]
    b: tuple[Fraction, ...]
    c: tuple[Fraction, ...]

    def __post_init__(self) -> None:
        s = len(self.b)
        if s < 1:
            raise ValueError(f"tableau {self.name!r} needs at least one stage")
        if len(self.c) != s or len(self.a) != s:
            raise ValueError(
                f"tableau {self.name!r}: a has {len(self.a)} rows, b {s} entries, c {len(self.c)}; they must agree"
            )
        rows = []
        for i, row in enumerate(self.a):
            row = tuple(_frac(v) for v in row)
            if len(row) > s:
                raise ValueError(f"tableau {self.name!r}: row {i} of a has {len(row)} entries, more than {s} stages")
            row = row + (Fraction(0),) * (s - len(row))
            if any(row[j] != 0 for j in range(i, s)):
                raise ValueError(
                    f"tableau {self.name!r}: a must be strictly lower triangular (explicit scheme); row {i} is {row}"
                )
            rows.append(row)
        object.__setattr__(self, "a", tuple(rows))
        object.__setattr__(self, "b", tuple(_frac(v) for v in self.b))
        object.__setattr__(self, "c", tuple(_frac(v) for v in self.c))
        if not isinstance(self.order, int) or self.order < 1:
            raise ValueError(f"tableau {self.name!r}: order must be a positive integer, got {self.order!r}")
        for i in range(s):
            if sum(self.a[i]) != self.c[i]:
                raise ValueError(
                    f"tableau {self.name!r}: row {i} of a sums to {sum(self.a[i])} but c[{i}] = {self.c[i]}"
                )
        check_row_order(self.name, "b", self.a, self.b, self.order)

    # ---- derived data
    @property
    def stages(self) -> int:
        """s, the number of stages."""
        return len(self.b)

    def elementary_weight(self, tree: tuple) -> Fraction:
        """b . Phi(tree); the order condition for ``tree`` is that this equals 1/gamma(tree)."""
        return elementary_weight(tree, self.a, self.b)

    def satisfies_order(self, p: int) -> bool:
        """True when every order condition of the row b for trees with at most ``p`` vertices holds."""
        return row_satisfies(self.a, self.b, p)

    @cached_property
    def float_a(self) -> tuple[tuple[tuple[int, float], ...], ...]:
        """Row i: the (j, a_ij) pairs with a_ij != 0, as floats (zero entries skipped)."""
        return tuple(tuple((j, float(v)) for j, v in enumerate(row) if v != 0) for row in self.a)

    @cached_property
    def float_b(self) -> tuple[tuple[int, float], ...]:
        """The (i, b_i) pairs with b_i != 0, as floats."""
        return tuple((i, float(v)) for i, v in enumerate(self.b) if v != 0)

    def _weight_rows(self) -> tuple[tuple[Fraction, ...], ...]:
        return (self.b,)

    @cached_property
    def used_stages(self) -> tuple[int, ...]:
        """The stages a fixed step must evaluate: stage i is skipped only when neither the weights b nor a
        later stage use it (b_i = 0 and a_ji = 0 for every j > i), e.g. the last stage of an embedded pair
        taken as a fixed-step scheme, which only its error estimate and FSAL use."""
        s = self.stages
        return tuple(i for i in range(s) if self.b[i] != 0 or any(self.a[j][i] != 0 for j in range(i + 1, s)))

    def _header(self) -> str:
        s = self.stages
        return f"{self.name} (order {self.order}, {s} stage{'s' if s > 1 else ''})"

    def __str__(self) -> str:
        """The Butcher tableau as text: c | a, a rule, then each weight row (b, and b̂ for a pair)."""
        s = self.stages
        rows = self._weight_rows()
        w = max(len(str(v)) for v in (*self.c, *(x for r in rows for x in r), *(x for r in self.a for x in r)))
        lines = []
        for i in range(s):
            cells = " ".join(f"{str(self.a[i][j]) if j < i else '':>{w}}" for j in range(s))
            lines.append(f"{str(self.c[i]):>{w}} | {cells}")
        lines.append("-" * (w + 3 + s * (w + 1)))
        lines.extend(" " * w + " | " + " ".join(f"{str(v):>{w}}" for v in row) for row in rows)
        return self._header() + "\n" + "\n".join(lines)


# --------------------------------------------------------------------------- embedded pairs
@dataclass(frozen=True)
class EmbeddedPair(Tableau):
    """An explicit Runge–Kutta tableau with a second, embedded weight row ``b_hat`` for error control.

    One step computes the stages ``k_i`` once and two solutions from them,

    .. math::

        y_1 = y_0 + h \\sum_i b_i k_i \\quad (\\text{order } p),

        \\hat y_1 = y_0 + h \\sum_i \\hat b_i k_i \\quad (\\text{order } \\hat p),

        e = y_1 - \\hat y_1 = h \\sum_i (b_i - \\hat b_i) k_i ,

    and ``e`` estimates the local error of the lower-order solution (Hairer, Nørsett and Wanner I,
    §II.4).  The pair **propagates** ``y_1``, the row ``b`` (for the registered pairs the higher order:
    *local extrapolation*), so used as a fixed-step scheme it is the method of order ``p``.
    Both rows are checked exactly when built (each must satisfy its declared order and fail the next).
    ``fsal`` (first same as last) declares that the last stage is evaluated at the new solution: the
    last row of ``a`` equals ``b`` and ``c_s = 1``, so ``k_s`` of one step is ``k_1`` of the next; the
    claim is verified both ways (a pair that has the property must declare it).
    """

    b_hat: tuple = ()
    order_hat: int = 0
    fsal: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(self.b_hat) != self.stages:
            raise ValueError(f"tableau {self.name!r}: b_hat has {len(self.b_hat)} entries, the pair has "
                             f"{self.stages} stages; they must agree")
        object.__setattr__(self, "b_hat", tuple(_frac(v) for v in self.b_hat))
        if not isinstance(self.order_hat, int) or not 1 <= self.order_hat != self.order:
            raise ValueError(f"tableau {self.name!r}: order_hat must be a positive integer other than the order "
                             f"{self.order} (an error estimate needs two orders), got {self.order_hat!r}")
        check_row_order(self.name, "b_hat", self.a, self.b_hat, self.order_hat)
        has_fsal = self.a[-1] == self.b and self.c[-1] == 1
        if bool(self.fsal) != has_fsal:
            raise ValueError(
                f"tableau {self.name!r}: declared fsal={self.fsal}, but the last row of a "
                f"{'equals' if self.a[-1] == self.b else 'differs from'} b and c_s = {self.c[-1]}; FSAL holds "
                "exactly when the last row of a is b and c_s = 1: declare fsal accordingly")

    @property
    def error_order(self) -> int:
        """q = min(p, p̂): the order of the estimated local error is q + 1 (the controller's exponent is 1/(q + 1))."""
        return min(self.order, self.order_hat)

    @cached_property
    def float_error(self) -> tuple[tuple[int, float], ...]:
        """The (i, b_i − b̂_i) pairs with a non-zero difference, as floats (the difference taken exactly)."""
        return tuple((i, float(b - bh)) for i, (b, bh) in enumerate(zip(self.b, self.b_hat)) if b != bh)

    def _weight_rows(self) -> tuple[tuple[Fraction, ...], ...]:
        return (self.b, self.b_hat)

    def _header(self) -> str:
        return (f"{self.name} (embedded pair {self.order}({self.order_hat}), {self.stages} stages"
                f"{', FSAL' if self.fsal else ''}; weight rows: b, order {self.order}, propagated; "
                f"b_hat, order {self.order_hat})")


def is_embedded_pair(scheme: Union[str, Tableau]) -> bool:
    """Whether ``scheme`` (a name or a Tableau) is an :class:`EmbeddedPair`, i.e. can choose its own steps."""
    return isinstance(get_scheme(scheme), EmbeddedPair)


# --------------------------------------------------------------------------- registry
_REGISTRY: dict[str, Tableau] = {}

_AMBIGUOUS = {
    "rk45": (
        "the scheme name 'rk45' is ambiguous: scipy's 'RK45' is the Dormand–Prince 5(4) pair, while RKF45 is "
        "Fehlberg's 4(5) pair. For Dormand–Prince say 'dopri5' (torchdiffeq's name, as here)."
    ),
    "rk23": (
        "the scheme name 'rk23' is ambiguous: scipy's 'RK23' is the Bogacki–Shampine 3(2) pair. Say 'bosh3' "
        "(torchdiffeq's name, as here)."
    ),
    "rk4": (
        "the scheme name 'rk4' is ambiguous: torchdiffeq's fixed-grid 'rk4' is Kutta's 3/8 rule, "
        "while most textbooks mean the classic RK4. Say which one you mean: 'rk4_classic' "
        "(c = 0, 1/2, 1/2, 1) or 'rk4_38' (the 3/8 rule, c = 0, 1/3, 2/3, 1)."
    ),
}


def register_scheme(tableau: Tableau, *, overwrite: bool = False) -> Tableau:
    """Add a user tableau to the registry so that ``get_scheme(tableau.name)`` finds it."""
    if not isinstance(tableau, Tableau):
        raise TypeError(f"register_scheme expects a Tableau, got {type(tableau).__name__}")
    if tableau.name in _AMBIGUOUS:
        raise ValueError(f"the name {tableau.name!r} is reserved: {_AMBIGUOUS[tableau.name]}")
    if tableau.name in _REGISTRY and not overwrite:
        raise ValueError(f"a scheme named {tableau.name!r} is already registered; pass overwrite=True to replace it")
    _REGISTRY[tableau.name] = tableau
    return tableau


def unregister_scheme(name: str) -> Tableau:
    """Remove a registered scheme and return its tableau (e.g. one a test or an exercise added)."""
    try:
        return _REGISTRY.pop(name)
    except KeyError:
        raise KeyError(f"no scheme named {name!r} is registered; registered: {', '.join(_REGISTRY)}") from None


def scheme_names() -> tuple[str, ...]:
    """The registered scheme names, in registration order."""
    return tuple(_REGISTRY)


def get_scheme(scheme: Union[str, Tableau]) -> Tableau:
    """Return the :class:`Tableau` for ``scheme`` (a name or a Tableau, passed through)."""
    if isinstance(scheme, Tableau):
        return scheme
    if not isinstance(scheme, str):
        raise TypeError(f"scheme must be a name or a Tableau, got {type(scheme).__name__}")
    key = scheme.strip().lower()
    if key in _AMBIGUOUS:
        raise ValueError(_AMBIGUOUS[key])
    try:
        return _REGISTRY[key]
    except KeyError:
        raise ValueError(
            f"unknown scheme {scheme!r}; valid names are: {', '.join(_REGISTRY)} "
            "(or register your own with cnet_lib.register_scheme)"
        ) from None


def _make(name: str, order: int, a: Sequence[Sequence[Number]], b: Sequence[Number], c: Sequence[Number]) -> None:
    register_scheme(Tableau(name, order, tuple(tuple(r) for r in a), tuple(b), tuple(c)))


def _make_pair(name: str, orders: tuple[int, int], a: Sequence[Sequence[Number]], b: Sequence[Number],
               b_hat: Sequence[Number], c: Sequence[Number], fsal: bool) -> None:
    register_scheme(EmbeddedPair(name, orders[0], tuple(tuple(r) for r in a), tuple(b), tuple(c), tuple(b_hat),
                                 orders[1], fsal))


_F = Fraction
_make("euler", 1, [[]], [1], [0])
_make("midpoint", 2, [[], [_F(1, 2)]], [0, 1], [0, _F(1, 2)])
_make("heun", 2, [[], [1]], [_F(1, 2), _F(1, 2)], [0, 1])
_make("ralston", 2, [[], [_F(2, 3)]], [_F(1, 4), _F(3, 4)], [0, _F(2, 3)])
_make("rk3", 3, [[], [_F(1, 2)], [-1, 2]], [_F(1, 6), _F(2, 3), _F(1, 6)], [0, _F(1, 2), 1])
_make(
    "rk4_classic",
    4,
    [[], [_F(1, 2)], [0, _F(1, 2)], [0, 0, 1]],
    [_F(1, 6), _F(1, 3), _F(1, 3), _F(1, 6)],
    [0, _F(1, 2), _F(1, 2), 1],
)
_make(
    "rk4_38",
    4,
    [[], [_F(1, 3)], [_F(-1, 3), 1], [1, -1, 1]],
    [_F(1, 8), _F(3, 8), _F(3, 8), _F(1, 8)],
    [0, _F(1, 3), _F(2, 3), 1],
)
# Bogacki and Shampine (1989), "A 3(2) pair of Runge–Kutta formulas": order 3 propagated, FSAL
_make_pair(
    "bosh3",
    (3, 2),
    [[], [_F(1, 2)], [0, _F(3, 4)], [_F(2, 9), _F(1, 3), _F(4, 9)]],
    [_F(2, 9), _F(1, 3), _F(4, 9), 0],
    [_F(7, 24), _F(1, 4), _F(1, 3), _F(1, 8)],
    [0, _F(1, 2), _F(3, 4), 1],
    fsal=True,
)
# Dormand and Prince (1980), "A family of embedded Runge–Kutta formulae": RK5(4)7M, order 5 propagated,
# FSAL; b_hat as in Hairer, Nørsett and Wanner I, Table II.5.2 (and their code DOPRI5)
_make_pair(
    "dopri5",
    (5, 4),
    [[], [_F(1, 5)], [_F(3, 40), _F(9, 40)], [_F(44, 45), _F(-56, 15), _F(32, 9)],
     [_F(19372, 6561), _F(-25360, 2187), _F(64448, 6561), _F(-212, 729)],
     [_F(9017, 3168), _F(-355, 33), _F(46732, 5247), _F(49, 176), _F(-5103, 18656)],
     [_F(35, 384), 0, _F(500, 1113), _F(125, 192), _F(-2187, 6784), _F(11, 84)]],
    [_F(35, 384), 0, _F(500, 1113), _F(125, 192), _F(-2187, 6784), _F(11, 84), 0],
    [_F(5179, 57600), 0, _F(7571, 16695), _F(393, 640), _F(-92097, 339200), _F(187, 2100), _F(1, 40)],
    [0, _F(1, 5), _F(3, 10), _F(4, 5), _F(8, 9), 1, 1],
    fsal=True,
)
del _F
