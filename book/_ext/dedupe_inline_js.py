"""Sphinx extension: drop duplicated inline ``<script>`` bodies from every HTML page.

Sphinx 7.4 adds an inline script twice when an extension calls ``app.add_js_file(None,
body=...)`` after the builder is initialised (``None`` and ``''`` file names compare
unequal; fixed upstream in sphinx-doc/sphinx#13402, Sphinx 8.x, which jupyter-book 1.x
cannot use).  With sphinx-thebe this declares ``const THEBE_JS_URL`` twice, a JavaScript
``SyntaxError`` on every page, which the book's browser test rightly reports.
"""
from __future__ import annotations


def _key(script):
    filename = getattr(script, "filename", script) or ""
    attrs = getattr(script, "attributes", {}) or {}
    return (str(filename), tuple(sorted((k, str(v)) for k, v in attrs.items())))


def _dedupe(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for s in scripts:
        k = _key(s)
        if k not in seen:
            seen.add(k)
            unique.append(s)
    scripts[:] = unique


def setup(app):
    app.connect("html-page-context", _dedupe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
