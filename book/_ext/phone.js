/* The book's figures and formulas on a phone (book/_ext/phone.py; what each part does is said there). */
(function () {
  "use strict";
  var MIN_STEP_PX = 24;  // slider steps closer than this get a menu beside the slider

  /* -- display formulas wider than the text column are scaled down to fit it (MathJax 3 cannot break lines) -- */
  function fitMath() {
    document.querySelectorAll('mjx-container[display="true"]').forEach(function (m) {
      m.style.fontSize = "";
      var inner = m.firstElementChild, room = m.clientWidth;
      if (!inner || !room) return;
      var need = inner.getBoundingClientRect().width;
      if (need > room + 1) m.style.fontSize = Math.floor(1000 * room / need) / 10 + "%";
    });
  }
  /* -- a formula in a line of text wider than its paragraph (or list item) is scaled down to fit it, to 70% at
        most, and scrolls in its own box beyond that (an inline formula of 425 px ran past a 358 px column) -- */
  var MIN_INLINE = 0.7;
  function fitInline() {
    document.querySelectorAll('mjx-container:not([display="true"])').forEach(function (m) {
      if (m._cnetFont === undefined) m._cnetFont = m.style.fontSize;
      m.style.fontSize = m._cnetFont;
      m.classList.remove("cnet-math-scroll");
      var block = m.parentElement && m.parentElement.closest("p, li, dd, dt, td, th, div, blockquote");
      if (!block) return;
      var c = getComputedStyle(block);
      var room = block.clientWidth - parseFloat(c.paddingLeft) - parseFloat(c.paddingRight);
      var need = m.getBoundingClientRect().width;
      if (!room || !need || need <= room + 1) return;
      var base = parseFloat(getComputedStyle(m).fontSize), scale = room / need;
      if (scale >= MIN_INLINE) {
        m.style.fontSize = Math.floor(base * scale * 10) / 10 + "px";
      } else {
        m.style.fontSize = Math.floor(base * MIN_INLINE * 10) / 10 + "px";
        m.classList.add("cnet-math-scroll");
      }
    });
  }
  function fitAllMath() { fitMath(); fitInline(); }
  var tries = 0;
  function whenTypeset() {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      MathJax.startup.promise.then(fitAllMath);
    } else if (document.querySelector("mjx-container")) {  // typeset when the book was built (static_math.py)
      fitAllMath();
      if (document.fonts) document.fonts.ready.then(fitAllMath);
    } else if (document.querySelector(".math") && tries++ < 100) {
      setTimeout(whenTypeset, 100);
    }
  }

  /* -- a plotly slider under a finger: plotly reads the pointer of mouse events only, so a touch is passed on as
        the mouse events plotly listens to (press on the slider, move and release over the figure) -- */
  function mouse(type, touch, target) {
    target.dispatchEvent(new MouseEvent(type, {bubbles: true, cancelable: true, view: window, button: 0,
                                               clientX: touch.clientX, clientY: touch.clientY}));
  }
  function touchSliders(gd) {
    if (gd._cnetTouch) return;
    gd._cnetTouch = true;
    var dragging = false;
    gd.addEventListener("touchstart", function (e) {
      var on = e.target.closest && e.target.closest(".slider-container");
      if (!on || e.touches.length !== 1) return;
      e.stopPropagation();
      e.preventDefault();
      dragging = true;
      mouse("mousedown", e.touches[0], e.target);
    }, {capture: true, passive: false});
    gd.addEventListener("touchmove", function (e) {
      if (!dragging) return;
      e.stopPropagation();
      e.preventDefault();
      mouse("mousemove", e.touches[0], gd);
    }, {capture: true, passive: false});
    function end(e) {
      if (!dragging) return;
      dragging = false;
      e.stopPropagation();
      mouse("mouseup", e.changedTouches[0], gd);
    }
    gd.addEventListener("touchend", end, {capture: true});
    gd.addEventListener("touchcancel", end, {capture: true});
  }

  /* -- a slider whose steps are too close for a finger gets a menu of its steps beside it -- */
  function goTo(gd, i) {
    var step = gd.layout.sliders[0].steps[i], set = {"sliders[0].active": i};
    var args = step.args || [];
    if (step.method === "update") return Plotly.update(gd, args[0] || {}, Object.assign({}, args[1] || {}, set));
    if (step.method === "restyle") return Plotly.restyle(gd, args[0], args[1]).then(function () { return Plotly.relayout(gd, set); });
    if (step.method === "relayout") return Plotly.relayout(gd, Object.assign({}, args[0] || {}, set));
    return Plotly.relayout(gd, set);
  }
  function stepGap(gd) {
    var s = gd.layout.sliders && gd.layout.sliders[0], rail = gd.querySelector(".slider-rail-rect");
    if (!s || !rail || s.steps.length < 2) return Infinity;
    return rail.getBoundingClientRect().width / (s.steps.length - 1);
  }
  function stepMenu(gd) {
    var box = gd.parentElement, menu = box && box.parentElement.querySelector(":scope > .cnet-steps");
    var s = gd.layout.sliders && gd.layout.sliders[0];
    if (!s || stepGap(gd) >= MIN_STEP_PX) {
      if (menu) menu.remove();
      return;
    }
    if (!menu) {
      menu = document.createElement("label");
      menu.className = "cnet-steps";
      menu.appendChild(document.createElement("span"));
      var select = document.createElement("select");
      select.addEventListener("change", function () { goTo(gd, +select.value); });
      menu.appendChild(select);
      box.insertAdjacentElement("afterend", menu);
      gd.on("plotly_sliderchange", function () { stepMenu(gd); });
      gd.on("plotly_update", function () { stepMenu(gd); });
    }
    var sel = menu.querySelector("select"), labels = s.steps.map(function (st) { return String(st.label); });
    var prefix = ((s.currentvalue && s.currentvalue.prefix) || "").replace(/[\s:=]+$/, "");
    menu.firstChild.textContent = (prefix || "step") + " ";
    sel.setAttribute("aria-label", prefix || "step");
    if (sel.options.length !== labels.length || labels.some(function (l, i) { return sel.options[i].text !== l; })) {
      sel.innerHTML = "";
      labels.forEach(function (l, i) { sel.add(new Option(l, String(i))); });
    }
    sel.value = String(s.active || 0);
  }

  /* -- a figure's box follows its height when its phone layout made it taller (plotly's HTML fixes the box's
        height, and the legend moved below the plot would run past it over the text that follows) -- */
  function fitBox(gd) {
    var box = gd.parentElement, h = gd._fullLayout && gd._fullLayout.height;
    if (box && h && box.style.height && parseFloat(box.style.height) < h) box.style.height = h + "px";
  }

  /* -- tick labels that overlap (a log axis's minor labels in a short plot, category names on a narrow one): the
        axis takes fewer ticks (a log axis over decades: powers of ten); a category axis keeps every label (each names
        a bar), first in a smaller font, then turned upright -- */
  function overlaps(boxes) {
    for (var i = 0; i < boxes.length; i++) {
      for (var j = i + 1; j < boxes.length; j++) {
        var a = boxes[i], b = boxes[j];
        if (Math.min(a.right, b.right) - Math.max(a.left, b.left) > 0 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 0) return true;
      }
    }
    return false;
  }
  function axisName(id) { return id.charAt(0) + "axis" + id.slice(1); }
  function declutter(gd) {
    var fl = gd._fullLayout, update = {}, any = false;
    if (!fl || (gd._cnetTicks || 0) >= 4) return;
    gd.querySelectorAll(".subplot").forEach(function (sub) {
      var ids = (sub.getAttribute("class").match(/\b(x\d*)(y\d*)\b/) || []).slice(1);
      ids.forEach(function (id) {
        var ax = fl[axisName(id)];
        if (!ax || !ax.visible || ax.showticklabels === false) return;
        var layer = sub.querySelector("." + id.charAt(0) + "axislayer-above");
        var labels = layer ? Array.from(layer.querySelectorAll("." + id.charAt(0) + "tick text")).map(function (t) {
          return t.getBoundingClientRect();
        }).filter(function (r) { return r.width > 0; }) : [];
        if (labels.length < 2 || !overlaps(labels)) return;
        var name = axisName(id);
        if (ax.type === "category") {
          if ((ax.tickfont.size || 12) > 9) update[name + ".tickfont.size"] = (ax.tickfont.size || 12) - 1;
          else if (ax.tickangle !== 90 && ax.tickangle !== -90) { update[name + ".tickangle"] = -90; update[name + ".automargin"] = true; }
          else return;
        } else if (ax.type === "log") {  // a log axis: 2 and 5 of each decade, then its powers of ten, then fewer
          update[name + ".dtick"] = ax.dtick === "D1" ? "D2" : typeof ax.dtick === "number" ? 2 * ax.dtick : 1;
        } else {
          update[name + ".nticks"] = Math.max(2, Math.floor(labels.length / 2));
        }
        any = true;
      });
    });
    if (any) {
      gd._cnetTicks = (gd._cnetTicks || 0) + 1;
      Plotly.relayout(gd, update);
    }
  }

  /* -- a slider's step labels that run off the figure or into each other are hidden (the current value names the
        step shown) and the rail takes the room their padding kept (the figure's phone layout does this where it can
        tell in advance, cnet_lib/draw/html_figures.py) -- */
  function quietSlider(gd) {
    var svg = gd.querySelector("svg.main-svg"), s = gd.layout.sliders && gd.layout.sliders[0];
    if (!svg || !s || gd._cnetQuiet) return;
    var f = svg.getBoundingClientRect(), labels = Array.from(gd.querySelectorAll(".slider-label")).filter(function (t) {
      var c = getComputedStyle(t);
      return c.fill !== "rgba(0, 0, 0, 0)" && c.fillOpacity !== "0";
    }).map(function (t) { return t.getBoundingClientRect(); }).filter(function (r) { return r.width > 0; });
    var out = labels.some(function (r) { return r.left < f.left - 1 || r.right > f.right + 1; });
    if (!out && !overlaps(labels)) return;
    gd._cnetQuiet = true;
    Plotly.relayout(gd, {"sliders[0].font.color": "rgba(0,0,0,0)", "sliders[0].currentvalue.font.color": "#444",
                         "sliders[0].pad.l": 10, "sliders[0].pad.r": 10});
  }

  function figure(gd) {
    if (!gd.on || !window.Plotly) return;
    touchSliders(gd);
    stepMenu(gd);
    fitBox(gd);
    declutter(gd);
    quietSlider(gd);
    if (!gd._cnetPhone) {
      gd._cnetPhone = true;
      gd.on("plotly_afterplot", function () { fitBox(gd); declutter(gd); quietSlider(gd); });
      gd.on("plotly_relayout", function () { fitBox(gd); stepMenu(gd); });
    }
  }
  function figures() {
    document.querySelectorAll(".plotly-graph-div").forEach(function (gd) {
      if (gd._fullLayout) figure(gd);
    });
  }

  /* -- the chapter list (☰) and the page's contents: pydata-sphinx-theme (0.17.1) and sphinx-book-theme (1.3.0) bind
        their handlers to the first .primary-toggle and .secondary-toggle of the page, the site header's, which the
        book theme hides; the buttons a reader sees, in the article's header, had none.  A click (a tap) on one of those
        is handed to the first, whose handlers open the sidebar as a dialog on a narrow screen and collapse the primary
        sidebar on a wide one (a tap outside the dialog closes it).  A page without contents (no sections) has no
        secondary sidebar, and its button, which did nothing, is hidden -- */
  function navButtons() {
    [[".primary-toggle", "pst-primary-sidebar"], [".secondary-toggle", "pst-secondary-sidebar"]].forEach(function (pair) {
      var sel = pair[0], all = document.querySelectorAll(sel), first = all[0];
      if (!document.getElementById(pair[1])) {
        Array.prototype.forEach.call(all, function (b) { b.style.display = "none"; });
        return;
      }
      Array.prototype.slice.call(all, 1).forEach(function (b) {
        if (b._cnetNav) return;
        b._cnetNav = true;
        b.addEventListener("click", function (e) {
          e.preventDefault();
          e.stopPropagation();
          first.click();
        });
      });
    });
  }

  function start() {
    navButtons();
    whenTypeset();
    figures();
    // figures draw asynchronously: look again as they appear
    var n = 0, t = setInterval(function () { figures(); if (++n > 40) clearInterval(t); }, 250);
    var again;
    window.addEventListener("resize", function () {
      clearTimeout(again);
      again = setTimeout(function () {
        fitAllMath();
        document.querySelectorAll(".plotly-graph-div").forEach(function (gd) { gd._cnetTicks = 0; });
        figures();
      }, 150);
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
