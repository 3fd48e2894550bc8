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
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Iterator, Sequence, Union

__all__ = [
    "Tableau",
    "get_scheme",
    "register_scheme",
    "unregister_scheme",
    "scheme_names",
    "rooted_trees",
]

Number = Union[int, Fraction, str]


def _frac(v: Number) -> Fraction:
    if isinstance(v, float):
        raise TypeError(
            f"tableau entries must be exact (int, Fraction or a string like '1/3'), got the float {v!r}; "
            "write it as Fraction or a string so the order conditions can be checked exactly"
        )
    return Fraction(v)


# --------------------------------------------------------------------------- rooted trees
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


def _tree_order(tree: tuple) -> int:
    return 1 + sum(_tree_order(c) for c in tree)


def _density(tree: tuple) -> int:
    """gamma(t): |t| times the densities of the subtrees."""
    return _tree_order(tree) * math.prod(_density(c) for c in tree)


def _stage_weights(tree: tuple, a: tuple[tuple[Fraction, ...], ...]) -> list[Fraction]:
    """Phi_i(t) = prod over children u of (A Phi(u))_i, with Phi(single vertex) = 1."""
    s = len(a)
    phi = [Fraction(1)] * s
    for child in tree:
        inner = _stage_weights(child, a)
        for i in range(s):
            phi[i] *= sum(a[i][j] * inner[j] for j in range(s))
    return phi


# --------------------------------------------------------------------------- tableau
@dataclass(frozen=True)
class Tableau:
    """An explicit Runge–Kutta Butcher tableau with exact rational entries.

    Parameters
    ----------
    name: registry name (e.g. ``"rk4_classic"``).
    order: the order ``p`` the scheme claims; every order condition for trees with at
        most ``p`` vertices is checked exactly, and at least one of order ``p + 1`` must
        fail (so the declared order is the true order).
    a: the ``s x s`` strictly lower-triangular matrix (rows may be given short: row
        ``i`` needs only its first ``i`` entries).
    b: the ``s`` weights; ``c``: the ``s`` nodes.
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
        if sum(self.b) != 1:
            raise ValueError(f"tableau {self.name!r}: the weights b sum to {sum(self.b)}, not 1 (inconsistent scheme)")
        for p in range(1, self.order + 1):
            for tree in rooted_trees(p):
                lhs = self.elementary_weight(tree)
                if lhs != Fraction(1, _density(tree)):
                    raise ValueError(
                        f"tableau {self.name!r} claims order {self.order} but fails the order-{p} condition "
                        f"for tree {tree}: b.Phi = {lhs}, needs 1/{_density(tree)}"
                    )
        if self.satisfies_order(self.order + 1):
            raise ValueError(
                f"tableau {self.name!r} claims order {self.order} but satisfies every order-{self.order + 1} "
                "condition too; declare its true order"
            )

    # ---- derived data
    @property
    def stages(self) -> int:
        return len(self.b)

    def elementary_weight(self, tree: tuple) -> Fraction:
        """b . Phi(tree); the order condition for ``tree`` is that this equals 1/gamma(tree)."""
        return sum(bi * pi for bi, pi in zip(self.b, _stage_weights(tree, self.a)))

    def satisfies_order(self, p: int) -> bool:
        """True when every order condition for trees with at most ``p`` vertices holds."""
        return all(
            self.elementary_weight(t) == Fraction(1, _density(t)) for q in range(1, p + 1) for t in rooted_trees(q)
        )

    @property
    def float_a(self) -> tuple[tuple[tuple[int, float], ...], ...]:
        """Row i: the (j, a_ij) pairs with a_ij != 0, as floats (zero entries skipped)."""
        return tuple(tuple((j, float(v)) for j, v in enumerate(row) if v != 0) for row in self.a)

    @property
    def float_b(self) -> tuple[tuple[int, float], ...]:
        """The (i, b_i) pairs with b_i != 0, as floats."""
        return tuple((i, float(v)) for i, v in enumerate(self.b) if v != 0)

    def __str__(self) -> str:
        s = self.stages
        w = max(len(str(v)) for v in (*self.c, *self.b, *(x for r in self.a for x in r)))
        lines = []
        for i in range(s):
            cells = " ".join(f"{str(self.a[i][j]) if j < i else '':>{w}}" for j in range(s))
            lines.append(f"{str(self.c[i]):>{w}} | {cells}")
        lines.append("-" * (w + 3 + s * (w + 1)))
        lines.append(" " * w + " | " + " ".join(f"{str(v):>{w}}" for v in self.b))
        return f"{self.name} (order {self.order}, {s} stage{'s' if s > 1 else ''})\n" + "\n".join(lines)


# --------------------------------------------------------------------------- registry
_REGISTRY: dict[str, Tableau] = {}

_AMBIGUOUS = {
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
del _F
