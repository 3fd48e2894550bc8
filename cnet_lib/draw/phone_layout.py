"""A figure's layout on a phone: what changes when the book's page is narrow.

On a laptop the book's legends sit in a column to the right of the plot (:data:`cnet_lib.draw.plotting.LEGEND_RIGHT`)
or in rows under it (:data:`~cnet_lib.draw.plotting.LEGEND_BELOW`).  On a phone (a text column of about 350 px) a
column on the right leaves the plot a strip of 90 px, rows under the plot need more lines than on a laptop and ran
past the figure's bottom edge, and a slider under such a plot prints its step labels on top of each other.  Plotly
has no media queries, so the book's HTML carries a few lines of script (:func:`phone_script`) that, when the figure
is drawn narrower than :data:`PHONE_PX`, apply :func:`phone_updates` with ``Plotly.relayout`` and then make room
for the legend as the browser drew it:

* the legend moves below everything, to the bottom of the figure (``yref: container``), in rows that may be as
  tall as they need (``maxheight``: no scrolling legend); once drawn, its height is measured and the figure grows by
  that much, so the plot keeps its own height and no legend entry falls outside the figure;
* a slider moves down, clear of the x-axis title; one whose step labels do not fit side by side hides them
  (transparent), keeps its current-value label, which names the step shown, and runs the width of the figure (the
  padding that kept its end labels inside had left a rail of 48 px).

The figure's box on the page grows with it (``book/_ext/phone.js``, which also gives a slider with steps too close
for a finger a menu of its steps, and passes a touch on a slider to plotly as the mouse events it reads).  Wider
pages (Jupyter, Colab, the book on a laptop) keep the figure exactly as built.
"""
from __future__ import annotations

import json
from typing import Any

__all__ = ["PHONE_PX", "LEGEND_GAP_PX", "phone_updates", "phone_script"]

PHONE_PX = 520
"""Below this drawn width (CSS pixels) a figure takes its phone layout."""
LEGEND_GAP_PX = 12
"""Room between the legend's rows and what is above them (the x-axis title or the slider)."""

_CHAR_PX = 6.5  # an average character of plotly's default 12 px font
_PHONE_WIDTH = 340  # the book's text column on a 390 px phone
_SLIDER_DROP = 30  # a slider moves this far down, clear of the x-axis title
_SLIDER_END_PX = 10  # a slider's padding at either end once its step labels are hidden
_BELOW_ROOM = 70  # what LEGEND_BELOW keeps under the x-axis title for its rows, given back once they move


_LEGEND_OFF = frozenset({"heatmap", "contour", "histogram2d", "histogram2dcontour", "surface"})
"""Trace types that plotly.js leaves out of the legend unless ``showlegend=True`` (a trace type without a
``showlegend`` property, such as ``image``, never has an entry)."""


def _in_legend(trace) -> bool:
    """Whether plotly shows ``trace`` in the legend: drawn (not ``visible=False``), named, and shown there."""
    if "showlegend" not in trace or trace["visible"] is False or not trace["name"]:
        return False
    shown = trace["showlegend"]
    return shown if shown is not None else trace.type not in _LEGEND_OFF


def _legend_entries(fig) -> list[str]:
    """The names the legend shows first: the traces plotly shows in it (:func:`_in_legend`), of any trace type."""
    return [str(t["name"]) for t in fig.data if _in_legend(t)]


def _legend_moves(fig) -> bool:
    """Whether the legend is shown beside the plot (on the right) or in rows under it (LEGEND_BELOW)."""
    legend = fig.layout.legend
    if fig.layout.showlegend is False or legend.yref == "container":
        return False
    right = legend.orientation != "h" and (legend.x is None or legend.x >= 1.0)
    below = legend.orientation == "h" and legend.y is not None and legend.y < 0
    return right or below


def phone_updates(fig) -> dict[str, Any]:
    """The ``Plotly.relayout`` updates of ``fig``'s phone layout (see the module doc); empty when it needs none.

    ``margin.b`` and ``height`` are the figure's without its legend's rows: :func:`phone_script` adds the height
    of the rows as drawn."""
    updates: dict[str, Any] = {}
    margin = fig.layout.margin
    bottom = margin.b if margin.b is not None else 80
    height = fig.layout.height or 450
    if _legend_entries(fig) and _legend_moves(fig):
        if fig.layout.legend.orientation == "h":  # rows under the plot: the room kept for them moves to the bottom
            bottom, height = max(40, bottom - _BELOW_ROOM), height - min(_BELOW_ROOM, bottom - 40)
        updates.update({"legend.orientation": "h", "legend.x": 0, "legend.xref": "container", "legend.xanchor": "left",
                        "legend.yref": "container", "legend.y": 0, "legend.yanchor": "bottom", "legend.maxheight": 4000,
                        "margin.r": 20, "margin.b": bottom, "height": height})
    sliders = fig.layout.sliders or ()
    if sliders and fig.layout.xaxis.title.text:  # the current value sits under the middle of the x axis
        for i, slider in enumerate(sliders):
            updates[f"sliders[{i}].pad.t"] = (slider.pad.t if slider.pad.t is not None else 20) + _SLIDER_DROP
        updates["margin.b"] = updates.get("margin.b", bottom) + _SLIDER_DROP
        updates["height"] = updates.get("height", height) + _SLIDER_DROP
    for i, slider in enumerate(sliders):
        labels = [str(s.label) for s in slider.steps]
        if sum(len(lab) * _CHAR_PX + 12 for lab in labels) > _PHONE_WIDTH - 110:
            updates[f"sliders[{i}].font.color"] = "rgba(0,0,0,0)"
            updates[f"sliders[{i}].currentvalue.font.color"] = "#444"  # it would inherit the transparent colour
            # the padding kept the end labels inside the figure; hidden, it only shortened the rail (to 48 px)
            updates[f"sliders[{i}].pad.l"] = updates[f"sliders[{i}].pad.r"] = _SLIDER_END_PX
    return updates


def phone_script(updates: dict[str, Any]) -> str:
    """The script (for plotly's ``post_script``, ``{plot_id}`` filled in by plotly) that applies ``updates``
    once when the figure is drawn narrower than :data:`PHONE_PX` and, when they move the legend, grows the
    figure by the height of the legend's rows as drawn; an empty string for no updates."""
    if not updates:
        return ""
    grow = ""
    if updates.get("legend.yref") == "container":
        b, h = updates["margin.b"], updates["height"]
        grow = (".then(function(){var bg=gd.querySelector('.legend > .bg');"
                "var r=bg?Math.ceil(bg.getBoundingClientRect().height)+" + str(LEGEND_GAP_PX) + ":0;"
                f"return Plotly.relayout(gd,{{'margin.b':{b}+r,'height':{h}+r}});}})")
    return ("(function(){var gd=document.getElementById('{plot_id}');"
            f"if(gd&&gd.offsetWidth<{PHONE_PX}){{Plotly.relayout(gd,{json.dumps(updates)}){grow}"
            ".then(function(){var p=gd.parentElement;if(p&&p.style.height)"
            "p.style.height=gd._fullLayout.height+'px';});}})();")
