"""Tables as tables, verdicts as sentences (issue 20): the library's tables and worded results are plain
text when printed and HTML that wraps to the page when displayed; figures take a phone layout when
drawn narrow; titles are broken to fit a phone; progress bars of one cell leave one line."""
from __future__ import annotations

import pickle

import plotly.graph_objects as go
import pytest

from cnet_lib.draw.html_figures import phone_script, phone_updates
from cnet_lib.draw.plotting import LEGEND_BELOW, line, slider_figure
from cnet_lib.runtime.files import shown_path
from cnet_lib.runtime.rich_text import minus_sign, p_value, sci
from cnet_lib.runtime.rich_text import format_table
from cnet_lib.draw import html_figures as HF
from cnet_lib.runtime import rich_text as RT


def test_a_table_has_two_faces():
    rows = [dict(model="RK4-trained (refined)", acc=0.725, d=-0.15), dict(model="Euler", acc=0.7095, d=None)]
    t = format_table(rows, [("model", "model", "{}"), ("accuracy", "acc", "{:.4f}"), ("B − A", "d", "{:+.2f}")],
                     note="points on 2000 images")
    assert isinstance(t, str) and isinstance(t, RT.Rich)
    text = str(t)
    assert text.splitlines()[1].startswith("---") and text.splitlines()[-1] == "points on 2000 images"
    assert repr(t) == text and t.text == text and "<" not in text, "printed and repr'd: the text, not a quoted string"
    html = t._repr_html_()
    assert html.startswith("<style>") and '<table class="cnet-table' in html
    assert '<td class="cnet-num" data-label="accuracy">0.7250</td>' in html
    assert '<td data-label="model">RK4-trained (refined)</td>' in html, "text columns wrap, numbers do not"
    assert '<p class="cnet-note">points on 2000 images</p>' in html and "<td class=\"cnet-num\" data-label=\"B − A\">-</td>" in html
    assert pickle.loads(pickle.dumps(t)).html == html


def test_wide_tables_scroll_in_their_own_box_on_a_phone_and_no_word_breaks():
    """Issue 30: on a phone, wide tables had become 38-43 screens of one block per row; at 1280 px words broke in the
    middle ("sche|me", "rk4_c|lassic"). A wide table now scrolls sideways in its own box below NARROW_PX, its first
    column pinned, and cells wrap at spaces only."""
    narrow = format_table([dict(a=1, b=2)], [("a", "a", "{}"), ("b", "b", "{}")])
    wide = format_table([dict(a="x" * 30, b="y" * 30)], [("first column", "a", "{}"), ("second column", "b", "{}")])
    assert 'class="cnet-table"' in narrow.html and "cnet-wide" in wide.html and 'class="cnet-scroll"' in wide.html
    assert f"@media (max-width:{RT.NARROW_PX}px)" in RT.STYLE and "overflow-x:auto" in RT.STYLE
    assert "position:sticky" in RT.STYLE and "overflow-wrap:anywhere" not in RT.STYLE and "word-break:normal" in RT.STYLE


def test_a_table_marks_its_key_columns_and_may_stack_on_a_phone():
    """Issue 53: the columns a table exists for are marked (the browser test checks that a phone shows them without a
    swipe), a wide table's text cells wrap at spaces on a phone (a column of sentences was 2,080 px wide), and a table
    of sentences can become a block per row there."""
    rows = [dict(claim="a sentence of the paper " * 3, verdict="holds", found="what the book measured " * 4)]
    cols = [("the paper says", "claim", "{}"), ("verdict", "verdict", "{}"), ("the book measured", "found", "{}")]
    t = format_table(rows, cols, key=("verdict",), cards=True)
    assert '<th class="cnet-key">verdict</th>' in t.html and '<td class="cnet-key" data-label="verdict">holds</td>' in t.html
    assert 'class="cnet-table cnet-wide cnet-cards"' in t.html and "table.cnet-cards thead{display:none}" in RT.STYLE
    assert "content:attr(data-label)" in RT.STYLE and "td:not(.cnet-num){white-space:normal" in RT.STYLE
    plain = format_table(rows, cols).html_body
    assert "cnet-cards" not in plain and "cnet-key" not in plain
    assert str(t) == str(format_table(rows, cols)), "the printed face is the same"
    with pytest.raises(ValueError, match="key names columns"):
        format_table(rows, cols, key=("accuracy",))


def test_numeric_columns_are_recognised():
    rows = [["θ̂ in 4 bits", "PRIMARY", "-0.15", "+0.50", "[-0.43, +1.43]", "1.3e-05", "3.46x", "72.5%", "469,904", "—"]]
    assert RT.numeric_columns(rows) == [False, False, True, True, True, True, True, True, True, False]


def test_verdicts_are_paragraphs_and_reports_join():
    p = RT.paragraphs(["Both models are measured on the same 2000 test images.", "VERDICT (primary test): inconclusive."],
                      width=30)
    assert max(len(ln) for ln in str(p).splitlines()) <= 30 and str(p).count("\n  ") >= 1
    assert '<p class="cnet-conclusion"><strong>VERDICT (primary test):</strong> inconclusive.</p>' in p.html
    report = RT.join_rich(["head line", RT.heading("RK4 run"), format_table([dict(a=1)], [("a", "a", "{}")]), "", p],
                          sep="\n")
    assert str(report).startswith("head line\nRK4 run\na") and report.html_body.count("<p>") >= 2
    assert "<p><strong>RK4 run</strong></p>" in report.html and report.html.count("<table") == 1
    assert "&lt;b&gt;" in RT.as_rich("<b>not html</b>").html, "text is escaped"


def test_titles_are_broken_to_fit_a_phone():
    long = "One trained θ(t), many graphs: accuracy against N_t and the inference scheme"
    wrapped = HF.wrap_title(long)
    assert "<br>" in wrapped and all(len(part) <= HF.TITLE_CHARS for part in wrapped.split("<br>"))
    assert HF.wrap_title("Training loss") == "Training loss" and HF.wrap_title("a<br>b" + "c" * 60) == "a<br>b" + "c" * 60
    fig = HF.below_modebar(go.Figure(layout=dict(title=long, margin=dict(t=60))))
    lines = fig.layout.title.text.count("<br>")
    assert fig.layout.margin.t == 60 + HF.MODEBAR_PX + lines * HF.TITLE_LINE_PX
    assert lines and fig.layout.title.pad.t == HF.MODEBAR_PX + HF.TITLE_LINES_RISE_PX, "every title starts where one line does"
    assert HF.below_modebar(fig).to_dict() == fig.to_dict(), "a figure placed already stays as it is"
    grown = HF.below_modebar(go.Figure(layout=dict(title=long, height=300, margin=dict(t=60))), grow=True)
    assert grown.layout.height == 300 + HF.MODEBAR_PX + lines * HF.TITLE_LINE_PX, "an app's plot keeps its height"
    # issue 57: titles broke inside phrases ("error at t = 2 is / 9.49e-05"); they break at a phrase's end first
    assert HF.wrap_title("Explicit Euler, N_t = 4: error at t = 2 is 9.49e-05") == \
        "Explicit Euler, N_t = 4:<br>error at t = 2 is 9.49e-05"
    for title in ("RK4-trained (refined): rk4_38, N_t = 2: accuracy 0.125 ± 0.115 (first 32 of 128 images); "
                  "all 128 images follow within 2 s; predicted classes of the first 12",
                  "Δt = 0.05, N_t = 200: E(t = 10) = 1.23e-02 (precomputed)",
                  "a<br><sup>clean 0.725 ± 0.020 (1000 images, from the cached robustness study); perturbed 0.700 ± 0.030</sup>"):
        lines = HF.wrap_title(title).split("<br>")
        assert all(len(ln.replace("<sup>", "").replace("</sup>", "")) <= HF.TITLE_CHARS for ln in lines), lines
        assert " ".join(ln.replace("<sup>", "").replace("</sup>", "") for ln in lines).replace("  ", " ") == \
            title.replace("<br>", " ").replace("<sup>", "").replace("</sup>", ""), "no word lost"
        for ln in lines:
            plain = ln.replace("<sup>", "").replace("</sup>", "")
            assert not plain.endswith((" =", " ±", " is", " of")) and not plain.startswith(("= ", "± ")), lines
            assert ln.count("<sup>") == ln.count("</sup>"), "a line set in <sup> is closed on each line"


def test_phone_layout_moves_the_legend_and_quiets_crowded_sliders():
    labels = [f"epoch {i}, M={2 ** (i // 2)} (refined)" for i in range(7)]
    fig = slider_figure({lab: [line([0, 1], [0, i], name=f"θ(0, {i}, 1, 1)")] for i, lab in enumerate(labels)},
                        title="θ(t)", xaxis_title="t")
    up = phone_updates(fig)
    assert up["legend.orientation"] == "h" and up["legend.yref"] == "container" and up["legend.maxheight"] >= 1000
    assert up["height"] > fig.layout.height  # the slider's drop; the legend's rows are added as drawn (the script)
    assert up["sliders[0].font.color"] == "rgba(0,0,0,0)" and up["sliders[0].currentvalue.font.color"] == "#444"
    assert up["sliders[0].pad.t"] > fig.layout.sliders[0].pad.t
    assert up["sliders[0].pad.l"] == up["sliders[0].pad.r"] < fig.layout.sliders[0].pad.l  # the rail spans the figure
    script = phone_script(up)
    assert "{plot_id}" in script and f"offsetWidth<{520}" in script and "Plotly.relayout" in script
    # issue 44: the legend's rows are measured once drawn and the figure (and its box on the page) grows by them
    assert ".legend > .bg" in script and f"'margin.b':{up['margin.b']}+r" in script and "p.style.height" in script
    below = go.Figure([line([0, 1], [0, 1], name="a")], layout=dict(legend=LEGEND_BELOW, height=480, margin=dict(b=110)))
    moved = phone_updates(below)  # rows under the plot ran past the figure's bottom on a phone: they move too
    assert moved["legend.yref"] == "container" and moved["height"] < 480 and moved["margin.b"] < 110
    placed = go.Figure([line([0, 1], [0, 1], name="a")], layout=dict(legend=dict(yref="container", y=0)))
    assert phone_updates(placed) == {} and phone_script({}) == ""
    assert "Plotly.relayout" in HF.figure_html(fig) and "Plotly.relayout" not in HF.figure_html(placed)


def test_every_trace_type_goes_through_the_books_renderer():
    """Issue 57: the manifestation app's figure, a ``go.Image`` mosaic, stopped in the book's renderer (the phone
    layout read ``showlegend``, which an image trace does not have) and the app showed a traceback instead. Every
    trace type plotly has goes through the renderer as a notebook hands it a figure (a dict), named or not, and only
    a trace that plotly shows in a legend moves it."""
    from plotly.basedatatypes import BaseTraceType

    kinds = [c for c in (getattr(go, n) for n in dir(go)) if isinstance(c, type) and issubclass(c, BaseTraceType)]
    assert {go.Image, go.Heatmap, go.Bar, go.Scatter} <= set(kinds) and len(kinds) > 40
    renderer = HF.book_renderer()
    for kind in kinds:
        trace = kind(name="a") if "name" in kind() else kind()
        for legend in (dict(), LEGEND_BELOW):
            fig = go.Figure(trace, layout=dict(title="t", legend=legend))
            html = renderer.to_mimebundle(fig.to_dict())["text/html"]
            assert "Plotly.newPlot" in html, kind.__name__
    image = go.Figure(go.Image(z=[[[0, 0, 0]]], name="mosaic"), layout=dict(legend=LEGEND_BELOW))
    heat = go.Figure(go.Heatmap(z=[[0, 1]], name="h"), layout=dict(legend=LEGEND_BELOW))
    assert phone_updates(image) == {} and phone_updates(heat) == {}, "no legend entry: the legend stays where it is"
    assert "legend.yref" in phone_updates(go.Figure(go.Heatmap(z=[[0, 1]], name="h", showlegend=True),
                                                    layout=dict(legend=LEGEND_BELOW)))


def test_figures_are_written_lean():
    """Issue 44: a page's figures were most of its HTML; their numbers go as 32-bit floats where float32 holds them,
    their template only what the book's figures use."""
    import json
    import re

    import numpy as np

    x = np.linspace(0, 1, 2001)
    fig = go.Figure([go.Scatter(x=x, y=np.exp(-x) * 1e-6, name="a"), go.Scatter(x=[0, 1], y=[1e-40, 1.0], name="tiny")],
                    layout=dict(template="plotly_white", title="t"))
    html = HF.figure_html(fig)
    data = json.loads(re.search(r'Plotly\.newPlot\(\s*"[^"]+",\s*(\[.*?\]),\s*\{', html, re.S).group(1))
    assert "x" not in data[0] and data[0]["x0"] == 0 and data[0]["dx"] > 0  # an even grid: its start and step
    assert data[0]["y"]["dtype"] == "f4" and len(__import__("base64").b64decode(data[0]["y"]["bdata"])) // 4 <= HF.MAX_LINE_POINTS + 1
    grid = np.arange(2001, dtype=np.float32) * np.float32(0.005)  # a float32 grid: even to float32's precision
    kept = HF.lean(go.Figure(go.Scatter(x=grid, y=grid, mode="lines"))).data[0]
    assert kept.x is None and kept.dx == pytest.approx(0.005 * 2000 / (len(kept.y) - 1), rel=1e-5)
    uneven = HF.lean(go.Figure(go.Scatter(x=np.sqrt(np.arange(1000.0)), y=np.arange(1000.0), mode="lines"))).data[0]
    assert uneven.x.dtype == np.float32 and uneven.x[-1] == pytest.approx(np.sqrt(999.0))  # float32, the last kept
    assert data[1]["y"] == [1e-40, 1.0]  # too small for float32 (it would be 0 on a log axis): kept as it is
    assert len(html) < 0.6 * len(__import__("plotly.io").io.to_html(fig, include_plotlyjs=False, full_html=False))
    # a notebook's renderer is handed the figure as a dict with typed arrays ({"dtype": "f8", "bdata": ...})
    assert len(HF.figure_html(fig.to_dict())) == len(html)
    template = HF.lean(go.Figure(fig)).layout.template.to_plotly_json()
    assert set(template["layout"]) <= set(HF.TEMPLATE_LAYOUT) and set(template["data"]) <= set(HF.TEMPLATE_DATA)
    assert template["layout"]["colorway"] == list(__import__("plotly.io").io.templates["plotly_white"].layout.colorway)


def test_messages_show_no_machine_paths(tmp_path):
    import tempfile
    from pathlib import Path

    assert shown_path(Path.home() / ".cache" / "cnet_lib" / "runs") == "~/.cache/cnet_lib/runs"
    assert shown_path(Path(tempfile.gettempdir()) / "cnet_lib-0" / "x") == "<tmp>/cnet_lib-0/x"
    assert shown_path("relative/path") == "relative/path"


def test_progress_bars_of_one_cell_leave_one_line():
    from cnet_lib.book.notebook import bars_summary

    assert bars_summary([("ODE-Net(euler)", 3000)]) == "ODE-Net(euler): 3000 steps (a live progress bar in Jupyter and Colab)"
    six = [("ODE-Net(midpoint)", 3000), ("ODE-Net(rk4_38)", 3000)] * 3
    assert bars_summary(six) == ("6 live progress bars in Jupyter and Colab: ODE-Net(midpoint): 3000 steps (×3); "
                                 "ODE-Net(rk4_38): 3000 steps (×3)")


def test_prose_numbers_take_a_real_minus_sign_and_words_keep_their_hyphens():
    assert minus_sign("-0.38 points, [-0.68, -0.08]; +0.42") == "\u22120.38 points, [\u22120.68, \u22120.08]; +0.42"
    assert minus_sign("channels 8-16-32, held-out images, x-1") == "channels 8-16-32, held-out images, x-1"


def test_prose_prints_small_numbers_with_a_power_of_ten_and_p_values_as_a_paper_does():
    assert sci(3.42e-05) == "3.4\u00a0\u00d7\u00a010\u207b\u2075" and sci(3.42e-05, 2) == "3.42\u00a0\u00d7\u00a010\u207b\u2075"
    assert sci(2.5e-11) == "2.5\u00a0\u00d7\u00a010\u207b\u00b9\u00b9" and sci(12345.0) == "1.2\u00a0\u00d7\u00a010\u2074"
    assert sci(-0.127, 2) == "\u22121.27\u00a0\u00d7\u00a010\u207b\u00b9" and sci(1.5) == "1.5"
    assert sci(0.0) == "0" and sci(1e-05, None) == "10\u207b\u2075" and sci(2.5e-3, None) == "2.5\u00a0\u00d7\u00a010\u207b\u00b3" and sci(9.96e-06) == "1.0\u00a0\u00d7\u00a010\u207b\u2075"
    assert p_value(0.0321) == "p = 0.032" and p_value(0.001) == "p = 0.001"
    assert p_value(6.4e-05, "Holm p") == "Holm p < 0.001" and p_value(1.6e-15) == "p < 0.001"
    assert p_value(6.4e-05, None) == "< 0.001" and p_value(0.0321, None) == "0.032"
