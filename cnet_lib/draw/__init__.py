"""Drawing, the layer between the studies and the book: the book's plotly helpers (:mod:`.plotting`), a
figure as the book's HTML (:mod:`.html_figures`), live apps (:mod:`.widgets`, :mod:`.widget_view`), and
the figures and live apps of both studies (:mod:`.pendulum_figures`, :mod:`.image_figures`,
:mod:`.robustness_figures`, :mod:`.image_apps`, :mod:`.robustness_app`; their answers in two steps:
:mod:`.progressive`).  Only this layer and :mod:`cnet_lib.book` import plotly,
IPython or ipywidgets.

Every public name of these modules is re-exported here, so a chapter writes ``draw.fig_accuracy_vs_nt(sweeps)``.
"""
from . import html_figures, image_apps, image_figures, pendulum_figures, plotting, robustness_figures, widget_view
from . import progressive, robustness_app, widgets
from . import adaptive_app, adaptive_figures
from .adaptive_app import *  # noqa: F401,F403
from .adaptive_figures import *  # noqa: F401,F403
from .html_figures import *  # noqa: F401,F403
from .image_apps import *  # noqa: F401,F403
from .image_figures import *  # noqa: F401,F403
from .pendulum_figures import *  # noqa: F401,F403
from .plotting import *  # noqa: F401,F403
from .progressive import *  # noqa: F401,F403
from .robustness_app import *  # noqa: F401,F403
from .robustness_figures import *  # noqa: F401,F403
from .widget_view import *  # noqa: F401,F403
from .widgets import *  # noqa: F401,F403

MODULES = (plotting, html_figures, widget_view, progressive, widgets, pendulum_figures, image_figures, robustness_figures,
           image_apps, robustness_app)
MODULES += (adaptive_figures, adaptive_app)
"""The modules whose public names (``__all__``) this package re-exports."""

__all__ = [name for module in MODULES for name in module.__all__]
