"""A clear way in: the reading order the introduction announces is the table of contents, and every
chapter opens with a card (what it assumes, what the reader will learn, how long it takes to read and to
run) generated from one table whose running times are measured (``benchmarks/bench_book.py``)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cnet_lib.book import chapter_cards as CC
from cnet_lib.book.notebook_cells import cell_source, read_notebook
from cnet_lib.book.project import colab_badge
from cnet_lib.book.toc import toc_files, toc_notebooks

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def test_the_intro_announces_the_pages_in_the_order_of_the_toc():
    """The paragraph of the introduction that starts "Start with" names every page after it, in toc order."""
    intro = (ROOT / "book" / "intro.md").read_text(encoding="utf-8")
    start = intro.index("Start with")
    paragraph = intro[start:intro.index("\n\n", start)]
    announced = re.findall(r"\{doc\}`(\w+)`", paragraph)
    pages = [Path(p).name for p in toc_files(ROOT)[1:]]
    assert announced == pages, f"the intro announces {announced}, _toc.yml lists {pages}"
    assert toc_files(ROOT)[1] == "book/how_to_use", "the first page after the intro is How this book works"


@pytest.mark.parametrize("nb", toc_notebooks(ROOT), ids=lambda p: p.stem)
def test_every_chapter_opens_with_its_card(nb):
    cell = cell_source(read_notebook(nb)["cells"][0])
    card = CC.card_markdown(nb.stem, read_notebook(nb))
    assert f"{colab_badge(nb.name)}\n\n{card}\n" in cell
    for part in ("**Assumes:**", "**You will learn:**", "**Reading:** about", "**Running:**"):
        assert part in card
    minutes = CC.reading_minutes(read_notebook(nb))
    assert minutes % 5 == 0 and f"about {minutes} min" in card


def test_running_times_come_from_the_measured_builds():
    """The cards' and book_plan's times are the ones benchmarks/bench_book.py measured (its JSON files)."""
    for preset, build in CC.BUILDS.items():
        path = RESULTS / f"bench_book-{preset}.json"
        assert path.is_file(), f"{path} is missing: run python benchmarks/bench_book.py {preset}"
        measured = json.loads(path.read_text(encoding="utf-8"))
        assert build["build_seconds"] == measured["build_seconds"], preset
        assert build["date"] == measured["date"]
        if build["seconds"]:
            assert build["seconds"] == measured["chapter_seconds"], preset
        assert build.get("not_executed", []) == measured.get("not_executed", []), preset
        assert f"{measured['machine']['cpu_count']}-core" in build["machine"], preset
    chapters = {nb.stem for nb in toc_notebooks(ROOT)}
    skipped = set(CC.CPU_BUILD.get("not_executed", []))
    assert set(CC.CPU_BUILD["seconds"]) | skipped == chapters and not set(CC.CPU_BUILD["seconds"]) & skipped, \
        "every chapter has a measured cpu running time, or is listed as not executed in the measured build"
    nbs = {nb.stem: read_notebook(nb) for nb in toc_notebooks(ROOT)}
    for name in skipped:  # a chapter left out of the measurement says so on its card
        assert "`cpu` preset: not measured" in CC.card_markdown(name, nbs[name])


def test_the_card_says_what_was_not_measured(monkeypatch):
    nb = {"cells": [{"cell_type": "markdown", "source": " ".join(["word"] * 1500)},
                    {"cell_type": "code", "source": "x = 1\n" * 30, "metadata": {"tags": ["exercise"]}}]}
    cards = {"demo": CC.Card(assumes="nothing.", learn="a demo.", image_models=True)}
    card = CC.card_markdown("demo", nb, cards)
    assert CC.reading_minutes(nb) == 15  # 1500 words / 150 + 30 lines / 15 = 12 min, rounded up to 15
    assert "about 15 min, with 1 exercise." in card
    assert "`cpu` preset: not measured" in card and "`gpu` preset: not measured" in card
    assert ("loads that preset's shipped image models" in card) == ("gpu" in CC.shipping_presets())
    monkeypatch.setattr(CC, "shipping_presets", lambda: ["cpu"])
    assert "trains the two image models" in CC.card_markdown("demo", nb, cards)
    monkeypatch.setattr(CC, "shipping_presets", lambda: ["cpu", "gpu"])
    assert "use_shipped=False" in CC.card_markdown("demo", nb, cards)
    with pytest.raises(KeyError, match="add Card"):
        CC.card_markdown("other", nb, cards)
    text = "# Demo\n\nBADGE\n\nIntro."
    once = CC.with_card(text, "BADGE", card)
    assert CC.with_card(once, "BADGE", card) == once and CC.without_card(once).replace("\n\n\n", "\n\n") == text


def test_gpu_times_come_from_the_gpu_session():
    """The chapters timed on a GPU are those of scripts/gpu_session.py's chapter log, in the ``gpu`` preset."""
    path = RESULTS / "gpu_chapters-gpu-check.json"
    assert path.is_file(), f"{path} is missing: run scripts/gpu_session.sh on a GPU"
    chapters = json.loads(path.read_text(encoding="utf-8"))["chapters"]
    measured = {name: c["seconds"] for name, c in chapters.items() if c["preset"] == "gpu" and c["status"] == "passed"}
    assert CC.GPU_RUN["seconds"] == measured
    session = json.loads((RESULTS / "gpu_session-gpu-check.json").read_text(encoding="utf-8"))
    assert CC.GPU_RUN["machine"].split()[-1] in session["machine"]["device_name"]


def test_gpu_preset_times_on_a_cpu_come_from_their_run():
    """The pendulum chapters' gpu preset, timed on a CPU alone (scripts/run_chapters.py --pendulum-preset gpu):
    the card quotes that file and says that what it times runs on the CPU."""
    path = RESULTS / "gpu_preset_chapters-cpu.json"
    assert path.is_file(), f"{path} is missing: python scripts/run_chapters.py {path} gpu --pendulum-preset gpu"
    chapters = json.loads(path.read_text(encoding="utf-8"))["chapters"]
    measured = {name: c["seconds"] for name, c in chapters.items() if c["preset"] == "gpu" and c["status"] == "passed"}
    assert CC.GPU_PRESET_ON_CPU["seconds"] == measured and measured
    bench = json.loads((RESULTS / "adaptive_pendulum-gpu.json").read_text(encoding="utf-8"))
    assert bench["preset"] == "gpu" and CC.GPU_PRESET_ON_CPU["parts"]["adaptive"][1] == bench["total_seconds"]
    assert bench["machine"]["cpu_count"] == 2 == json.loads(path.read_text(encoding="utf-8"))["machine"]["cpu_count"]
    nb = {"cells": [{"cell_type": "markdown", "source": "# T", "metadata": {}}]}
    for name in [*measured, *CC.GPU_PRESET_ON_CPU["parts"]]:
        assert CC.ON_CPU in CC.card_markdown(name, nb)


def test_the_choice_between_shipped_and_trained_models_is_stated_where_it_is_made():
    """The setup cell says which image models the preset uses and how to choose the other way; the first
    image chapter makes the choice in its code (use_shipped=...) and says so beside it."""
    from cnet_lib.book.notebook import preset_lines
    from cnet_lib.images.runs.image_presets import expected_training
    from cnet_lib.images.runs.shipped import shipping_presets

    shipping = shipping_presets()
    assert "cpu" in shipping
    for preset in ("cpu", "gpu", "paper"):
        for cuda, colab in ((False, False), (True, False), (False, True), (True, True)):
            said = "\n".join(preset_lines(preset, cuda, colab))
            if preset in shipping:
                assert "models that ship with the book" in said and "use_shipped=False" in said
            else:
                assert "train their own models" in said and f"CNET_PRESET={shipping[0]}" in said
            assert expected_training(preset) in said
    assert "their numbers mean nothing" in "\n".join(preset_lines("smoke", False, False))
    first = next(nb for nb in toc_notebooks(ROOT) if CC.CARDS[nb.stem].image_models)
    cells = read_notebook(first)["cells"]
    at = next(i for i, c in enumerate(cells) if c["cell_type"] == "code" and "images.trained_runs(" in cell_source(c))
    assert "use_shipped=True" in cell_source(cells[at]) and "use_shipped=False" in cell_source(cells[at])
    assert "The choice is yours, here." in cell_source(cells[at - 1])
