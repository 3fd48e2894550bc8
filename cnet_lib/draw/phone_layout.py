"""A figure's layout on a phone: what changes when the book's page is narrow.

On a laptop the book's legends sit in a column to the right of the plot (:data:`cnet_lib.draw.plotting.LEGEND_RIGHT`).
On a phone (a text column of about 350 px) that column leaves the plot a strip of 90 px, and a slider
under such a strip prints its step labels on top of each other.  Plotly has no media queries, so the
book's HTML carries a few lines of script (:func:`phone_script`) that, when the figure is drawn narrower
than :data:`PHONE_PX`, apply :func:`phone_updates` once with ``Plotly.relayout``:

* a legend on the right moves below everything, to the bottom of the figure (``yref: container``), in
  rows; the figure grows by the legend's height, so the plot keeps its own;
* a slider moves down, clear of the x-axis title; one whose step labels do not fit side by side hides them
  (transparent) and keeps its current-value label, which names the step shown.

Wider pages (Jupyter, Colab, the book on a laptop) keep the figure exactly as built.
"""
from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["PHONE_PX", "phone_updates", "phone_script"]

PHONE_PX = 520
"""Below this drawn width (CSS pixels) a figure takes its phone layout."""

_ROW_PX = 24  # one row of a horizontal legend
_CHAR_PX = 6.5  # an average character of plotly's default 12 px font
_PHONE_WIDTH = 340  # the book's text column on a 390 px phone
_SLIDER_DROP = 30  # a slider moves this far down, clear of the x-axis title


def _legend_entries(fig) -> list[str]:
    """The names the legend shows first: traces drawn (not ``visible=False``) and not hidden from it."""
    names = []
    for t in fig.data:
        if t.visible is False or t.showlegend is False or not t.name:
            continue
        names.append(str(t.name))
    return names


def _legend_on_the_right(fig) -> bool:
    legend = fig.layout.legend
    return legend.orientation != "h" and (legend.x is None or legend.x >= 1.0) and fig.layout.showlegend is not False


def phone_updates(fig) -> dict[str, Any]:
    """The ``Plotly.relayout`` updates of ``fig``'s phone layout (see the module doc); empty when it needs none."""
    updates: dict[str, Any] = {}
    names = _legend_entries(fig)
    if names and _legend_on_the_right(fig):
        widest = max(len(n.split("<br>")[0]) for n in names) * _CHAR_PX + 40
        per_row = max(1, int(_PHONE_WIDTH // widest))
        lines = max(n.count("<br>") + 1 for n in names)
        extra = math.ceil(len(names) / per_row) * _ROW_PX * lines + 10
        margin = fig.layout.margin
        height = fig.layout.height or 450
        updates.update({"legend.orientation": "h", "legend.x": 0, "legend.xanchor": "left", "legend.yref": "container",
                        "legend.y": 0, "legend.yanchor": "bottom", "margin.r": 20,
                        "margin.b": (margin.b if margin.b is not None else 80) + extra, "height": height + extra})
    sliders = fig.layout.sliders or ()
    if sliders and fig.layout.xaxis.title.text:  # the current value sits under the middle of the x axis
        for i, slider in enumerate(sliders):
            updates[f"sliders[{i}].pad.t"] = (slider.pad.t if slider.pad.t is not None else 20) + _SLIDER_DROP
        bottom = updates.get("margin.b", fig.layout.margin.b if fig.layout.margin.b is not None else 80)
        updates["margin.b"] = bottom + _SLIDER_DROP
        updates["height"] = updates.get("height", fig.layout.height or 450) + _SLIDER_DROP
    for i, slider in enumerate(sliders):
        labels = [str(s.label) for s in slider.steps]
        if sum(len(lab) * _CHAR_PX + 12 for lab in labels) > _PHONE_WIDTH - 110:
            updates[f"sliders[{i}].font.color"] = "rgba(0,0,0,0)"
            updates[f"sliders[{i}].currentvalue.font.color"] = "#444"  # it would inherit the transparent colour
    return updates


def phone_script(updates: dict[str, Any]) -> str:
    """The script (for plotly's ``post_script``, ``{plot_id}`` filled in by plotly) that applies ``updates``
    once when the figure is drawn narrower than :data:`PHONE_PX`; an empty string for no updates."""
    if not updates:
        return ""
    return ("(function(){var gd=document.getElementById('{plot_id}');"
            f"if(gd&&gd.offsetWidth<{PHONE_PX}){{Plotly.relayout(gd,{json.dumps(updates)});}}}})();")
