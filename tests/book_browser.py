"""What a reader would see as wrong on a built page, measured in a real browser (headless Chromium).

Used by ``tests/test_book_build.py`` on the smoke build, and runnable on any built book, e.g. the ``cpu``
one (``python tests/book_browser.py _build/cpu/_build/html``): it opens every page of ``_toc.yml`` at
1280 px and at 390 px and prints every problem found.

At both widths: a legend, menu, slider, toolbar, title, subplot title, annotation or axis title
overlapping another part of its figure (bounding boxes); a figure text cut off at the figure's edge;
the same figure twice on a page; a bare ``True``/``False`` output; two works cited under one label; a
bibliography label that is not an author–year label; a table or a VERDICT printed as fixed-width text;
a machine path (``/root/...``, ``/tmp/...``, ``<tmp>``, ``../shared``) in the text; a word of the machinery
(:data:`MACHINERY`) in what the page says (its prose and outputs, the setup cell's lines left out); a run of
identical output lines.  At 1280 px: any output, table or display formula wider than its box (``WIDE_JS``).  At
390 px: a table or verdict (the library's HTML, ``.cnet-rich``) or a figure wider than the text column (``NARROW_JS``).

Issue 44 (the book on a phone), at both widths: a word of a table broken in the middle (``BREAKS_JS``); a figure
running past its box on the page (over what follows), a legend entry outside its figure, a legend that scrolls, tick
labels that overlap (``LAYOUT_JS``); the page wider than the window, a display formula wider than the text column
(``OVERFLOW_JS``); a dropdown's list, opened, outside its figure (``MENUS_JS``); slider steps closer than
:data:`MIN_STEP_PX` without a menu of them beside the figure, and a menu that does not move its slider
(``SLIDERS_JS``); at 390 px, in Chrome's phone emulation, a touch drag along every slider that does not take it to
its end (:func:`control_problems`).

Issue 53, with real input (Chrome DevTools Protocol mouse events at 1280 px; touch events in Chrome's emulation of a
phone at 390 px): the chapter list (☰) and the page contents that do not open and close on every page, a laptop's
sidebar button that does not collapse the sidebar (:func:`nav_problems`); a figure's menu that moves its slider, or
a slider that changes its menu (:func:`choice_problems`); a category axis missing labels, a tick label off its figure,
a log axis's label that does not say its number, bar value labels running into each other or under a marker
(:func:`label_problems`); a formula in a line of text past its column (``OVERFLOW_JS``); a token of code broken in a
table (``BREAKS_JS``); at 390 px, a table's key column (``cnet-key``) that needs a sideways swipe (``TABLE_KEYS_JS``),
a display formula shrunk past reading and a code cell squeezed beside a margin note (``READING_JS``).
"""
from __future__ import annotations

import re
import sys
import time
from pathlib import Path

from book_controls import (FIGURE_LABELS_JS, MENUS_JS, MIN_STEP_PX, OVERFLOW_JS, PHONE, TABLE_KEYS_JS, choice_problems,
    control_problems, label_problems, nav_problems, phone_emulation)

LAPTOP = (1280, 1000)

# Every box a reader could see collide, per figure, in page pixels.  Plotly's class names:
# .gtitle (title), .annotation (subplot titles and annotations), .legend > .bg, .updatemenu-header-group and
# .updatemenu-button (menus), .slider-container (slider), .slider-label / .slider-current-value,
# .modebar (plotly's toolbar, over the top right of every figure), .g-xtitle / .g-ytitle (axis titles).
LAYOUT_JS = """
function box(el) {
    const r = el.getBoundingClientRect();
    return (r.width > 0 && r.height > 0) ? {l: r.left, r: r.right, t: r.top, b: r.bottom} : null;
}
function shown(el) {
    const c = getComputedStyle(el);
    return c.fill !== 'rgba(0, 0, 0, 0)' && c.opacity !== '0' && c.fillOpacity !== '0';
}
function boxes(g, sel) { return Array.from(g.querySelectorAll(sel)).filter(shown).map(box).filter(b => b); }
return Array.from(document.querySelectorAll('.plotly-graph-div')).map(g => {
    const svg = g.querySelector('svg.main-svg');
    return {
        id: g.id,
        title: (g.layout && g.layout.title && g.layout.title.text) || '',
        frame: svg ? box(svg) : null,
        holder: g.parentElement ? box(g.parentElement) : null,
        legendtexts: boxes(g, '.legend .legendtext'),
        legendscroll: boxes(g, '.legend .scrollbar').length,
        ticks: Array.from(g.querySelectorAll('.xaxislayer-above, .yaxislayer-above')).map(
            layer => Array.from(layer.querySelectorAll('.xtick text, .ytick text')).filter(shown).map(box).filter(b => b)),
        parts: {
            title: boxes(g, '.gtitle'),
            annotation: boxes(g, '.annotation-text'),
            legend: boxes(g, '.legend > .bg'),
            menu: boxes(g, '.updatemenu-header-group, .updatemenu-button'),
            slider: boxes(g, '.slider-container'),
            toolbar: boxes(g, '.modebar'),
            axistitle: boxes(g, '.g-xtitle, .g-ytitle'),
            steplabel: boxes(g, '.slider-label'),
        },
        texts: boxes(g, '.gtitle, .annotation-text, .slider-label, .slider-current-value, .updatemenu-item-text, .legendtext, .g-xtitle, .g-ytitle'),
        data: JSON.stringify((g.data || []).map(t => [t.type, t.x, t.y, t.z])),
    };
});
"""
# pairs of parts that must not overlap; a part may overlap others of its own kind (legend entries, ...),
# except annotations (subplot titles and labels) and a slider's step labels: two of them overlapping hide
# each other (a label made transparent, as the phone layout does with crowded step labels, is not drawn)
MUST_NOT_OVERLAP = [("legend", "title"), ("legend", "annotation"), ("legend", "menu"), ("legend", "slider"),
                    ("menu", "title"), ("menu", "annotation"), ("menu", "slider"), ("slider", "title"),
                    ("toolbar", "title"), ("toolbar", "legend"), ("toolbar", "menu"), ("toolbar", "annotation"),
                    ("legend", "axistitle"), ("slider", "axistitle"), ("title", "annotation"),
                    ("annotation", "annotation"), ("axistitle", "annotation"), ("axistitle", "title"),
                    ("slider", "annotation"), ("steplabel", "steplabel")]

PAGE_TEXT_JS = """
const article = document.querySelector('article') || document.body;
const bare = Array.from(document.querySelectorAll('.cell_output .output'))
    .map(o => o.textContent.trim()).filter(t => t === 'True' || t === 'False');
const cites = Array.from(document.querySelectorAll('a.reference.internal'))
    .filter(a => /references\\.html#/.test(a.getAttribute('href') || '') && a.closest('#bibliography, .citation') === null)
    .map(a => [a.textContent.trim(), a.getAttribute('href').split('#')[1]]);
const wide = Array.from(document.querySelectorAll('article table')).filter(t => {
    const c = t.parentElement;
    return t.getBoundingClientRect().width > c.getBoundingClientRect().width + 1 || c.scrollWidth > c.clientWidth + 1;
}).map(t => t.textContent.trim().slice(0, 60));
const labels = Array.from(document.querySelectorAll('div.citation span.label'))
    .map(s => s.textContent.replace(/[\\[\\]]/g, '').trim());
const printed = Array.from(document.querySelectorAll('.cell_output pre')).map(p => p.textContent);
const runs = Array.from(document.querySelectorAll('.cell_output')).map(o => {
    const lines = [];
    o.querySelectorAll('pre, p').forEach(e => {
        if (e.tagName === 'P' && e.closest('pre')) return;
        e.innerText.split('\\n').forEach(l => lines.push(l.trim()));
    });
    return lines;
});
const seen = article.cloneNode(true);  // what the page says, the setup cell's lines (the preset, the device) left out
seen.querySelectorAll('.cell_output').forEach(o => { if (/^\\s*preset: /.test(o.textContent)) o.remove(); });
return {bare: bare, cites: cites, wide: wide, labels: labels, printed: printed, text: article.innerText, runs: runs,
        said: seen.textContent};
"""

# at both widths: a word of a table broken across two lines ("sche|me", "rk4_c|lassic", "Δt=0.000|625"); a word of
# prose may end a line after a hyphen, a dash, a slash, a comma or "=", or before an opening bracket; a token of code
# (inline code: `runs=["rk4"])`, `--batch-size`) only where it has a space (issue 53: "runs=|["rk4"])", "--|epochs")
BREAKS_JS = """
const out = [];
document.querySelectorAll('article table').forEach(t => {
    const walker = document.createTreeWalker(t, NodeFilter.SHOW_TEXT);
    let n;
    while ((n = walker.nextNode())) {
        const code = n.parentElement && n.parentElement.closest('code, kbd, samp, .pre');
        const s = n.textContent, re = /\\S+/g;
        let m;
        while ((m = re.exec(s))) {
            let prev = null;
            for (let i = 0; i < m[0].length; i++) {
                const r = document.createRange();
                r.setStart(n, m.index + i); r.setEnd(n, m.index + i + 1);
                const rc = Array.from(r.getClientRects()).filter(x => x.width > 0);
                if (!rc.length) continue;
                if (prev !== null && rc[0].top > prev + 2 && (code || (!'-\u2013/,='.includes(m[0][i - 1])
                    && !'([{<'.includes(m[0][i])))) {
                    out.push((code ? 'code ' : '') + m[0].slice(0, i) + '|' + m[0].slice(i));
                    break;
                }
                prev = rc[0].top;
            }
        }
    }
});
return out;
"""

# at 1280 px: anything in an output, or display math, wider than its box
WIDE_JS = """
const col = (document.querySelector('article') || document.body).getBoundingClientRect();
const out = [];
document.querySelectorAll('.cell_output pre, .cell_output .output, .cell_output table, .cnet-rich, mjx-container[display="true"]')
    .forEach(e => {
        const r = e.getBoundingClientRect();
        if (r.width === 0) return;
        if (e.scrollWidth > e.clientWidth + 1 || r.right > col.right + 1)
            out.push(e.tagName.toLowerCase() + ': ' + e.textContent.trim().replace(/\\s+/g, ' ').slice(0, 70));
    });
return out;
"""

# at 390 px: tables and verdicts (the library's HTML) and figures within the text column (a wide table may be wider
# than the column inside its own scrolling box, which may not)
NARROW_JS = """
const col = (document.querySelector('article') || document.body).getBoundingClientRect();
const out = [];
document.querySelectorAll('.cnet-rich, .cnet-rich .cnet-scroll, .cnet-rich table, .plotly-graph-div svg.main-svg').forEach(e => {
    const r = e.getBoundingClientRect();
    if (r.width === 0) return;
    if (e.tagName === 'TABLE' && e.parentElement.classList.contains('cnet-scroll')
        && getComputedStyle(e.parentElement).overflowX === 'auto') return;  // a wide table scrolls in its own box
    const scrolls = e.classList.contains('cnet-scroll') && getComputedStyle(e).overflowX === 'auto';
    if ((!scrolls && e.scrollWidth > e.clientWidth + 1) || r.right > col.right + 1 || r.left < col.left - 1)
        out.push(e.tagName.toLowerCase() + ': ' + (e.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 70));
});
return out;
"""

MIN_MATH = 0.8
"""The smallest a display formula may be on a phone against the text around it; phone.js shrinks one wider than the
column to fit, and at 0.68 (the quantization formula of *Robustness* in one line) its subscripts were unreadable."""

READING_JS = """
const text = parseFloat(getComputedStyle(document.querySelector('article p') || document.body).fontSize);
const out = [];
document.querySelectorAll('mjx-container[display="true"]').forEach(m => {
    const size = parseFloat(getComputedStyle(m).fontSize) / text;
    if (size < arguments[0])
        out.push('a display formula shrunk to ' + Math.round(100 * size) + "% of the text's size (break it into lines: "
                 + 'aligned or gathered): ' + (m.querySelector('mjx-assistive-mml') || m).textContent.trim().slice(0, 60));
});
const boxes = Array.from(document.querySelectorAll('div.cell_input, div.cell_output > div.output'))
    .filter(c => c.getBoundingClientRect().width > 0);
const widest = Math.max(0, ...boxes.map(c => c.getBoundingClientRect().width));
boxes.forEach(c => {
    const w = c.getBoundingClientRect().width;
    if (w < 0.8 * widest)
        out.push('a cell ' + (c.classList.contains('cell_input') ? 'input' : 'output') + ' squeezed to ' + Math.round(w)
                 + ' px of ' + Math.round(widest) + ' (beside a margin note?): '
                 + (c.innerText || c.textContent).trim().replace(/\\s+/g, ' ').slice(0, 50));
});
return out;
"""
"""At 390 px: a display formula shrunk below :data:`MIN_MATH` of the text's size, and a cell's code or output narrower than 80% of
the page's widest code, or an output (squeezed beside something floated, as the theme floats margin notes)."""

TEXT_TABLE_RULE = re.compile(r"^\s*-{2,}( {2}-+)+\s*$", re.M)
"""The rule under a plain-text table's header (``format_table``): such a table printed, not displayed."""
AUTHOR_YEAR = re.compile(r"^[^\W\d_][\w'’. -]*( and [^\W\d_][\w'’. -]*| et al\.)?, (\d{4}[a-z]?|n\.d\.)$")
MACHINE_PATH = re.compile(r"(?<![\w~.])/(root|home|tmp|work|Users|private/var|var/folders)/|<tmp>|\.\./shared\b")
MACHINERY = re.compile(r"warnings as errors|continuous integration|unit tests? check|AMD EPYC|this project's|"
                       r"the project's \d-core|\[local\]", re.I)
"""Words of the machinery that builds and checks the book, which a reader has no use for: how a build treats
warnings, what CI or the unit tests do, the builder's CPU by its brand or as "the project's" machine."""


def _inside(a: dict, frame: dict, tol: float = 1.0) -> bool:
    return (a["l"] >= frame["l"] - tol and a["r"] <= frame["r"] + tol and a["t"] >= frame["t"] - tol
            and a["b"] <= frame["b"] + tol)


def _overlap(a: dict, b: dict, tol: float = 1.0) -> bool:
    return min(a["r"], b["r"]) - max(a["l"], b["l"]) > tol and min(a["b"], b["b"]) - max(a["t"], b["t"]) > tol


def layout_problems(figures: list[dict]) -> list[str]:
    """What a reader would see as broken in the drawn figures (from :data:`LAYOUT_JS`)."""
    problems = []
    for f in figures:
        name = f"figure {f['title'][:50]!r}" if f["title"] else f"figure {f['id']}"
        for a, b in MUST_NOT_OVERLAP:
            pairs = [(x, y) for i, x in enumerate(f["parts"].get(a, [])) for j, y in enumerate(f["parts"].get(b, []))
                     if a != b or i < j]
            if any(_overlap(x, y) for x, y in pairs):
                problems.append(f"{name}: the {a} overlaps the {b}" if a != b else f"{name}: two {a}s overlap")
        frame = f["frame"]
        if frame:
            cut = [t for t in f["texts"] if t["l"] < frame["l"] - 1 or t["r"] > frame["r"] + 1 or t["t"] < frame["t"] - 1]
            if cut:
                problems.append(f"{name}: {len(cut)} text(s) cut off at the figure's edge (slider labels, title, legend or "
                                "axis titles)")
            out = [t for t in f.get("legendtexts", []) if not _inside(t, frame)]
            if out:
                problems.append(f"{name}: {len(out)} legend entr{'y' if len(out) == 1 else 'ies'} outside the figure")
            holder = f.get("holder")
            if holder and frame["b"] > holder["b"] + 1:
                problems.append(f"{name}: the figure runs {frame['b'] - holder['b']:.0f} px past its box, over what "
                                "follows it")
        if f.get("legendscroll"):
            problems.append(f"{name}: the legend scrolls (entries hidden until scrolled)")
        for axis in f.get("ticks", []):
            if any(_overlap(a, b) for i, a in enumerate(axis) for b in axis[i + 1:]):
                problems.append(f"{name}: tick labels overlap")
                break
    seen = {}
    for f in figures:
        if f["data"] != "[]" and f["data"] in seen:
            problems.append(f"figure {f['id']} repeats figure {seen[f['data']]} (the same data drawn twice on one page)")
        seen.setdefault(f["data"], f["id"])
    return problems


def _repeated_lines(runs: list[list[str]]) -> list[str]:
    """Lines that repeat, identical and non-empty, right after themselves within one cell's output."""
    out = []
    for lines in runs:
        for a, b in zip(lines, lines[1:]):
            if a and a == b:
                out.append(f"the same output line twice in a row: {a[:70]!r}")
                break
    return out


def text_problems(found: dict, paths: tuple = ()) -> list[str]:
    """Bare True/False outputs, ambiguous citations, cut-off tables, mangled bibliography labels, tables
    or verdicts printed as text, machine paths (and the extra ``paths``) and repeated output lines
    (from :data:`PAGE_TEXT_JS`)."""
    problems = [f"a bare {t} output (end the cell with `;` or print a sentence)" for t in found["bare"]]
    targets = {}
    for text, target in found["cites"]:
        targets.setdefault(text, set()).add(target)
    problems += [f"citation {text!r} names {len(t)} different works" for text, t in targets.items() if len(t) > 1]
    problems += [f"table wider than the text column: {t!r}" for t in found["wide"]]
    problems += [f"bibliography label {label!r} is not an author-year label" for label in found.get("labels", [])
                 if not AUTHOR_YEAR.match(label)]
    for text in found.get("printed", []):
        if TEXT_TABLE_RULE.search(text):
            problems.append(f"a table printed as fixed-width text (display it): {text.strip()[:60]!r}")
        if "VERDICT" in text:
            problems.append(f"a verdict printed as fixed-width text (display it): {text.strip()[:60]!r}")
    text = found.get("text", "")
    starts = sorted({m.start() for m in MACHINE_PATH.finditer(text)}
                    | {i for p in paths if p for i in range(len(text)) if text.startswith(p, i)})
    for at in sorted({text.rfind("\n", 0, s) for s in starts}):  # one report per line
        line = text[at + 1:text.find("\n", at + 1) if "\n" in text[at + 1:] else len(text)]
        problems.append(f"a machine path in the page: {line.strip()[:100]!r}")
    problems += _repeated_lines(found.get("runs", []))
    for m in sorted({m.group(0).lower() for m in MACHINERY.finditer(found.get("said", ""))}):
        problems.append(f"the machinery in the page's words: {m!r}")
    return problems


def break_problems(found: list[str]) -> list[str]:
    """Words of a table broken across two lines at 1280 px (from :data:`BREAKS_JS`)."""
    return [f"at 1280 px: a word of a table broken in the middle: {w!r}" for w in found[:12]]


def width_problems(found: list[str], width: str) -> list[str]:
    """Outputs wider than their box (:data:`WIDE_JS`, at 1280 px) or key outputs and figures wider than
    the text column (:data:`NARROW_JS`, at 390 px)."""
    return [f"at {width}: wider than its box: {t}" for t in found]


SETTLE_S = 0.5
"""How long a drawn page is left before it is measured."""


def check_page(driver, url: str, paths: tuple = ()) -> list[str]:
    """Every problem of the page at ``url`` at laptop width (mouse clicks) and at phone width (Chrome's emulation of a
    phone, taps); the driver is left at laptop width.  Figures must draw within 30 s."""
    from selenium.webdriver.support.ui import WebDriverWait

    problems = []
    for size, label in ((LAPTOP, "1280 px"), (PHONE, "390 px")):
        phone = size == PHONE
        driver.set_window_size(*size)
        if phone:
            phone_emulation(driver)
        try:
            driver.get(url)
            try:
                WebDriverWait(driver, 30, poll_frequency=0.2).until(lambda d: d.execute_script(
                    "return Array.from(document.querySelectorAll('.plotly-graph-div')).every(g => g.querySelector('svg.main-svg'))"))
            except Exception:
                pass  # undrawn figures are reported by the caller
            time.sleep(SETTLE_S)  # the phone layout's relayouts (phone_layout.py, phone.js) follow the first drawing
            found = [f"at {label}: {p}" for p in nav_problems(driver, touch=phone)]  # every page, prose alone too
            if phone and not driver.execute_script(
                    "return document.querySelectorAll('.cell_output, .math, article table, article pre').length"):
                problems += found
                break  # a page of prose alone (no outputs, formulas, tables or code): nothing more to check on a phone
            if found:
                driver.get(url)  # a failed navigation check may leave a dialog or the sidebar as it was
                time.sleep(SETTLE_S + 1)
            found += [f"at {label}: {p}" for p in layout_problems(driver.execute_script(LAYOUT_JS))]
            found += [f"at {label}: {p}" for p in label_problems(driver.execute_script(FIGURE_LABELS_JS))]
            found += [f"at {label}: {p}" for p in driver.execute_script(OVERFLOW_JS)]
            found += [f"at {label}: {p}" for p in driver.execute_script(MENUS_JS)]
            found += [f"at {label}: {p}" for p in control_problems(driver, touch=phone)]
            found += [f"at {label}: {p}" for p in choice_problems(driver, touch=phone)]
            if not phone:
                found += text_problems(driver.execute_script(PAGE_TEXT_JS), paths)
                found += width_problems(driver.execute_script(WIDE_JS), label)
                found += break_problems(driver.execute_script(BREAKS_JS))
            else:
                found += [p.replace("at 1280 px", "at 390 px") for p in break_problems(driver.execute_script(BREAKS_JS))]
                found += width_problems(driver.execute_script(NARROW_JS), label)
                found += [f"at {label}: {p}" for p in driver.execute_script(TABLE_KEYS_JS)]
                found += [f"at {label}: {p}" for p in driver.execute_script(READING_JS, MIN_MATH)]
            problems += found
        finally:
            if phone:
                phone_emulation(driver, False)
    driver.set_window_size(*LAPTOP)
    return problems


def main(argv=None) -> int:
    """``python tests/book_browser.py HTML_DIR``: check every page of a built book; exit 1 on a problem."""
    import functools
    import http.server
    import threading

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from cnet_lib.book.project import toc_files

    html = Path((argv or sys.argv[1:])[0]).resolve()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(
        type("Quiet", (http.server.SimpleHTTPRequestHandler,), {"log_message": lambda *a: None}), directory=str(html)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1000",
                 "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    bad = 0
    try:
        for page in toc_files(Path(__file__).resolve().parents[1]):
            problems = check_page(driver, f"http://127.0.0.1:{httpd.server_address[1]}/{page}.html",
                                  (str(Path.home()), str(Path(__file__).resolve().parents[1])))
            bad += bool(problems)
            print(f"{page}: {'ok' if not problems else ''}" + "".join(f"\n  - {p}" for p in problems))
    finally:
        driver.quit()
        httpd.shutdown()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
