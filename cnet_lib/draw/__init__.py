"""Drawing, the layer between the reports and the book: the book's plotly helpers (:mod:`.plotting`), a
figure as the book's HTML (:mod:`.html_figures`), live apps (:mod:`.widgets`, :mod:`.widget_view`), and
the figures and live apps of both studies (:mod:`.pendulum_figures`, :mod:`.image_figures`,
:mod:`.robustness_figures`, :mod:`.image_apps`, :mod:`.robustness_app`; their answers in two steps: :mod:`.progressive`; answers that come at once, with their
sampling error said: :mod:`.quick_answers`, not re-exported).  Only this layer and :mod:`cnet_lib.book` import
plotly, IPython or ipywidgets.

Every public name of these modules is re-exported here, by name (``tests/test_cli.py`` checks that none is missing), so
a chapter writes ``draw.fig_accuracy_vs_nt(sweeps)``.
"""
from ..runtime.settings import require_extra

require_extra("cnet_lib.draw")  # plotly, ipywidgets, ...: a clear message on the core install

from . import (html_figures, image_apps, image_figures, pendulum_figures, plotting,
               progressive, robustness_app, robustness_figures, widget_view, widgets)
from .plotting import (ACCURACY_TITLE, percent, log_ticks, log_tick_values, log_tick_text, slider_figure, dropdown_slider_figure, loglog_style, line, reference_slope, book_layout,
                       LEGEND_RIGHT, LEGEND_BELOW)
from .html_figures import (BOOK_RENDERER, MODEBAR_PX, TITLE_CHARS, PLOTLYJS_MARKER, MAX_LINE_POINTS, book_renderer,
                           wrap_title, below_modebar, lean, figure_html, plotlyjs_html)
from .progressive import Progressive, Refiner, display_data, error_output
from .widget_view import WIDGET_VIEW, colab_widget_metadata, widget_bundle, bundle_for_ipython
from .widgets import LiveApp, live_app, Choice, IntRange, Steps, STATIC_NOTE, SLIDER_PX, controls_row
from .pendulum_figures import (fig_exact_motion, fig_against_exact, fig_scheme_explorer, fig_training_loss,
                               fig_trajectories, fig_convergence, fig_interchange, fig_rollout_explorer,
                               fig_dt_data_control, live_rollout_app)
from .image_figures import (fig_basis_functions, fig_theta_bases, fig_training_curves, fig_theta_refinement,
                            fig_manifestations, fig_accuracy_vs_nt, fig_sweep_explorer)
from .robustness_figures import (STORAGE_KINDS, level_name, fig_weight_noise, fig_quantization, fig_input_noise,
                                 fig_drops, fig_robustness_explorer)
from .image_apps import live_sweep_app, app_data, swept_images, evaluate_in_chunks, mosaic
from .robustness_app import live_robustness_app, study_label, active_conditions

MODULES = (plotting, html_figures, widget_view, progressive, widgets, pendulum_figures, image_figures, robustness_figures,
           image_apps, robustness_app)
"""The modules whose public names (``__all__``) this package re-exports."""

__all__ = [name for module in MODULES for name in module.__all__]
