"""The pendulum study behind the chapters "Numerical integrators" and "Is a ResNet a forward-Euler
integrator?": the exact solution and data (:mod:`.physics`), the ODE-Net and its training
(:mod:`.odenet`), the presets (:mod:`.pendulum_presets`), the integrators on the true rate
(:mod:`.convergence`), the trained models, a study obtained whole, once per machine (:mod:`.trained_models`;
every ODE-Net of a study trained at once: :mod:`.stacked_step`, :mod:`.batched_training`, on the device
:mod:`.study_training` measures faster; on disk and shipped: :mod:`.study_store`), their rollouts
(:mod:`.rollouts`, several schemes at once: :mod:`.scheme_batches`) and flows (:mod:`.rate_flows`), the
adaptive solves of many rates and tolerances at once (:mod:`.batched_adaptive`), the measures these share
(:mod:`.path_errors`), the chapters' tables (:mod:`.pendulum_tables`), and what the second chapter says
about its numbers, worded from them (:mod:`.pendulum_claims`).  Its figures and live
app are in :mod:`cnet_lib.draw.pendulum_figures`.

Every public name of these modules is re-exported here, so a chapter writes ``pendulum.train_models(cfg)``.
"""
from . import convergence, odenet, path_errors, pendulum_presets, pendulum_tables, physics, rate_flows, rollouts
from . import pendulum_claims, trained_models
from . import adaptive_flows, batched_adaptive, batched_training, scheme_batches, stacked_step, study_store, study_training
from .adaptive_flows import *  # noqa: F401,F403
from .batched_adaptive import *  # noqa: F401,F403
from .batched_training import *  # noqa: F401,F403
from .convergence import *  # noqa: F401,F403
from .odenet import *  # noqa: F401,F403
from .path_errors import *  # noqa: F401,F403
from .pendulum_claims import *  # noqa: F401,F403
from .pendulum_presets import *  # noqa: F401,F403
from .pendulum_tables import *  # noqa: F401,F403
from .physics import *  # noqa: F401,F403
from .rate_flows import *  # noqa: F401,F403
from .rollouts import *  # noqa: F401,F403
from .scheme_batches import *  # noqa: F401,F403
from .stacked_step import *  # noqa: F401,F403
from .study_store import *  # noqa: F401,F403
from .study_training import *  # noqa: F401,F403
from .trained_models import *  # noqa: F401,F403

MODULES = (physics, odenet, pendulum_presets, path_errors, convergence, trained_models, rollouts, rate_flows,
           pendulum_tables, pendulum_claims)
MODULES += (adaptive_flows, batched_adaptive, scheme_batches, stacked_step, batched_training, study_store, study_training)
"""The modules whose public names (``__all__``) this package re-exports."""

__all__ = [name for module in MODULES for name in module.__all__]
