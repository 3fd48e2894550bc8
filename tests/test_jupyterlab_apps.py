"""The live apps where readers use them: JupyterLab in headless Chromium (issue 57).

A JupyterLab server on 127.0.0.1 (its own settings, workspace and runtime folders) opens a copy of the
manifestation chapter, and the test does what a reader does: *Run → Run All Cells* with the mouse, then moves
the app's N_t slider by dragging its handle and its scheme menu with the keyboard (WebDriver's actions: real
pointer and key events, as a reader's).  After each, the app's output area must show a new figure that answers
the control, and no traceback anywhere.  It also checks that the controls fit the output area (no control cut
off, no scroll bar, every slider with a track to drag), that an answer from a sample is replaced by its
refinement within the seconds its title states, and that Colab's renderer path draws the app too: the figure
as plotly's ``colab`` renderer writes it (``setup(renderer="colab")``, what the setup cell picks on Colab), whose
plotly.js comes from a CDN there and is on the page already here (the setup cell's).

The chapter runs in the smoke preset with the data folder the tests use (:func:`smoke_data.smoke_env`).  It needs
JupyterLab (``requirements.txt``) and Debian's chromium and chromium-driver (``scripts/test.sh`` installs them).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from smoke_data import smoke_env

pytestmark = pytest.mark.slow  # a JupyterLab server, a kernel and a browser

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = "manifestation_invariance"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
TOKEN = "cnet-test"
RUN_ALL_S = 300  # the smoke chapter runs in seconds; a first training of the smoke models adds some
ANSWER_S = 20  # an answer of the smoke models takes well under a second; a loaded machine gets room


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1 serving a folder with a copy of the chapter; yields its URL."""
    pytest.importorskip("jupyterlab")
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.skip("needs Debian's chromium and chromium-driver (scripts/test.sh installs them)")
    tmp = tmp_path_factory.mktemp("lab")
    work = tmp / "book"
    work.mkdir()
    shutil.copy(ROOT / "book" / f"{CHAPTER}.ipynb", work)
    settings = tmp / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)  # no news, no update check: nothing outside 127.0.0.1 is asked for
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    env = smoke_env()
    env.update(JUPYTER_CONFIG_DIR=str(tmp / "config"), JUPYTER_DATA_DIR=str(tmp / "data"),
               JUPYTER_RUNTIME_DIR=str(tmp / "runtime"), JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"))
    port = _free_port()
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
           f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={work}", "--LabApp.extension_manager=readonly",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")  # CI runs as root
    log = open(tmp / "server.log", "w")
    server = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=1)
                break
            except OSError:
                assert server.poll() is None, (tmp / "server.log").read_text()[-3000:]
                time.sleep(0.2)
        else:
            pytest.fail("JupyterLab did not start in 60 s:\n" + (tmp / "server.log").read_text()[-3000:])
        yield url
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # the server and the kernels it started
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        log.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium')}",
                 "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    yield driver
    driver.quit()


def _until(predicate, seconds: float, what):
    """``predicate()`` once it is true, polled for ``seconds``; else the test fails saying ``what`` (a string, or a
    function that gives it then)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"after {seconds:.0f} s: {what() if callable(what) else what}", pytrace=False)


TRACEBACKS = """return [...document.querySelectorAll('.jp-OutputArea-output')]
  .filter(e => /Traceback|Error displaying widget/.test(e.textContent)).map(e => e.textContent.slice(0, 1500))"""

APP = """const apps = [...document.querySelectorAll('.widget-vbox')].filter(a => a.querySelector('.widget-slider'));
return apps[apps.length - 1];"""

STATE = """const app = arguments[0];
const box = e => { const r = e.getBoundingClientRect(); return {left: r.left, right: r.right, width: r.width}; };
const plots = [...app.querySelectorAll('.js-plotly-plot')];
const area = app.closest('.jp-OutputArea-output');
return {
  figures: plots.map(p => p.id),
  title: plots.map(p => [...p.querySelectorAll('.gtitle')].map(t => {
    const lines = [...t.querySelectorAll('tspan.line')];  // a title of several lines: one tspan each
    return (lines.length ? lines.map(l => l.textContent) : [t.textContent]).join(' ');
  }).join(' ')).join(' | '),
  errors: [...app.querySelectorAll('.jp-OutputArea-output')].filter(e => /Traceback|Error/.test(e.textContent)).length,
  readouts: [...app.querySelectorAll('.widget-readout')].map(r => r.textContent),
  area: box(area), scroll: area.scrollWidth - area.clientWidth,
  controls: [...app.querySelectorAll('.widget-dropdown, .widget-slider')].map(box),
  tracks: [...app.querySelectorAll('.widget-slider .slider-container')].map(e => e.getBoundingClientRect().width),
};"""


WATCH = """window.cnetTitles = [];
const lastApp = () => {
  const apps = [...document.querySelectorAll('.widget-vbox')].filter(a => a.querySelector('.widget-slider'));
  return apps.length ? apps[apps.length - 1] : null;
};
const textOf = t => {
  const lines = [...t.querySelectorAll('tspan.line')];
  return (lines.length ? lines.map(l => l.textContent) : [t.textContent]).join(' ');
};
const note = title => {
  const seen = window.cnetTitles;
  if (title && (!seen.length || seen[seen.length - 1].title !== title)) seen.push({ms: performance.now(), title: title});
};
new MutationObserver(records => {
  const app = lastApp();
  for (const r of records) {
    if (!app || !app.contains(r.target)) continue;
    for (const n of r.addedNodes) {
      if (n.nodeType !== 1) continue;
      for (const t of (n.matches('.gtitle') ? [n] : n.querySelectorAll('.gtitle'))) note(textOf(t));
    }
  }
}).observe(document.body, {childList: true, subtree: true});
setInterval(() => { const app = lastApp(); const t = app ? app.querySelector('.gtitle') : null; if (t) note(textOf(t)); }, 20);"""
"""Notes in the page every title the last app shows, with when: every title drawn into the app (a mutation observer, so
a refinement that replaces the first answer within milliseconds, on a quiet machine, is seen with it) and the title
shown every 20 ms."""


def _state(driver, app) -> dict:
    return driver.execute_script(STATE, app)


def _console_problems(driver) -> list:
    """Console messages of the page that say something broke (a resource outside 127.0.0.1 that cannot load, such as
    the Colab badge's image, is not one)."""
    return [e["message"][:300] for e in driver.get_log("browser")
            if e["level"] == "SEVERE" and "net::ERR_NAME_NOT_RESOLVED" not in e["message"]]


def _run_cell(driver, code: str) -> None:
    """A new cell at the notebook's end, typed and run with the keyboard (Shift+Enter)."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    cells = driver.find_elements(By.CSS_SELECTOR, ".jp-Notebook .jp-Cell")
    driver.execute_script("arguments[0].scrollIntoView()", cells[-1])
    cells[-1].find_element(By.CSS_SELECTOR, ".jp-InputPrompt").click()
    ActionChains(driver).send_keys(Keys.ESCAPE).send_keys("b").send_keys(Keys.ENTER).perform()
    time.sleep(0.3)
    ActionChains(driver).send_keys(code).perform()
    ActionChains(driver).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT).perform()


def _busy(driver) -> bool:
    return driver.execute_script(
        "return [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')]"
        ".some(e => /\\[\\*\\]/.test(e.textContent))")


def _new_app(driver, before):
    """The last app of the notebook once it is another than ``before`` and shows a figure."""
    def found():
        app = driver.execute_script(APP)
        return app if app is not None and app != before and _state(driver, app)["figures"] else None
    return _until(found, RUN_ALL_S, "no new app with a figure")


def _answers(driver, app, old: dict, expect: str, what: str) -> dict:
    """The app's state once it shows a new figure whose title contains ``expect``."""
    def answered():
        now = _state(driver, app)
        return now if now["figures"] and now["figures"] != old["figures"] and expect in now["title"] else None
    now = _until(answered, ANSWER_S,
                 lambda: f"{what}: no new figure answering {expect!r} (shown: {_state(driver, app)['title']!r})")
    assert not now["errors"] and not driver.execute_script(TRACEBACKS), f"{what}: a traceback"
    return now


def test_the_manifestation_app_answers_real_events_in_jupyterlab(lab, browser):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    d = browser
    started = time.monotonic()
    d.get(f"{lab}/lab/tree/{CHAPTER}.ipynb?token={TOKEN}")
    _until(lambda: d.execute_script("return document.querySelectorAll('.jp-Notebook .jp-Cell').length > 10 && "
                                    "/Idle/.test(document.querySelector('.jp-StatusBar-Widget, #jp-main-statusbar')"
                                    ".textContent)"), 120, "the notebook did not open with an idle kernel")
    d.find_element(By.XPATH, "//li[contains(@class,'lm-MenuBar-item')][.//div[text()='Run']]").click()
    d.find_element(By.XPATH, "//li[contains(@class,'lm-Menu-item')][.//div[text()='Run All Cells']]").click()
    _until(lambda: _busy(d), 30, "Run All Cells started nothing")
    _until(lambda: not _busy(d), RUN_ALL_S, "the chapter did not finish")
    ran = time.monotonic() - started
    assert not d.execute_script(TRACEBACKS), d.execute_script(TRACEBACKS)

    app = _new_app(d, None)
    d.execute_script("arguments[0].scrollIntoView()", app)
    first = _state(d, app)
    assert len(first["figures"]) == 1 and "N_t = " in first["title"], first
    # the controls fit the output area at 1280 px: none cut off, no scroll bar, every slider with a track to drag
    assert first["scroll"] <= 1 and all(c["left"] >= first["area"]["left"] - 1 and c["right"] <= first["area"]["right"] + 1
                                        for c in first["controls"]), first
    assert first["tracks"] and min(first["tracks"]) >= 150, first["tracks"]

    # the N_t slider, dragged with the mouse to its far right: N_t at its largest
    handle = app.find_element(By.CSS_SELECTOR, ".widget-slider .noUi-handle")
    ActionChains(d).click_and_hold(handle).move_by_offset(int(first["tracks"][0]), 0).release().perform()
    n_t = _until(lambda: (lambda r: r if r.isdigit() and r != first["readouts"][0] else None)(_state(d, app)["readouts"][0]),
                 ANSWER_S, "the slider's readout did not change to a number")
    after_slider = _answers(d, app, first, f"N_t = {n_t}", "the N_t slider")

    # the scheme menu: a click opens it, the up arrow and Enter choose the option above
    menu = app.find_elements(By.CSS_SELECTOR, ".widget-dropdown select")[1]
    shown = menu.get_attribute("value")
    ActionChains(d).click(menu).pause(0.3).send_keys(Keys.ARROW_UP).send_keys(Keys.ENTER).perform()
    _until(lambda: menu.get_attribute("value") != shown, 5, "the scheme menu did not move")
    scheme = d.execute_script("return arguments[0].options[arguments[0].selectedIndex].text", menu)
    _answers(d, app, after_slider, f"{scheme}, N_t = {n_t}", "the scheme menu")

    # an answer from a sample (all 128 test images of the smoke preset, a tiny budget of arithmetic: a sample of 32)
    # is replaced by its refinement within the time it states: the page notes every title the app shows, and when
    d.execute_script(WATCH)
    _run_cell(d, "from cnet_lib.draw import progressive\nprogressive.QUICK_FLOPS['cpu'] = 1e5\n"
                 "manifestation.live_app(runs, static_fallback_fig=explorer, device=ctx.device, n_images=128)")
    sampled = _new_app(d, app)
    _until(lambda: "of the app" in _state(d, sampled)["title"], ANSWER_S, lambda: f"no refinement: {_state(d, sampled)}")
    seen = d.execute_script("return window.cnetTitles")
    firsts = [t for t in seen if "first 32 of 128 images" in t["title"]]
    finals = [t for t in seen if "all 128 images of the app" in t["title"]]
    assert firsts and finals and seen[-1] == finals[-1], seen
    stated = int(re.search(r"follow within (\d+) s", firsts[0]["title"]).group(1))
    took = (finals[0]["ms"] - firsts[0]["ms"]) / 1000
    assert took <= stated, f"the refinement came {took:.1f} s after the first answer; the app said within {stated} s"

    # Colab's renderer path: the setup cell on Colab picks plotly's "colab" renderer
    _run_cell(d, "ctx = setup(renderer='colab')\n"
                 "manifestation.live_app(runs, static_fallback_fig=explorer, device=ctx.device, sweeps=sweeps)")
    colab = _new_app(d, sampled)
    d.execute_script("arguments[0].scrollIntoView()", colab)
    before = _state(d, colab)
    handle = colab.find_element(By.CSS_SELECTOR, ".widget-slider .noUi-handle")
    ActionChains(d).click_and_hold(handle).move_by_offset(-int(before["tracks"][0]), 0).release().perform()
    _answers(d, colab, before, "N_t = 1", "the N_t slider, Colab's renderer")

    # a narrow notebook (a 700 px window with the file browser open: an output area of about 320 px) and a wide one
    # (the file browser closed): the controls wrap into rows that fit, every slider keeps a track to drag
    for width in (700, 1600):
        d.set_window_size(width, 900)
        d.execute_script("arguments[0].scrollIntoView()", colab)
        time.sleep(0.5)
        fit = _state(d, colab)
        assert fit["scroll"] <= 1 and all(c["left"] >= fit["area"]["left"] - 1 and c["right"] <= fit["area"]["right"] + 1
                                          for c in fit["controls"]), (width, fit)
        assert min(fit["tracks"]) >= 150, (width, fit["tracks"])
    d.set_window_size(1280, 900)

    problems = _console_problems(d)
    assert not problems, problems
    print(f"JupyterLab: the chapter ran in {ran:.1f} s; the whole test took {time.monotonic() - started:.1f} s")
