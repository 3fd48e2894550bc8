"""Drawing, the layer between the reports and the book: the book's plotly helpers (:mod:`.plotting`), a
figure as the book's HTML (:mod:`.html_figures`), live apps and what the image apps share (:mod:`.widgets`; each study's own figures are in its folder,
:mod:`cnet_lib.studies`), and their answers in two steps or at once with their sampling error said
(:mod:`.progressive`).  Only this layer and :mod:`cnet_lib.book` import
plotly, IPython or ipywidgets.

Every public name of these modules is re-exported here, by name (``tests/test_cli.py`` checks that none is missing), so
a chapter writes ``draw.fig_adaptive_accuracy(...)``.
"""
from ..runtime.settings import require_extra

require_extra("cnet_lib.draw")  # plotly, ipywidgets, ...: a clear message on the core install

from . import html_figures, plotting, progressive, widgets
from .plotting import (ACCURACY_TITLE, percent, log_ticks, log_tick_values, log_tick_text, slider_figure, dropdown_slider_figure, loglog_style, line, line_styles, reference_slope, book_layout,
                       LEGEND_RIGHT, LEGEND_BELOW)
from .html_figures import (BOOK_RENDERER, MODEBAR_PX, TITLE_CHARS, PLOTLYJS_MARKER, MAX_LINE_POINTS, book_renderer,
                           wrap_title, below_modebar, lean, figure_html, plotlyjs_html, PHONE_PX, LEGEND_GAP_PX,
                           phone_updates, phone_script)
from .progressive import (Progressive, Refiner, display_data, error_output, QUICK_FLOPS, Estimate, binomial_se,
                          follow_text, forward_flops, quick_size, sweep_answer, study_answer, estimate_from)
from .widgets import (WIDGET_VIEW, colab_widget_metadata, widget_bundle, bundle_for_ipython, LiveApp, live_app, Choice,
                      IntRange, Steps, STATIC_NOTE, SLIDER_PX, controls_row, app_data, evaluate_in_chunks, mosaic,
                      predicted_titles, thumbnails)

MODULES = (plotting, html_figures, progressive, widgets)
"""The modules whose public names (``__all__``) this package re-exports."""

__all__ = [name for module in MODULES for name in module.__all__]
