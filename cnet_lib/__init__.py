"""cnet_lib: continuous-in-depth neural networks (Queiruga, Erichson, Taylor, Mahoney), exactly.

Folders are the layers, lowest first; a module imports only its own layer or lower ones
(``tests/test_layers.py`` reads the folder tree and checks every import):

* :mod:`cnet_lib.core`: numerics and models (schemes, integrate, bases, OdeBlock, ContinuousNet);
* :mod:`cnet_lib.runtime`: the machine and the files (settings, devices, threads, CUDA graphs,
  checkpoints, locks, presets, rows, vocabulary);
* :mod:`cnet_lib.pendulum` and :mod:`cnet_lib.images`: one package per study (they never import each other);
* :mod:`cnet_lib.draw`: figures, live apps and the plotting helpers they share;
* :mod:`cnet_lib.book`: the book's machinery (setup cell, exercises, student copies, notebook conventions);
* :mod:`cnet_lib.cli`: the command lines, ``python -m cnet_lib <command>``.

This package re-exports the core's names and the session settings; importing it has no side effects.
"""
from .core.adaptive import (AdaptiveSolution, AdaptiveStats, MaxStepsError, integrate_adaptive,
                            integrate_adaptive_positions)
from .core.bases import Basis, CoefficientMap, Legendre, PiecewiseConstant, PiecewiseLinear, basis_names, make_basis
from .core.integrate import StagePosition, integrate, integrate_positions, stage_positions, step_times
from .core.models import ContinuousNet, PreActResidual, Stitch, count_parameters, wide_continuous_net
from .core.odeblock import OdeBlock, remap_optimizer_state
from .core.schemes import EmbeddedPair, Tableau, get_scheme, register_scheme, scheme_names, unregister_scheme
from .runtime.device import default_device
from .runtime.preset_names import PRESETS, preset_name, select_preset
from .runtime.settings import Settings

__version__ = "0.1.0"

__all__ = [
    # numerics
    "Tableau", "get_scheme", "register_scheme", "unregister_scheme", "scheme_names",
    "StagePosition", "integrate", "integrate_positions", "stage_positions", "step_times",
    "EmbeddedPair", "integrate_adaptive", "integrate_adaptive_positions", "AdaptiveSolution", "AdaptiveStats",
    "MaxStepsError",
    "Basis", "CoefficientMap", "PiecewiseConstant", "PiecewiseLinear", "Legendre", "basis_names", "make_basis",
    "OdeBlock", "remap_optimizer_state",
    # models
    "ContinuousNet", "PreActResidual", "Stitch", "count_parameters", "wide_continuous_net",
    # run settings
    "Settings", "PRESETS", "preset_name", "select_preset", "default_device",
]
