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

This package re-exports the names a researcher uses (:data:`__all__`; the book's page *API reference* lists
them with their documentation); importing it has no side effects and needs only the core install (torch,
numpy and two small pure-Python helpers).  The data names (:func:`load_dataset`, :class:`ImageData`,
:func:`iterate_batches`) are imported when first used, so ``import cnet_lib`` stays quick.  The book's parts
(:mod:`cnet_lib.book`, :mod:`cnet_lib.draw`, :mod:`cnet_lib.pendulum`) need ``pip install "cnet-lib[book]"``
and say so when it is missing.
"""
import importlib as _importlib

from .core.adaptive import (AdaptiveSolution, AdaptiveStats, MaxStepsError, integrate_adaptive,
    integrate_adaptive_positions)
from .core.bases import Basis, CoefficientMap, Legendre, PiecewiseConstant, PiecewiseLinear, basis_names, make_basis
from .core.integrate import StagePosition, integrate, integrate_positions, stage_positions, step_times
from .core.models import ContinuousNet, PreActResidual, Stitch, count_parameters, wide_continuous_net
from .core.odeblock import OdeBlock, StaleOptimizerWarning, remap_optimizer_state
from .core.schemes import EmbeddedPair, Tableau, get_scheme, register_scheme, scheme_names, unregister_scheme
from .runtime.checkpoint import CheckpointError, load_model, save_model
from .runtime.device import default_device
from .runtime.settings import PRESETS, Settings, preset_name, select_preset

__version__ = "0.1.0"

__all__ = [
    # schemes and integration
    "Tableau", "EmbeddedPair", "get_scheme", "register_scheme", "unregister_scheme", "scheme_names",
    "integrate", "integrate_positions", "StagePosition", "stage_positions", "step_times",
    # adaptive steps
    "integrate_adaptive", "integrate_adaptive_positions", "AdaptiveSolution", "AdaptiveStats", "MaxStepsError",
    # bases
    "Basis", "PiecewiseConstant", "PiecewiseLinear", "Legendre", "CoefficientMap", "basis_names", "make_basis",
    # the OdeBlock
    "OdeBlock", "remap_optimizer_state", "StaleOptimizerWarning",
    # ContinuousNet
    "ContinuousNet", "PreActResidual", "Stitch", "count_parameters", "wide_continuous_net",
    # data
    "load_dataset", "ImageData", "iterate_batches",
    # checkpoints
    "save_model", "load_model", "CheckpointError",
    # settings
    "Settings", "PRESETS", "preset_name", "select_preset", "default_device",
]

_ON_FIRST_USE = {"load_dataset": "cnet_lib.images.data.image_data", "ImageData": "cnet_lib.images.data.image_data",
                 "iterate_batches": "cnet_lib.images.data.batches"}
"""Public names imported when first used (the image study's data wing), by the module that defines them."""


def __getattr__(name: str):
    """The names of :data:`_ON_FIRST_USE`, imported on first use (PEP 562)."""
    if name not in _ON_FIRST_USE:
        raise AttributeError(f"module 'cnet_lib' has no attribute {name!r}")
    value = getattr(_importlib.import_module(_ON_FIRST_USE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    """The module's names, those imported on first use included."""
    return sorted(set(globals()) | set(_ON_FIRST_USE))
