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
    in Chrome's emulation of a phone (a 390 px screen at 3 device pixels per px, touch): the slider follows it."""
    ids = driver.execute_script("return Array.from(document.querySelectorAll('.plotly-graph-div')).filter(g => "
                                "g.querySelector('.slider-grip-rect') && g.layout.sliders[0].steps.length > 1).map(g => g.id)")
    if not ids:
        return []
    problems = []
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": PHONE[0], "height": PHONE[1],
                                                                   "deviceScaleFactor": 3, "mobile": True})
    driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 1})
    try:
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
    finally:
        driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": False})
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    return problems
