"""What is taken out of the sandbox while one exercise is graded: the code that would do the exercise's work.

* **The library** (:attr:`Plan.kept`): every function of the students' build of cnet_lib that the exercise does
  not need is a stub that refuses, so no function of the build can compute the exercise's answer there, whatever
  its name or its module (a batched multi-scheme rollout does an RK step as well as the integrator does).  What
  the exercise needs is derived by running, never listed: :mod:`.kept` traces what importing the build, building
  the exercise's cases, running the grader's runner and the chapter's solution call; the stubbing keeps besides
  what a module needs to import, and every dunder method and property (:mod:`.grading_library`).  The exercise's
  own list of forbidden code (:attr:`Plan.named`, what the notebook's call guard watches) says which of the
  absent functions *are* the exercise ("this is what exercise X asks you to write") and is what
  :mod:`.similarity` compares a cell with.
* **Outside the library** (:data:`OUTSIDE`): packages hidden from the sandbox's file system (torchdiffeq and
  scipy's ODE solvers for the step exercises, scipy.interpolate for the refinement), functions of torch's and
  numpy's Python files stubbed in the same way (torch's decompositions of interpolation, its quantize and
  dequantize in Python, the observers that compute quantization scales, numpy's ``interp``), torch operators
  whose kernels are replaced in the dispatcher by one that raises (every form of fake quantization and of
  quantized tensors; upsampling and grid sampling), and C functions removed from their modules' namespaces
  (numpy's compiled ``interp``).  The last two happen inside the sandbox, before the student's code runs
  (:mod:`.sandbox`).
"""
from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass, field
from typing import Optional

from ..book.exercises.registry import exercise
from .kept import kept

__all__ = ["Outside", "Plan", "plan", "OUTSIDE", "module_file", "package_folder"]


@dataclass(frozen=True)
class Outside:
    """Routines outside cnet_lib that would do an exercise's work: ``packages`` hidden from the file system,
    ``python`` functions stubbed in their files (``(module, regular expression over qualified names)``), torch
    ``operators`` (a regular expression over dispatcher names such as ``aten::upsample_linear1d``) whose
    kernels raise, and ``attributes`` (``module:name``, C functions) deleted from their modules."""

    packages: tuple[str, ...] = ()
    python: tuple[tuple[str, str], ...] = ()
    operators: str = ""
    attributes: tuple[str, ...] = ()


ODE_SOLVERS = Outside(packages=("torchdiffeq", "scipy.integrate"))
"""torchdiffeq's solvers (a Butcher tableau's step, its error norm) and scipy's (``rk_step``, RK45's error norm)."""

QUANTIZATION = Outside(
    python=(("torch.ao.quantization.fx._decomposed", r"(de)?quantize|fake_quant|choose_qparams|_quant"),
            ("torch.ao.quantization.observer", r"calculate_qparams|_calculate_qparams"),
            ("torch.ao.quantization.utils", r"calculate_qmin_qmax|determine_qparams|_quant"),
            ("torch.ao.quantization.fake_quantize", r"forward|calculate_qparams")),
    operators=r"quantiz|fake_quant|_quant_|::q_|int_repr|dequantize",
)
"""Every form of fake quantization in torch: the operators (fake_quantize_*, _fake_quantize_learnable_*,
quantize_per_*, dequantize, quantized tensors' int_repr and q_*), their Python decompositions and the observers
that compute per-channel scales."""

INTERPOLATION = Outside(
    packages=("scipy.interpolate", "scipy.ndimage", "PIL"),
    python=(("torch._decomp.decompositions", r"upsample|_upsample|grid_sampler|affine_grid|_compute_upsample"),
            ("numpy.lib._function_base_impl", r"^interp$")),
    operators=r"upsample|grid_sampler|affine_grid",
    attributes=("numpy._core._multiarray_umath:interp", "numpy._core._multiarray_umath:interp_complex",
                "numpy._core.multiarray:interp", "numpy._core.multiarray:interp_complex",
                "numpy.lib._function_base_impl:compiled_interp", "numpy.lib._function_base_impl:compiled_interp_complex"),
)
"""Linear interpolation: torch's upsampling and grid sampling (``F.interpolate``, ``grid_sample``) with their
Python decompositions, numpy's ``interp``, scipy.interpolate."""

OUTSIDE = {"rk_step": ODE_SOLVERS, "embedded_step": ODE_SOLVERS, "error_ratio": ODE_SOLVERS,
           "refine_piecewise_linear": INTERPOLATION, "quantize_per_channel": QUANTIZATION}
"""The exercises whose work a routine outside cnet_lib would do."""


@dataclass(frozen=True)
class Plan:
    """Everything taken out for one exercise: ``named`` as ``{module: qualified names}`` (``None``: every function
    of the module), the exercise's own forbidden code; ``kept`` (``{"module:qualified name"}``), the only functions
    of the students' build that stay (the rest is stubbed); the packages hidden (``hidden``: module names) and what
    lies outside the library."""

    exercise: str
    named: dict = field(default_factory=dict)
    kept: frozenset = frozenset()
    hidden: tuple[str, ...] = ()
    outside: Outside = Outside()

    def is_named(self, module: str, qualname: str) -> bool:
        """Whether ``module.qualname`` is the exercise's own forbidden code."""
        names = self.named.get(module, frozenset())
        return names is None or qualname in names

    def named_python(self) -> dict:
        """``{module: (regular expression or None for the whole module)}``: the exercise's own forbidden code and
        the outside routines stubbed for it (what :mod:`.similarity` compares a cell with)."""
        out = {m: None if names is None else "^(" + "|".join(re.escape(n) for n in sorted(names)) + ")$"
               for m, names in self.named.items()}
        for module, pattern in self.outside.python:
            out[module] = pattern
        return out


def _function_name(fn) -> tuple[str, str]:
    fn = getattr(fn, "__func__", fn)
    fn = getattr(fn, "fget", fn)
    return fn.__module__, fn.__qualname__


def plan(name: str) -> Plan:
    """What is taken out while exercise ``name`` is graded (see the module doc)."""
    named: dict[str, Optional[set]] = {}
    hidden = []
    for rule in exercise(name).forbidden():
        for fn in rule.functions:
            module, qualname = _function_name(fn)
            if named.get(module, set()) is not None:
                named.setdefault(module, set()).add(qualname)
        for mod in rule.modules:
            if mod.__name__.split(".")[0] == "cnet_lib":
                named[mod.__name__] = None
            else:
                hidden.append(mod.__name__)
    outside = OUTSIDE.get(name, Outside())
    hidden += [p for p in outside.packages if p not in hidden]
    kept_names = frozenset(k for k in kept(name) if not _named_in(named, k))
    return Plan(name, {m: (None if v is None else frozenset(v)) for m, v in named.items()}, kept_names, tuple(hidden),
                outside)


def _named_in(named: dict, item: str) -> bool:
    module, _, qualname = item.partition(":")
    names = named.get(module, set())
    return names is None or qualname in names


def module_file(module: str) -> Optional[str]:
    """The file of ``module`` (its ``__init__.py`` for a package; None when it is not installed), found without
    importing it where its parent package is loaded already."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None and spec.origin not in (None, "built-in", "frozen") else None


def package_folder(module: str) -> Optional[str]:
    """The folder of package ``module`` (None when it is not installed or not a package)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return locations[0] if locations else None
