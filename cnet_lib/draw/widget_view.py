"""The display bundle of an ipywidget, the same on ipywidgets 7 and 8, with its metadata kept.

:class:`cnet_lib.draw.widgets.LiveApp` and the pendulum's progress bar display a widget together
with a static ``text/html`` view.  They build their bundle from :func:`widget_bundle`:

* ipywidgets 8 has ``Widget._repr_mimebundle_``, which may return ``(data, metadata)``;
  the metadata is kept, never dropped;
* ipywidgets 7 (Colab's preinstalled major) has no ``_repr_mimebundle_``, only
  ``_ipython_display_``; the widget view is written the way it writes it;
* on Google Colab with the custom widget manager enabled, the widget view carries the
  metadata that manager needs (``{"colab": {"custom_widget_manager": {"url": ...}}}``).
  Colab adds it itself only to outputs sent with ``display()``, not to a cell's last value.

This module imports nothing from the book's frame, so any layer may use it.
"""
from __future__ import annotations

import sys
from typing import Any, Optional

__all__ = ["WIDGET_VIEW", "colab_widget_metadata", "widget_bundle", "bundle_for_ipython"]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def colab_widget_metadata() -> dict:
    """The metadata Colab's custom widget manager needs on a widget view; ``{}`` when it is off."""
    output = sys.modules.get("google.colab.output")
    url = getattr(getattr(output, "_widgets", None), "_installed_url", None)
    if not url:
        return {}
    return {WIDGET_VIEW: {"colab": {"custom_widget_manager": {"url": url}}}}


def _merged(metadata: dict, extra: dict) -> dict:
    """``metadata`` with the entries of ``extra`` added one mime type deep (existing keys win)."""
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in metadata.items()}
    for mime, entries in extra.items():
        target = out.setdefault(mime, {})
        if isinstance(target, dict):
            for key, value in entries.items():
                target.setdefault(key, value)
    return out


def widget_bundle(widget: Any, include=None, exclude=None) -> tuple[dict, dict]:
    """``(data, metadata)`` that display ``widget``, on ipywidgets 7 and 8 alike.

    ``data`` holds the widget view (``application/vnd.jupyter.widget-view+json``) and
    ``text/plain``; it holds no widget view for a closed widget.  ``metadata`` is what the
    widget itself returned plus, on Colab, :func:`colab_widget_metadata`.
    """
    data: dict = {}
    metadata: dict = {}
    repr_bundle = getattr(widget, "_repr_mimebundle_", None)
    if callable(repr_bundle):  # ipywidgets >= 8
        out = repr_bundle(include=include, exclude=exclude)
        if isinstance(out, tuple):
            data, metadata = out[0] or {}, out[1] or {}
        else:
            data = out or {}
    elif getattr(widget, "comm", None) is not None and getattr(widget, "_view_name", None):  # ipywidgets 7
        text = repr(widget)
        data = {
            "text/plain": text if len(text) <= 110 else text[:110] + "…",
            WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": widget.model_id},
        }
    data, metadata = dict(data), dict(metadata)
    if WIDGET_VIEW in data:
        metadata = _merged(metadata, colab_widget_metadata())
    return data, metadata


def bundle_for_ipython(data: dict, metadata: Optional[dict]):
    """What ``_repr_mimebundle_`` returns: ``(data, metadata)`` when there is metadata, else ``data``."""
    return (data, metadata) if metadata else data
