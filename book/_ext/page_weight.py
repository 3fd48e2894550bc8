"""Sphinx extension: a first visit downloads what the book's pages draw, not whole libraries.

Three libraries made a first visit weigh 8.6–9.4 MB and the site 38 MB (measured in headless Chromium; without this
extension the smoke book's heaviest chapter page weighs 5.35 MB, with it 1.87 MB: ``book/CONTRIBUTING.md``):

* **plotly.js** (4.8 MB): ``plotly_asset.py`` serves a partial bundle instead (1.17 MB), which draws every
  trace type the book's pages use (scatter, bar, heatmap); see there;
* **Font Awesome** (1.5 MB of JavaScript holding every icon): the theme's ``fontawesome.js`` is replaced, after the
  build, by a script holding only the icons the built pages use (:func:`icons_used`, :func:`icon_script`), which
  swaps each ``<i class="fa-solid fa-bars">`` for its inline SVG as Font Awesome's own script does; the source maps
  go;
* **MathJax** (1.2 MB on a first visit, 24 MB on the site): the pages load MathJax's startup with only the TeX
  input, its AMS package, the CHTML output and the assistive MathML (:data:`MATHJAX_LOAD`) instead of
  ``tex-chtml.js``, which carries the context menu and every TeX package; after the build the copied MathJax
  folder keeps only those components and the fonts (:data:`MATHJAX_KEEP`); pages without math load none of it
  (Sphinx adds MathJax to the pages that have math), and where Node.js typeset the formulas when the book was built
  (``static_math.py``) no page loads it;
* **Font Awesome's webfonts** (274 KB on every page): the icons are inline SVG (above), yet the theme's stylesheet
  declared the fonts, and the browser fetched them for the ``<i>`` elements drawn before the script swapped them:
  the declarations (:func:`without_icon_fonts`) and the fonts go;
* **the search index** (100 KB, with Sphinx's search scripts, on every page): only the search page loads it
  (:data:`SEARCH_SCRIPTS`); the search box of every page opens that page;
* **ipywidgets' state** (25-50 KB on a page whose notebook saved its live apps' widgets): the book shows no widget
  view (a live app's static figure stands in its place, ``_config.yml``), so no page carries their state;
* **the same style block again and again**: every table and verdict of the library carries its stylesheet (so that
  Jupyter and Colab show it alike), 1.2 KB a table; a page keeps the first copy of each (:func:`first_styles_only`);
* **stylesheets of everything** (500 KB on every page: all of Bootstrap in the theme's, every component of
  sphinx-design and myst-nb): each stylesheet keeps the rules that can match something on the site
  (``unused_css.py``; 395 KB of the theme's went to 102 KB, and the pages drew the same, pixel for pixel, at 390 and
  1280 px).

The browser test draws every page of the book with them (``tests/test_book_build.py``: every figure, every
formula typeset, no icon left undrawn, no JavaScript error) and holds a first visit of every chapter page to 2 MB,
1 MB gzip-compressed.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

MATHJAX_LOAD = ["core", "input/tex-base", "[tex]/ams", "output/chtml", "a11y/assistive-mml"]
"""The MathJax components the pages load (what ``tex-chtml.js`` bundles, less the menu and the other TeX packages)."""

MATHJAX_KEEP = ("startup.js", "core.js", "input/tex-base.js", "input/tex/extensions/ams.js", "output/chtml.js",
                "output/chtml/fonts", "a11y/assistive-mml.js")
"""The files and folders of the copied MathJax that the pages can load; the rest is deleted after the build."""

MODIFIERS = re.compile(r"^(2?xs|sm|lg|xl|2xl|\d+x|fw|spin|pulse|border|inverse|beat|fade|beat-fade|bounce|shake|"
                       r"flip.*|rotate.*|stack.*|ul|li|pull-.*|width-auto)$")
"""Font Awesome's modifier classes (``fa-lg``, ``fa-fw``, ...): sizes and effects, not icons."""

STYLES = {"fa-solid": "fas", "fas": "fas", "fa-regular": "far", "far": "far", "fa-brands": "fab", "fab": "fab"}
"""Font Awesome's style classes and the pack each names."""

_ICON = re.compile(r'(?:"([a-z0-9-]+)"|\b([a-z][a-z0-9]*)):\[(\d+),(\d+),\[[^\]]*\],"[0-9a-f]*",'
                   r'("(?:[^"\\]|\\.)*"|\[(?:"(?:[^"\\]|\\.)*",?)+\])\]')
_PACK = re.compile(r'\bd\("(fa[srb])",(\w+)\)')
_ICON_FONT = re.compile(r'@font-face\{[^}]*Font Awesome[^}]*\}')
SEARCH_SCRIPTS = re.compile(r'\s*<script src="[^"]*(?:_static/searchtools\.js|_static/language_data\.js|searchindex\.js)"></script>')
"""The search scripts the theme puts in the head of every page; the search page loads its own."""
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def _config(app, config):
    config.mathjax_path = "mathjax/startup.js"
    mj = dict(config.mathjax3_config or {})
    mj["loader"] = {**mj.get("loader", {}), "load": list(MATHJAX_LOAD)}
    tex = dict(mj.get("tex", {}))
    tex["packages"] = {"[+]": ["ams"]}
    mj["tex"] = tex
    config.mathjax3_config = mj


def icons_used(html_dir: Path) -> set:
    """``{(pack, name)}`` of every Font Awesome icon the built pages name (``<i class="fa-solid fa-bars">``)."""
    used = set()
    for page in html_dir.rglob("*.html"):
        for classes in re.findall(r'class="([^"]*\bfa[-srb][^"]*)"', page.read_text(encoding="utf-8", errors="ignore")):
            names = classes.split()
            packs = {STYLES[c] for c in names if c in STYLES}
            used |= {(p, c[3:]) for p in packs for c in names
                     if c.startswith("fa-") and c not in STYLES and not MODIFIERS.match(c[3:])}
    return used


def icon_definitions(script: str) -> dict:
    """``{(pack, name): (width, height, path)}`` of Font Awesome's full script (its packs as ``d("fas", p)``)."""
    out, start = {}, 0
    for m in _PACK.finditer(script):
        obj = script.rfind(m.group(2) + "={", start, m.start())
        body = script[obj:m.start()] if obj >= 0 else ""
        for e in _ICON.finditer(body):
            path = json.loads(e.group(5))
            out.setdefault((m.group(1), e.group(1) or e.group(2)), (int(e.group(3)), int(e.group(4)),
                                                                   path if isinstance(path, str) else " ".join(path)))
        start = m.end()
    return out


def icon_script(icons: dict) -> str:
    """A script that draws ``icons`` (``{(pack, name): (w, h, path)}``) the way Font Awesome's does: every ``<i>``
    naming one of them, now or later, becomes an inline SVG with its classes."""
    table = json.dumps({f"{p} {n}": list(v) for (p, n), v in sorted(icons.items())}, separators=(",", ":"))
    return ("/* Font Awesome Free (CC BY 4.0 icons, MIT code), only the icons this book's pages use: "
            "book/_ext/page_weight.py */\n(function(){var I=" + table + ",P=" + json.dumps(STYLES) + ";"
            "function swap(el){var pk=null,nm=null,c=el.classList;for(var i=0;i<c.length;i++){if(P[c[i]])pk=P[c[i]];}"
            "if(!pk)return;for(var j=0;j<c.length;j++){if(c[j].slice(0,3)==='fa-'&&I[pk+' '+c[j].slice(3)])nm=c[j].slice(3);}"
            "if(!nm)return;var d=I[pk+' '+nm],ns='http://www.w3.org/2000/svg',s=document.createElementNS(ns,'svg'),"
            "p=document.createElementNS(ns,'path');s.setAttribute('class',(el.getAttribute('class')||'')+' svg-inline--fa');"
            "s.setAttribute('viewBox','0 0 '+d[0]+' '+d[1]);s.setAttribute('aria-hidden','true');"
            "p.setAttribute('fill','currentColor');p.setAttribute('d',d[2]);s.appendChild(p);el.replaceWith(s);}"
            "function all(r){r.querySelectorAll('i[class*=\"fa\"],span[class*=\"fa-\"]').forEach(swap);}"
            "var st=document.createElement('style');st.textContent='.svg-inline--fa{display:inline-block;height:1em;"
            "overflow:visible;vertical-align:-.125em;box-sizing:content-box}.fa-lg{font-size:1.25em;line-height:.05em;"
            "vertical-align:-.075em}';document.head.appendChild(st);"
            "function go(){all(document);new MutationObserver(function(ms){ms.forEach(function(m){m.addedNodes.forEach("
            "function(n){if(n.nodeType===1){if(n.tagName==='I')swap(n);all(n);}});});}).observe(document.body,"
            "{childList:true,subtree:true});}"
            "if(document.readyState==='loading')document.addEventListener('DOMContentLoaded',go);else go();})();\n")


def _fontawesome(out: Path) -> None:
    script = out / "_static" / "scripts" / "fontawesome.js"
    if not script.is_file():
        return
    text = script.read_text(encoding="utf-8")
    if "only the icons this book's pages use" in text:
        return  # an incremental build: already replaced
    defined = icon_definitions(text)
    used = icons_used(out)
    missing = sorted(f"{p} {n}" for p, n in used if (p, n) not in defined)
    if missing:
        raise RuntimeError(f"Font Awesome icons used by the pages but not found in {script}: {missing}")
    script.write_text(icon_script({k: defined[k] for k in used}), encoding="utf-8")
    for map_file in (out / "_static" / "scripts").glob("*.map"):
        map_file.unlink()


def without_icon_fonts(css: str) -> str:
    """A stylesheet less its Font Awesome ``@font-face`` rules."""
    return _ICON_FONT.sub("", css)


def _icon_fonts(out: Path) -> None:
    for css in (out / "_static" / "styles").glob("*.css"):
        text = css.read_text(encoding="utf-8")
        if _ICON_FONT.search(text):
            css.write_text(without_icon_fonts(text), encoding="utf-8")
    shutil.rmtree(out / "_static" / "vendor" / "fontawesome" / "webfonts", ignore_errors=True)


def _search_page_only(out: Path) -> None:
    for page in out.rglob("*.html"):
        if page.relative_to(out).as_posix() == "search.html":
            continue
        text = page.read_text(encoding="utf-8")
        lean = SEARCH_SCRIPTS.sub("", text)
        if lean != text:
            page.write_text(lean, encoding="utf-8")


def _no_widget_state(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if scripts:
        scripts[:] = [s for s in scripts if (getattr(s, "attributes", None) or {}).get("type") != WIDGET_STATE]


_STYLE = re.compile(r"<style[^>]*>.*?</style>", re.S)


def first_styles_only(html: str) -> str:
    """``html`` with each ``<style>`` block kept where it first appears and dropped where it repeats (a stylesheet
    applies to the whole page wherever it stands)."""
    seen = set()

    def once(m: "re.Match") -> str:
        if m.group(0) in seen:
            return ""
        seen.add(m.group(0))
        return m.group(0)

    return _STYLE.sub(once, html)


def _repeated_styles(out: Path) -> None:
    for page in out.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        lean = first_styles_only(text)
        if len(lean) < len(text):
            page.write_text(lean, encoding="utf-8")


def _stylesheets(out: Path) -> None:
    from unused_css import site_words, used_only

    words = site_words(out)
    for css in (out / "_static").rglob("*.css"):
        if "mathjax" in css.parts or "vendor" in css.parts:
            continue
        text = css.read_text(encoding="utf-8")
        lean = used_only(text, words)
        if len(lean) < len(text):
            css.write_text(lean, encoding="utf-8")


def _mathjax(out: Path) -> None:
    root = out / "_static" / "mathjax"
    if not (root / "startup.js").is_file():
        return
    keep = [root / k for k in MATHJAX_KEEP]
    for path in sorted(root.rglob("*"), reverse=True):
        inside = any(path == k or k in path.parents for k in keep)
        needed = inside or any(path in k.parents for k in keep)
        if not needed:
            shutil.rmtree(path) if path.is_dir() else path.unlink()


def _finished(app, exc):
    if exc is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    _fontawesome(out)
    _icon_fonts(out)
    _search_page_only(out)
    _repeated_styles(out)
    _stylesheets(out)
    _mathjax(out)


def setup(app):
    app.connect("config-inited", _config)
    app.connect("html-page-context", _no_widget_state, priority=950)  # after myst-nb has added the page's scripts
    app.connect("build-finished", _finished, priority=900)  # after sphinx-mathjax-offline has copied MathJax
    return {"parallel_read_safe": True, "parallel_write_safe": True}
