"""Issue 44's checks of a drawn page that work its controls or measure the page as a whole (for ``book_browser.py``).

At both widths: the page no wider than the window and every display formula within the text column
(:data:`OVERFLOW_JS`); a dropdown's list, opened, inside its figure (:data:`MENUS_JS`); a slider's steps at least
:data:`MIN_STEP_PX` apart, or a menu of its steps beside the figure that moves it (:data:`SLIDERS_JS`,
:func:`control_problems`); at 390 px, in Chrome's phone emulation, a touch drag along every slider that takes it to its
end (:func:`control_problems` with ``touch``).
"""
from __future__ import annotations

import time

PHONE = (390, 844)

# at both widths: the page no wider than the window (a long word of code pushed six pages sideways at 390 px), and
# every display formula within its box (MathJax does not break lines: a wide one was cut off or scrolled)
OVERFLOW_JS = """
const out = [], w = document.documentElement.clientWidth;
if (document.documentElement.scrollWidth > w + 1)
    out.push('the page is ' + (document.documentElement.scrollWidth - w) + ' px wider than the window');
document.querySelectorAll('mjx-container[display="true"]').forEach(m => {
    const inner = m.firstElementChild;
    if (inner && inner.getBoundingClientRect().width > m.clientWidth + 1)
        out.push('a formula wider than the text column (cut off or scrolled): '
                 + m.textContent.trim().replace(/\\s+/g, ' ').slice(0, 60));
});
// a formula in a line of text: within its paragraph or list item, or in a scroll box of its own (issue 53: two of
// 425 and 407 px ran past a 358 px column); in a table, the table's box scrolls
document.querySelectorAll('mjx-container:not([display="true"])').forEach(m => {
    const r = m.getBoundingClientRect();
    const block = m.parentElement && m.parentElement.closest('p, li, dd, dt, td, th, div, blockquote');
    if (!r.width || !block || block.closest('table')) return;
    const b = block.getBoundingClientRect(), c = getComputedStyle(block);
    const right = b.right - parseFloat(c.paddingRight) - parseFloat(c.borderRightWidth);
    if (r.right > right + 1)
        out.push('a formula in the text runs ' + Math.round(r.right - right) + ' px past its column: '
                 + m.textContent.trim().replace(/\\s+/g, ' ').slice(0, 60));
});
return out;
"""

# at both widths: a dropdown's list, opened, lies inside its figure
MENUS_JS = """
const out = [];
document.querySelectorAll('.plotly-graph-div').forEach(g => {
    const frame = g.querySelector('svg.main-svg');
    if (!frame) return;
    const f = frame.getBoundingClientRect();
    g.querySelectorAll('.updatemenu-header').forEach(head => {
        const click = () => head.dispatchEvent(new MouseEvent('click', {bubbles: true}));
        click();
        const items = Array.from(g.querySelectorAll('.updatemenu-dropdown-button')).map(b => b.getBoundingClientRect())
            .filter(r => r.width > 0);
        const outside = items.filter(r => r.bottom > f.bottom + 1 || r.right > f.right + 1 || r.left < f.left - 1);
        if (outside.length)
            out.push(((g.layout.title && g.layout.title.text) || g.id).slice(0, 50) + ': ' + outside.length + ' of '
                     + items.length + ' entries of its dropdown lie outside the figure');
        click();
    });
});
return out;
"""

# at both widths: a slider's steps at least MIN_STEP_PX apart, or a menu of its steps beside the figure that works
SLIDERS_JS = """
const out = [];
document.querySelectorAll('.plotly-graph-div').forEach(g => {
    const s = g.layout && g.layout.sliders && g.layout.sliders[0], rail = g.querySelector('.slider-rail-rect');
    if (!s || !rail || s.steps.length < 2) return;
    const gap = rail.getBoundingClientRect().width / (s.steps.length - 1);
    if (gap >= arguments[0]) return;
    const name = ((g.layout.title && g.layout.title.text) || g.id).slice(0, 50);
    const menu = g.parentElement.parentElement.querySelector(':scope > .cnet-steps select');
    if (!menu || menu.options.length !== s.steps.length) {
        out.push(name + ': slider steps ' + gap.toFixed(0) + ' px apart and no menu of its steps beside it');
        return;
    }
    out.push({id: g.id, name: name, n: s.steps.length, active: s.active || 0});
});
return out;
"""

# a touch drag on a slider (Chrome's touch emulation): the slider follows the finger
SLIDER_GRIP_JS = """
const g = document.getElementById(arguments[0]);
const grip = g.querySelector('.slider-grip-rect'), rail = g.querySelector('.slider-rail-rect');
grip.scrollIntoView({block: 'center'});
const a = grip.getBoundingClientRect(), r = rail.getBoundingClientRect();
return {x: a.left + a.width / 2, y: a.top + a.height / 2, start: r.left - 12, end: r.right + 12,
        active: g.layout.sliders[0].active || 0, n: g.layout.sliders[0].steps.length};
"""
MIN_STEP_PX = 24
"""A slider's steps closer than this need a menu beside them (a finger covers about 10 mm)."""



def control_problems(driver, touch: bool = False) -> list[str]:
    """Sliders a finger cannot work: steps closer than :data:`MIN_STEP_PX` without a menu of them beside the figure,
    a menu that does not move its slider, and (``touch``) a slider that does not follow a touch drag."""
    problems = []
    for found in driver.execute_script(SLIDERS_JS, MIN_STEP_PX):
        if isinstance(found, str):
            problems.append(found)
            continue
        pick = 0 if found["active"] else found["n"] - 1
        driver.execute_script("const s = arguments[0].parentElement.parentElement.querySelector(':scope > .cnet-steps "
                              "select'); s.value = String(arguments[1]); s.dispatchEvent(new Event('change'));",
                              driver.find_element("id", found["id"]), pick)
        time.sleep(0.3)
        active = driver.execute_script("return document.getElementById(arguments[0]).layout.sliders[0].active", found["id"])
        if active != pick:
            problems.append(f"{found['name']}: choosing step {pick} in the menu beside the slider left it at {active}")
    if touch:
        problems += _touch_problems(driver)
    return problems


def _touch_problems(driver) -> list[str]:
    """A touch drag on every slider of the page, from its grip to the rail's end (to its start when it is at the end),
    in Chrome's emulation of a phone (:func:`phone_emulation`, which the caller turns on): the slider follows it."""
    ids = driver.execute_script("return Array.from(document.querySelectorAll('.plotly-graph-div')).filter(g => "
                                "g.querySelector('.slider-grip-rect') && g.layout.sliders[0].steps.length > 1).map(g => g.id)")
    if not ids:
        return []
    problems = []
    for gid in ids:
        at = driver.execute_script(SLIDER_GRIP_JS, gid)
        target = at["n"] - 1 if at["active"] != at["n"] - 1 else 0
        end = at["end"] if target else at["start"]
        path = [at["x"] + (end - at["x"]) * k / 6 for k in range(7)]
        touch = [{"x": path[0], "y": at["y"]}]
        driver.execute_cdp_cmd("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": touch})
        for x in path[1:]:
            driver.execute_cdp_cmd("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [{"x": x, "y": at["y"]}]})
            time.sleep(0.03)
        driver.execute_cdp_cmd("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
        time.sleep(0.3)
        active = driver.execute_script("return document.getElementById(arguments[0]).layout.sliders[0].active", gid)
        if active != target:
            name = driver.execute_script("const g = document.getElementById(arguments[0]); return "
                                         "((g.layout.title && g.layout.title.text) || g.id).slice(0, 50)", gid)
            problems.append(f"{name}: a touch drag along its slider left it at step {active}, not at {target}")
    return problems



# ----------------------------------------------------------------------------- real input (Chrome DevTools Protocol)
def tap(driver, x: float, y: float) -> None:
    """A finger's tap at (x, y) of the viewport (CSS px); Chrome's touch emulation must be on (:func:`phone_emulation`).
    What it does is awaited by the caller (:func:`until`)."""
    driver.execute_cdp_cmd("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
    time.sleep(0.05)
    driver.execute_cdp_cmd("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    time.sleep(0.05)


def click(driver, x: float, y: float) -> None:
    """A mouse's click at (x, y) of the viewport (CSS px): moved there, pressed and released."""
    for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
        driver.execute_cdp_cmd("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "clickCount": 1,
                                                             "button": "none" if kind == "mouseMoved" else "left"})
    time.sleep(0.05)


def until(check, timeout: float = 3.0, poll: float = 0.05):
    """``check()`` again and again until it is true or ``timeout`` seconds have passed; its last value."""
    end = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > end:
            return value
        time.sleep(poll)


def phone_emulation(driver, on: bool = True) -> None:
    """Chrome's emulation of a phone (a 390 × 844 px screen at 3 device pixels per px, touch) on or off."""
    if on:
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": PHONE[0], "height": PHONE[1],
                                                                       "deviceScaleFactor": 3, "mobile": True})
        driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 1})
    else:
        driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": False})
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def press(driver, x: float, y: float, touch: bool) -> None:
    """A tap (``touch``) or a mouse click at (x, y)."""
    (tap if touch else click)(driver, x, y)


# ----------------------------------------------------------------------------- navigation
# the buttons a reader sees: the chapter list's (☰, .primary-toggle) and the page contents' (.secondary-toggle)
NAV_BUTTON_JS = """
const b = Array.from(document.querySelectorAll(arguments[0])).find(e => {
    const r = e.getBoundingClientRect(), c = getComputedStyle(e);
    return r.width > 0 && r.height > 0 && c.visibility !== 'hidden' && r.bottom > 0 && r.top < innerHeight;
});
if (!b) return null;
const r = b.getBoundingClientRect();
return {x: r.left + r.width / 2, y: r.top + r.height / 2};
"""
DIALOG_JS = """
const d = document.getElementById(arguments[0]);
if (!d) return null;
const r = d.getBoundingClientRect();
const links = Array.from(d.querySelectorAll('a[href]')).filter(a => {
    const q = a.getBoundingClientRect();
    return q.width > 0 && q.height > 0 && q.left >= -1 && q.right <= innerWidth + 1;
}).length;
return {open: d.open, left: r.left, right: r.right, links: links};
"""
SIDEBAR_JS = """
const s = document.getElementById('pst-primary-sidebar');
if (!s) return null;
const r = s.getBoundingClientRect(), c = getComputedStyle(s);
return {shown: c.visibility !== 'hidden' && c.display !== 'none' && r.width > 0 && r.right > 0,
        article: document.querySelector('article').getBoundingClientRect().width};
"""
SIDEBARS_AWAY_JS = """
return Array.from(document.querySelectorAll('.bd-sidebar-primary, .bd-sidebar-secondary')).every(s => {
    const r = s.getBoundingClientRect();
    return getComputedStyle(s).visibility === 'hidden' || r.width === 0 || r.right <= 0 || r.left >= innerWidth;
});
"""
"""Whether both sidebars are out of the way: a sidebar closed on a phone slides off for a few tenths of a second, and
a tap or a drag there meanwhile lands on it, not on the page."""
NAV_DIALOGS = ((".primary-toggle", "pst-primary-sidebar-modal", "the chapter list (☰)"),
               (".secondary-toggle", "pst-secondary-sidebar-modal", "the page contents"))


def nav_problems(driver, touch: bool) -> list[str]:
    """Issue 53: on a phone (``touch``: Chrome's phone emulation, real taps) the chapter list and the page contents open
    with a tap on their buttons, show their links, and close with a tap beside them; on a laptop (real mouse clicks)
    the sidebar button collapses the chapter list and a second click brings it back.  The theme bound its handlers to
    hidden buttons of the site header, and the visible buttons did nothing."""
    problems = []
    driver.execute_script("window.scrollTo(0, 0)")
    time.sleep(0.2)
    if touch:
        for button, dialog, what in NAV_DIALOGS:
            at = driver.execute_script(NAV_BUTTON_JS, button)
            if at is None:
                if button == ".primary-toggle":
                    problems.append(f"no visible button opens {what}")
                continue
            tap(driver, at["x"], at["y"])
            state = until(lambda: (st := driver.execute_script(DIALOG_JS, dialog)) and st["open"] and st)
            state = state or driver.execute_script(DIALOG_JS, dialog)
            if not state or not state["open"]:
                problems.append(f"a tap on the button of {what} did not open it")
                continue
            if state["links"] < 1:
                problems.append(f"{what}, opened, shows no link")
            # a tap beside the dialog, on its backdrop, closes it
            x = state["right"] + (PHONE[0] - state["right"]) / 2 if state["right"] < PHONE[0] - 20 else state["left"] / 2
            tap(driver, x, PHONE[1] / 2)
            if not until(lambda: not driver.execute_script(DIALOG_JS, dialog)["open"]):
                problems.append(f"{what}, opened, did not close with a tap beside it")
                driver.execute_script("document.getElementById(arguments[0]).close()", dialog)
            if not until(lambda: driver.execute_script(SIDEBARS_AWAY_JS)):
                problems.append(f"{what}, closed, still covers the page after 3 s")
    else:
        before = driver.execute_script(SIDEBAR_JS)
        at = driver.execute_script(NAV_BUTTON_JS, ".primary-toggle")
        if before is None or not before["shown"] or at is None:
            return ["at laptop width the chapter list or its button is not shown"]
        click(driver, at["x"], at["y"])
        # the theme's transition takes 0.25 s
        collapsed = until(lambda: (h := driver.execute_script(SIDEBAR_JS)) and not h["shown"]
                          and h["article"] > before["article"])
        if not collapsed:
            problems.append("a click on the sidebar button did not collapse the chapter list")
        else:
            at = driver.execute_script(NAV_BUTTON_JS, ".primary-toggle")
            click(driver, at["x"], at["y"])
            if not until(lambda: driver.execute_script(SIDEBAR_JS)["shown"]):
                problems.append("a second click on the sidebar button did not bring the chapter list back")
    return problems



# ----------------------------------------------------------------------------- a menu and a slider keep each other's choice
BOTH_CONTROLS_JS = """
return Array.from(document.querySelectorAll('.plotly-graph-div')).filter(g => {
    const l = g.layout || {}, s = l.sliders && l.sliders[0], m = l.updatemenus && l.updatemenus[0];
    return s && m && s.steps.length > 1 && m.buttons.length > 1 && g.querySelector('.slider-container')
        && g.querySelector('.updatemenu-header');
}).map(g => g.id);
"""
# what a figure shows: its slider's step, its menu's entry, and the visible traces' names and numbers
FIGURE_VIEW_JS = """
const g = document.getElementById(arguments[0]);
const nums = v => (v && typeof v === 'object' && v.length !== undefined) ? Array.from(v).flat(2) : [v];
const shown = g._fullData.filter(t => t.visible === true).map(t => [String(t.name),
    [].concat(nums(t.x), nums(t.y), nums(t.z), [t.x0, t.dx]).map(v => typeof v === 'number' ? v : String(v)),
    nums(t.text).map(String)]);
return {slider: g.layout.sliders[0].active || 0, menu: g.layout.updatemenus[0].active || 0,
        steps: g.layout.sliders[0].steps.length, options: g.layout.updatemenus[0].buttons.length,
        name: ((g.layout.title && g.layout.title.text) || g.id).replace(/<br>/g, ' ').slice(0, 50), shown: shown};
"""


def same_view(a: list, b: list, rtol: float = 1e-5) -> bool:
    """Whether two lists of drawn traces (:data:`FIGURE_VIEW_JS`) show the same names, texts and numbers (to float32's
    precision: a figure's data is written as 32-bit floats, a menu's as 7 significant digits)."""
    if len(a) != len(b):
        return False
    for (name_a, nums_a, text_a), (name_b, nums_b, text_b) in zip(a, b):
        if name_a != name_b or text_a != text_b or len(nums_a) != len(nums_b):
            return False
        for x, y in zip(nums_a, nums_b):
            if isinstance(x, (int, float)) and isinstance(y, (int, float)):
                if abs(x - y) > rtol * max(abs(x), abs(y), 1e-30):
                    return False
            elif x != y:
                return False
    return True


# where to press for a slider's step k (its tick, at the height of the rail) or for the menu's header
SLIDER_STEP_AT_JS = """
const g = document.getElementById(arguments[0]);
const ticks = g.querySelectorAll('.slider-container .slider-tick-rect'), rail = g.querySelector('.slider-rail-rect');
rail.scrollIntoView({block: 'center'});
const t = ticks[arguments[1]].getBoundingClientRect(), r = rail.getBoundingClientRect();
return {x: t.left + t.width / 2, y: r.top + r.height / 2};
"""
MENU_AT_JS = """
const g = document.getElementById(arguments[0]);
const head = g.querySelector('.updatemenu-header');
if (arguments[1] === null) {
    g.scrollIntoView({block: 'start'});
    const r = head.getBoundingClientRect();
    return {x: r.left + r.width / 2, y: r.top + r.height / 2};
}
const items = Array.from(g.querySelectorAll('.updatemenu-dropdown-button')).filter(b => b.getBoundingClientRect().width > 0);
if (items.length <= arguments[1]) return null;
const r = items[arguments[1]].getBoundingClientRect();
return {x: r.left + r.width / 2, y: r.top + r.height / 2};
"""


def _view(driver, gid: str) -> dict:
    return driver.execute_script(FIGURE_VIEW_JS, gid)


def _to_step(driver, gid: str, k: int, touch: bool) -> None:
    at = driver.execute_script(SLIDER_STEP_AT_JS, gid, k)
    press(driver, at["x"], at["y"], touch)
    until(lambda: _view(driver, gid)["slider"] == k, timeout=2.0)


def _to_option(driver, gid: str, i: int, touch: bool) -> bool:
    head = driver.execute_script(MENU_AT_JS, gid, None)
    press(driver, head["x"], head["y"], touch)
    item = until(lambda: driver.execute_script(MENU_AT_JS, gid, i), timeout=2.0)
    if item is None:
        press(driver, head["x"], head["y"], touch)
        return False
    press(driver, item["x"], item["y"], touch)
    until(lambda: _view(driver, gid)["menu"] == i, timeout=2.0)
    time.sleep(0.1)  # a restyle that moved the slider would have done so by now
    return True


def choice_problems(driver, touch: bool = False) -> list[str]:
    """Issue 53: in every figure with a slider and a menu, worked with real clicks (``touch``: taps), choosing one
    keeps what the other chose.  The slider is moved off its first step, then another menu entry chosen: the slider
    stays where it was, the figure changes, and it shows what the same two choices made in the other order show (the
    slider moved away and back).  A menu that put the slider back to its first step stopped a student comparing the
    schemes at the same step."""
    problems = []
    for gid in driver.execute_script(BOTH_CONTROLS_JS):
        start = _view(driver, gid)
        name, s0, m0 = start["name"], start["slider"], start["menu"]
        k = start["steps"] - 1 if s0 != start["steps"] - 1 else 0
        other = (m0 + 1) % start["options"]
        _to_step(driver, gid, k, touch)
        at_k = _view(driver, gid)
        if at_k["slider"] != k:
            problems.append(f"{name}: a {'tap' if touch else 'click'} on its slider's step {k} left it at {at_k['slider']}")
            continue
        if not _to_option(driver, gid, other, touch):
            problems.append(f"{name}: its menu's entries did not open")
            continue
        chosen = _view(driver, gid)
        if chosen["menu"] != other:
            problems.append(f"{name}: choosing entry {other} of its menu left it at {chosen['menu']}")
            continue
        if chosen["slider"] != k:
            problems.append(f"{name}: choosing another entry of its menu moved its slider from step {k} to "
                            f"{chosen['slider']}")
            continue
        if same_view(chosen["shown"], at_k["shown"]):
            problems.append(f"{name}: choosing another entry of its menu changed nothing drawn")
        _to_step(driver, gid, s0, touch)
        _to_step(driver, gid, k, touch)
        again = _view(driver, gid)
        if again["menu"] != other:
            problems.append(f"{name}: moving its slider changed its menu's entry from {other} to {again['menu']}")
        elif not same_view(again["shown"], chosen["shown"]):
            problems.append(f"{name}: entry {other} at step {k} shows other data when chosen after the step than before it")
    return problems



# ----------------------------------------------------------------------------- labels a reader must be able to read
# per figure: the category axes' categories and the labels drawn for them; the log axes' tick labels and the values
# they stand for; the bars' value labels and the markers drawn over the plot (page pixels)
FIGURE_LABELS_JS = """
function box(el) {
    const r = el.getBoundingClientRect();
    return (r.width > 0 && r.height > 0) ? {l: r.left, r: r.right, t: r.top, b: r.bottom} : null;
}
function drawn(el) {
    const c = getComputedStyle(el);
    return c.visibility !== 'hidden' && c.display !== 'none' && c.opacity !== '0' && c.fillOpacity !== '0'
        && c.fill !== 'rgba(0, 0, 0, 0)';
}
return Array.from(document.querySelectorAll('.plotly-graph-div')).filter(g => g._fullLayout).map(g => {
    const fl = g._fullLayout, axes = [];
    g.querySelectorAll('.subplot').forEach(sub => {
        const ids = (sub.getAttribute('class').match(/\\b(x\\d*)(y\\d*)\\b/) || []).slice(1);
        ids.forEach(id => {
            const ax = fl[id.charAt(0) + 'axis' + id.slice(1)];
            if (!ax || !ax.visible || ax.showticklabels === false) return;
            const layer = sub.querySelector('.' + id.charAt(0) + 'axislayer-above');
            const ticks = layer ? Array.from(layer.querySelectorAll('.' + id.charAt(0) + 'tick text')).filter(drawn)
                .filter(t => box(t) && t.textContent.trim()) : [];
            axes.push({id: id, type: ax.type, categories: ax.type === 'category' ? (ax._categories || []).length : 0,
                       labels: ticks.map(t => ({text: (t.__data__ && t.__data__.text) || t.textContent,
                                                 value: t.__data__ ? t.__data__.x : null, box: box(t)}))});
        });
    });
    const svg = g.querySelector('svg.main-svg');
    return {name: ((g.layout.title && g.layout.title.text) || g.id).replace(/<br>/g, ' ').slice(0, 50),
            frame: svg ? box(svg) : null,
            axes: axes.filter((a, i) => axes.findIndex(b => b.id === a.id) === i),
            values: Array.from(g.querySelectorAll('.bars .point text, text.bartext')).filter(drawn).map(box).filter(b => b),
            markers: Array.from(g.querySelectorAll('.scatterlayer .points path.point')).filter(drawn).map(box).filter(b => b)};
});
"""

_SUPERSCRIPTS = str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")
_SI = {"k": 1e3, "M": 1e6, "G": 1e9, "m": 1e-3, "µ": 1e-6, "μ": 1e-6, "n": 1e-9, "p": 1e-12}


def tick_number(text: str) -> float | None:
    """The number a tick label says: ``0.01``, ``20``, ``10⁻³``, ``2×10⁻⁴``, ``10<sup>−3</sup>``, ``1e-3``, ``5k``;
    ``None`` for a label that does not read as a number."""
    import re

    t = re.sub(r"<sup>(.*?)</sup>", lambda m: "^" + m.group(1), text.strip()).replace("−", "-").replace("\u2212", "-")
    t = t.translate(_SUPERSCRIPTS) if "^" in t else re.sub(r"10([-⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)$",
                                                          lambda m: "10^" + m.group(1).translate(_SUPERSCRIPTS), t)
    m = re.fullmatch(r"(?:([-+]?[\d.]+)\s*[×x·]\s*)?10\^([-+]?\d+)", t)
    if m:
        return (float(m.group(1)) if m.group(1) else 1.0) * 10.0 ** int(m.group(2))
    m = re.fullmatch(r"([-+]?[\d.]+(?:e[-+]?\d+)?)\s*([kMGmµμnp]?)", t.replace(",", ""))
    if m:
        try:
            return float(m.group(1)) * _SI.get(m.group(2), 1.0)
        except ValueError:
            return None
    return None


def _overlap(a: dict, b: dict, tol: float = 1.0) -> bool:
    return min(a["r"], b["r"]) - max(a["l"], b["l"]) > tol and min(a["b"], b["b"]) - max(a["t"], b["t"]) > tol


def label_problems(figures: list[dict]) -> list[str]:
    """Issue 53, from :data:`FIGURE_LABELS_JS`: a category axis that labels fewer categories than it has (plotly
    thins crowded ones: "float32 ... weights in 8 bits ... fp16"), a tick label outside its figure, a log axis's
    label that does not say the number it stands for (plotly's digits "8 9" for 0.8 and 0.9, "2" for 20), and a bar's
    value label running into another ("0.8240.820") or under a marker."""
    problems = []
    for f in figures:
        name = f"figure {f['name']!r}"
        frame = f["frame"]
        for ax in f["axes"]:
            labels = ax["labels"]
            if ax["type"] == "category" and ax["categories"] and len(labels) < ax["categories"]:
                problems.append(f"{name}: {len(labels)} of the {ax['categories']} categories of its {ax['id'][0]} axis "
                                "labelled")
            if frame and any(l["box"]["l"] < frame["l"] - 1 or l["box"]["r"] > frame["r"] + 1 for l in labels):
                problems.append(f"{name}: a tick label of its {ax['id'][0]} axis runs off the figure")
            if ax["type"] == "log":
                wrong = [l["text"] for l in labels if l["value"] is not None and not (
                    (n := tick_number(l["text"])) is not None and abs(n - 10 ** l["value"]) <= 1e-3 * 10 ** l["value"])]
                if wrong:
                    problems.append(f"{name}: log-axis labels that do not say their numbers: {wrong[:6]}")
        values = f["values"]
        if any(_overlap(a, b) for i, a in enumerate(values) for b in values[i + 1:]):
            problems.append(f"{name}: bar value labels run into each other")
        if any(_overlap(v, m, 2.0) for v in values for m in f["markers"]):
            problems.append(f"{name}: a bar's value label lies under a marker")
    return problems



# ----------------------------------------------------------------------------- a table's key columns on a phone
# the cells of the columns a table exists for (rich_table's key, class cnet-key) that a reader cannot see without
# scrolling the table's box sideways (or that lie outside the text column)
TABLE_KEYS_JS = """
const col = (document.querySelector('article') || document.body).getBoundingClientRect();
const out = [];
document.querySelectorAll('.cnet-rich table').forEach(t => {
    const keys = Array.from(t.querySelectorAll('th.cnet-key, td.cnet-key'));
    if (!keys.length) return;
    const box = t.closest('.cnet-scroll') || t.parentElement;
    box.scrollLeft = 0;
    const b = box.getBoundingClientRect();
    const right = Math.min(b.right, col.right), left = Math.max(b.left, col.left);
    const hidden = keys.filter(c => {
        const r = c.getBoundingClientRect();
        return r.width > 0 && (r.right > right + 1 || r.left < left - 1);
    });
    if (hidden.length) {
        const names = Array.from(new Set(hidden.map(c => c.tagName === 'TH' ? c.textContent.trim()
                                                                      : (c.getAttribute('data-label') || '')))).slice(0, 3);
        out.push('a table\\'s key column (' + names.join(', ') + ') needs a sideways swipe: '
                 + t.textContent.trim().replace(/\\s+/g, ' ').slice(0, 50));
    }
});
return out;
"""
