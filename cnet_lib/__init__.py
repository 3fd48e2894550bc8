"""cnet_lib: continuous-in-depth neural networks (Queiruga, Erichson, Taylor, Mahoney), exactly.

Layers, lowest first: numerics (:mod:`~cnet_lib.schemes`, :mod:`~cnet_lib.integrate`,
:mod:`~cnet_lib.bases`, :mod:`~cnet_lib.odeblock`) -> :mod:`~cnet_lib.models` -> data and
training -> studies -> figures and widgets.  Importing the package has no side effects.
"""
from .bases import Basis, CoefficientMap, Legendre, PiecewiseConstant, PiecewiseLinear, basis_names, make_basis
from .device import default_device
from .integrate import StagePosition, integrate, integrate_positions, stage_positions, step_times
from .odeblock import OdeBlock, remap_optimizer_state
from .presets import PRESETS, preset_name, select_preset
from .schemes import Tableau, get_scheme, register_scheme, scheme_names

from .models import ContinuousNet, PreActResidual, Stitch, count_parameters, wide_continuous_net

__version__ = "0.1.0"

__all__ = [
    # numerics
    "Tableau", "get_scheme", "register_scheme", "scheme_names",
    "StagePosition", "integrate", "integrate_positions", "stage_positions", "step_times",
    "Basis", "CoefficientMap", "PiecewiseConstant", "PiecewiseLinear", "Legendre", "basis_names", "make_basis",
    "OdeBlock", "remap_optimizer_state",
    # models
    "ContinuousNet", "PreActResidual", "Stitch", "count_parameters", "wide_continuous_net",
    # run settings
    "PRESETS", "preset_name", "select_preset", "default_device",
]
