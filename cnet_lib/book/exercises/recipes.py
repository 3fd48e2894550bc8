"""Exercise cases as data ("recipes"), the objects they build, and a function's outputs as data.

The book's public checks, the teacher's answer key and the teacher's grader describe every call of a
student's function by a JSON-able *recipe*, ``{"label": ..., "args": [...], "kwargs": {...}}``, whose
arguments are plain JSON values or ``{"$": builder, ...parameters}``.  :func:`build` turns a recipe's
arguments into objects (tensors, Butcher tableaux, rates, OdeBlocks, ContinuousNets, sweep rows), the same
objects in every process that builds them: that is how the grader's own process and the sandbox that runs a
submission agree on the arguments without sharing memory.  A recipe may name the near misses it catches
(``"catches": ["ceil"]``), for the answer key.

:func:`encode` / :func:`decode` carry a function's return value between processes as JSON (tensors with their
dtype and shape, floats exactly); anything else is recorded as unsupported, which never matches.
"""
from __future__ import annotations

import json
import math
import random
from fractions import Fraction
from typing import Any, Callable

import numpy as np
import torch
from torch import nn

from ...core import models, odeblock
from ...core.schemes import get_scheme
from ...pendulum import odenet, physics

__all__ = ["build", "build_call", "encode", "decode", "observed", "recipe", "recipes_digest", "Rate", "BUILDERS"]

BUILDERS: dict[str, Callable[..., Any]] = {}
MAX_ELEMENTS = 1_000_000  # a returned value larger than this is recorded as unsupported
DTYPES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128", "int8", "uint8", "int16", "int32",
          "int64", "bool")


def _builder(fn: Callable) -> Callable:
    BUILDERS[fn.__name__.lstrip("_")] = fn
    return fn


def recipe(label: str, *args: Any, catches: tuple = (), **kwargs: Any) -> dict:
    """One call: ``{"label", "args", "kwargs", "catches"}`` (``catches``: the near misses this case tells apart)."""
    return {"label": label, "args": list(args), "kwargs": dict(kwargs), "catches": list(catches)}


def recipes_digest(recipes: list) -> str:
    """SHA-256 of the recipes as canonical JSON (floats written exactly)."""
    import hashlib

    return hashlib.sha256(json.dumps(recipes, sort_keys=True).encode()).hexdigest()


def build(value: Any) -> Any:
    """The object a recipe argument stands for: ``{"$": name, ...}`` through :data:`BUILDERS`, plain JSON as is."""
    if isinstance(value, dict) and "$" in value:
        name = value["$"]
        if name not in BUILDERS:
            raise ValueError(f"unknown recipe builder {name!r}; known: {', '.join(sorted(BUILDERS))}")
        return BUILDERS[name](**{k: v for k, v in value.items() if k != "$"})
    return value


def build_call(case: dict) -> tuple[tuple, dict]:
    """``(args, kwargs)`` of a recipe."""
    return tuple(build(a) for a in case.get("args", ())), {k: build(v) for k, v in case.get("kwargs", {}).items()}


def observed(result: Any, args: tuple, kwargs: dict) -> Any:
    """The value a check compares: ``result``, or ``{"returned": result, **observations}`` when an argument
    records what the function did with it (e.g. a :class:`Rate` counting its evaluations)."""
    notes = {}
    for a in tuple(args) + tuple(kwargs.values()):
        if isinstance(a, Rate) and a.counted:
            notes["rate_evaluations"] = a.calls
    return {"returned": result, **notes} if notes else result


# ----------------------------------------------------------------------------- builders
@_builder
def _tensor(data, dtype: str = "float64") -> torch.Tensor:
    return torch.tensor(data, dtype=getattr(torch, dtype))


@_builder
def _array(data) -> np.ndarray:
    return np.asarray(data, dtype=np.float64)


@_builder
def _tuple(items) -> tuple:
    return tuple(build(i) for i in items)


@_builder
def _scheme(name: str):
    return get_scheme(name)


@_builder
def _fractions(items) -> tuple:
    return tuple(Fraction(i) for i in items)


@_builder
def _randn(shape, seed: int, dtype: str = "float64", row_scale=None, zero_rows=()) -> torch.Tensor:
    """Standard normal entries from ``seed``; row ``c`` (along the first dimension) times ``row_scale[c]``."""
    w = torch.randn(*shape, generator=torch.Generator().manual_seed(int(seed)), dtype=torch.float64)
    if row_scale is not None:
        w = w * torch.tensor(row_scale, dtype=torch.float64).reshape(-1, *[1] * (w.dim() - 1))
    for r in zero_rows:
        w[r] = 0.0
    return w.to(getattr(torch, dtype))


class Rate:
    """A named rate ``f(t, x)`` (or ``G(x)`` with ``time_free``) that counts its evaluations."""

    def __init__(self, name: str, fn: Callable, counted: bool = False):
        self.name, self.fn, self.counted, self.calls = name, fn, counted, 0

    def __call__(self, *args):
        self.calls += 1
        return self.fn(*args)

    def __repr__(self) -> str:
        return self.name


@_builder
def _rate(name: str, omega: float = 3.0, g: float = 9.81, counted: bool = False) -> Rate:
    """``pendulum``: f(t, x) = [v, −g sin ρ]; ``forced``: f(t, x) = [v, −sin ρ + cos ωt] (time-dependent)."""
    if name == "pendulum":
        return Rate(f"pendulum f(t, x) = [v, -{g} sin ρ]", lambda t, x: torch.stack([x[..., 1], -g * torch.sin(x[..., 0])], -1),
                    counted)
    if name == "forced":
        return Rate(f"forced f(t, x) = [v, -sin ρ + cos {omega}t]",
                    lambda t, x: torch.stack([x[..., 1], -torch.sin(x[..., 0]) + math.cos(omega * t)], -1), counted)
    raise ValueError(f"unknown rate {name!r} (pendulum, forced)")


@_builder
def _true_rate() -> Rate:
    return Rate("true_rate", physics.true_rate)


@_builder
def _odenet(hidden: int, seed: int) -> Rate:
    with torch.random.fork_rng(devices=[]):  # leave the caller's random state alone
        torch.manual_seed(int(seed))
        net = odenet.ODENet(hidden=int(hidden)).double().eval()
    return Rate(f"a small fixed ODENet G(x) (hidden={hidden}, seed {seed})", net)


@_builder
def _ode_block(m: int, T: float, skip: bool, eps: float, scheme: str, n_steps: int, seed: int, width: int = 5):
    """An OdeBlock of a small MLP residual (M = ``m``, horizon ``T``, ε = ``eps``), currently manifested as
    ``(scheme, n_steps)``; with ``skip`` its gains s_β alternate in sign."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        residual = nn.Sequential(nn.Linear(width, 7), nn.Tanh(), nn.Linear(7, width))
        block = odeblock.OdeBlock(residual, int(m), scheme=scheme, n_steps=int(n_steps), epsilon=eps, T=T, skip_init=skip)
    if skip:
        with torch.no_grad():
            block.skip_gain.copy_(torch.linspace(0.3, 1.1, int(m)) * torch.tensor([(-1.0) ** k for k in range(int(m))]))
    return block


@_builder
def _continuous_net(channels, n_basis, skip: bool, classes: int, seed: int = 0):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        return models.ContinuousNet(channels=tuple(channels), n_basis=n_basis, skip_init=skip, num_classes=int(classes))


@_builder
def _sweep_rows(trained: float, identity: float, seed: int) -> list:
    """Rows like a sweep's (manifestations, the trained graph, a compressed model, the identity), shuffled."""
    rows = [{"kind": "manifestation", "scheme": s, "n_steps": n, "accuracy": a, "is_trained": False}
            for s, n, a in (("euler", 1, 0.31), ("midpoint", 2, 0.42), ("rk4_classic", 4, trained - 0.01))]
    rows.append({"kind": "manifestation", "scheme": "rk4_classic", "n_steps": 8, "accuracy": trained, "is_trained": True})
    rows.append({"kind": "trained", "scheme": "rk4_classic", "n_steps": 8, "accuracy": trained})
    rows.append({"kind": "compressed", "scheme": "rk4_38", "n_steps": 2, "n_basis": 2, "accuracy": 0.12})
    rows.append({"kind": "identity", "scheme": None, "n_steps": 0, "accuracy": identity})
    random.Random(seed).shuffle(rows)
    return rows


# ----------------------------------------------------------------------------- outputs as data
def encode(value: Any, _budget: list | None = None) -> Any:
    """``value`` as JSON-able data: tensors ``{"$": "tensor", dtype, shape, data}``, numpy arrays likewise,
    tuples, lists and dicts with string keys element by element; any other object ``{"$": "unsupported"}``."""
    budget = [MAX_ELEMENTS] if _budget is None else _budget
    if isinstance(value, torch.Tensor) or isinstance(value, np.ndarray):
        kind = "tensor" if isinstance(value, torch.Tensor) else "array"
        arr = value.detach().cpu() if kind == "tensor" else value
        budget[0] -= int(arr.numel() if kind == "tensor" else arr.size)
        if budget[0] < 0:
            return {"$": "unsupported", "type": f"{kind} too large"}
        flat = arr.reshape(-1).tolist()
        return {"$": kind, "dtype": str(arr.dtype).replace("torch.", ""), "shape": list(arr.shape), "data": flat}
    if isinstance(value, (bool, type(None), str)) or type(value) in (int, float):
        return value
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if isinstance(value, (list, tuple)):
        return {"$": type(value).__name__ if type(value) in (list, tuple) else "list",
                "items": [encode(v, budget) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"$": "dict", "items": {k: encode(v, budget) for k, v in value.items()}}
    return {"$": "unsupported", "type": type(value).__name__}


def decode(data: Any) -> Any:
    """The value :func:`encode` wrote (an unsupported object becomes an :class:`Unsupported` marker)."""
    if not isinstance(data, dict):
        return data
    kind = data.get("$")
    if kind in ("tensor", "array") and data.get("dtype") not in DTYPES:
        return Unsupported(f"{kind} of dtype {data.get('dtype')!r}")
    if kind == "tensor":
        return torch.tensor(data["data"], dtype=getattr(torch, data["dtype"])).reshape(data["shape"])
    if kind == "array":
        return np.asarray(data["data"], dtype=data["dtype"]).reshape(data["shape"])
    if kind in ("list", "tuple"):
        items = [decode(v) for v in data["items"]]
        return tuple(items) if kind == "tuple" else items
    if kind == "dict":
        return {k: decode(v) for k, v in data["items"].items()}
    return Unsupported(str(data.get("type", "?")))


class Unsupported:
    """A returned value that could not be carried as data (it matches nothing)."""

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<a {self.type_name} object>"

    def __eq__(self, other) -> bool:
        return False

    __hash__ = None
