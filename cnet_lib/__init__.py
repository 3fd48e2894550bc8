"""cnet_lib: continuous-in-depth neural networks (Queiruga, Erichson, Taylor, Mahoney), exactly.

Folders follow the layers and the book's parts, lowest first (a layer never imports one above it;
``tests/test_layers.py`` checks every import):

* :mod:`cnet_lib.core`: numerics and models (schemes, integrate, bases, OdeBlock, ContinuousNet);
* :mod:`cnet_lib.runtime`: devices, threads, CUDA graphs, checkpoints, presets, tables, vocabulary;
* :mod:`cnet_lib.pendulum` and :mod:`cnet_lib.images`: one package per study (their ``figures``
  modules draw);
* :mod:`cnet_lib.book`: the book's machinery (setup cell, live apps, exercises, student copies);
* command lines at the top: ``python -m cnet_lib.train``, ``.sweep``, ``.robustness``,
  ``.student``, ``.notebook_tools``, ``.ship``, ``.book_plan``.

This package re-exports the core's names; importing it has no side effects.
"""
from .core.bases import Basis, CoefficientMap, Legendre, PiecewiseConstant, PiecewiseLinear, basis_names, make_basis
from .core.integrate import StagePosition, integrate, integrate_positions, stage_positions, step_times
from .core.models import ContinuousNet, PreActResidual, Stitch, count_parameters, wide_continuous_net
from .core.odeblock import OdeBlock, remap_optimizer_state
from .core.schemes import Tableau, get_scheme, register_scheme, scheme_names, unregister_scheme
from .runtime.device import default_device
from .runtime.presets import PRESETS, preset_name, select_preset

__version__ = "0.1.0"

__all__ = [
    # numerics
    "Tableau", "get_scheme", "register_scheme", "unregister_scheme", "scheme_names",
    "StagePosition", "integrate", "integrate_positions", "stage_positions", "step_times",
    "Basis", "CoefficientMap", "PiecewiseConstant", "PiecewiseLinear", "Legendre", "basis_names", "make_basis",
    "OdeBlock", "remap_optimizer_state",
    # models
    "ContinuousNet", "PreActResidual", "Stitch", "count_parameters", "wide_continuous_net",
    # run settings
    "PRESETS", "preset_name", "select_preset", "default_device",
]
