"""A clear way in: the reading order the introduction announces is the table of contents, and every
chapter opens with a card (what it assumes, what the reader will learn, how long it takes to read and to
run) generated from one table whose running times are measured (``benchmarks/bench_book.py``)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cnet_lib.book.notebook_cells import cell_source, read_notebook
from cnet_lib.book.project import PUBLISHED_PRESET, colab_badge, toc_files, toc_notebooks
from cnet_lib.runtime.progress import duration
from cnet_lib.book import chapter_cards as CC, measurements as M

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
    for part in ("**Assumes:**", "**You will learn:**", "**Time:** about", "**Running:** open it in Colab"):
        assert part in card
    minutes = CC.reading_minutes(read_notebook(nb))
    assert minutes % 5 == 0 and f"{minutes} min to read" in card
    assert "*Runtime → Run all*" in card, "the way in: open in Colab, Run all (issue 30)"


@pytest.mark.parametrize("nb", toc_notebooks(ROOT), ids=lambda p: p.stem)
def test_a_cards_minutes_cover_its_exercises(nb):
    """A card never promises less time than its exercises take by the catalogue's estimates (issue 30: "about 15 min
    with 3 exercises" while the exercises alone are 40 min), and its total is reading plus exercises."""
    from cnet_lib.book.exercises.catalogue import CATALOGUE

    card = CC.card_markdown(nb.stem, read_notebook(nb))
    exercises = sum(row.minutes for row in CATALOGUE if row.chapter == nb.stem)
    total = int(re.search(r"\*\*Time:\*\* about (\d+) min", card).group(1))
    assert total >= exercises and total == CC.reading_minutes(read_notebook(nb)) + exercises, card
    if exercises:
        assert f"about {exercises} min for its" in card


def test_the_card_is_short_and_names_the_way_in():
    """The card is four lines; it names the way in first and no preset table (issue 30: seven lines of presets on
    the adaptive chapter): the presets are on How this book works and Measurements."""
    for nb in toc_notebooks(ROOT):
        card = CC.card_markdown(nb.stem, read_notebook(nb))
        lines = card.splitlines()[1:-1]
        assert len(lines) == 4, (nb.stem, lines)
        running = lines[-1]
        assert running.index("Colab") < running.index("Run all takes") if "Run all takes" in running else True
        assert "preset" not in running.split("Run all takes")[-1], (nb.stem, "no build detail in the measured time")
        assert "`cpu` preset" not in running and "T4" not in running and "one after another" not in running, nb.stem


def test_running_times_come_from_the_measured_builds():
    """The cards read their times from benchmarks/bench_book.py's file for the published preset (nothing is copied):
    every chapter's card quotes the time its build measured, on the machine it names."""
    builds = M.book_builds(ROOT)
    for preset, build in builds.items():
        measured = json.loads((RESULTS / f"bench_book-{preset}.json").read_text(encoding="utf-8"))
        assert build["build_seconds"] == measured["build_seconds"] and build["seconds"] == measured["chapter_seconds"]
        assert f"{measured['machine']['cpu_count']}-core" in build["machine"], preset
    published = builds[CC.PUBLISHED_PRESET]
    chapters = {nb.stem for nb in toc_notebooks(ROOT)}
    assert set(published["seconds"]) == chapters and not published["not_executed"], \
        "every chapter has a measured running time in the published preset's build"
    nbs = {nb.stem: read_notebook(nb) for nb in toc_notebooks(ROOT)}
    for name in chapters:
        card = CC.card_markdown(name, nbs[name])
        assert f"Run all takes {duration(published['seconds'][name])} on {published['machine']}" in card, name


def test_the_card_says_only_what_was_measured():
    nb = {"cells": [{"cell_type": "markdown", "source": " ".join(["word"] * 1500)},
                    {"cell_type": "code", "source": "x = 1\n" * 30, "metadata": {"tags": ["exercise"]}}]}
    cards = {"demo": CC.Card(assumes="nothing.", learn="a demo.", image_models=True)}
    card = CC.card_markdown("demo", nb, cards)
    assert CC.reading_minutes(nb) == 15  # 1500 words / 150 + 30 lines / 15 = 12 min, rounded up to 15
    assert "15 min to read" in card and "Run all takes" not in card, "no measured build of this chapter: no time quoted"
    assert "use_shipped=False" in card
    with pytest.raises(KeyError, match="add Card"):
        CC.card_markdown("other", nb, cards)
    text = "# Demo\n\nBADGE\n\nIntro."
    once = CC.with_card(text, "BADGE", card)
    assert CC.with_card(once, "BADGE", card) == once and CC.without_card(once).replace("\n\n\n", "\n\n") == text


def test_gpu_times_come_from_their_measurement():
    """The chapters timed on a GPU are those of benchmarks/results/gpu_chapters.json, on the machine it names; their
    cards quote them."""
    measured = json.loads((RESULTS / "gpu_chapters.json").read_text(encoding="utf-8"))
    gpu = M.gpu_chapters(ROOT)
    assert gpu["seconds"] == measured["chapter_seconds"] and gpu["seconds"]
    assert gpu["machine"].split()[-1] in measured["machine"]["device_name"]
    nbs = {nb.stem: read_notebook(nb) for nb in toc_notebooks(ROOT)}
    for name, seconds in gpu["seconds"].items():
        assert f"at most {duration(seconds)} on {gpu['machine']}" in CC.card_markdown(name, nbs[name]), name


def test_the_choice_between_shipped_and_trained_models_is_stated_where_it_is_made():
    """The setup cell says only what every chapter uses (issue 44: the pendulum chapters repeated the image models'
    H100 and T4 times): the preset, its sizes in a few words and how to switch to the published one, no word of the
    image models; the first image chapter makes the choice of its models in its code (use_shipped=...) and says so
    beside it."""
    from cnet_lib.book.notebook import preset_lines

    for preset in ("smoke", "cpu", "gpu", "paper"):
        for cuda, colab in ((False, False), (True, False), (False, True), (True, True)):
            said = "\n".join(preset_lines(preset, cuda, colab))
            assert said.startswith(f"preset: {preset} (") and len(said.splitlines()) <= 2, said
            assert not any(w in said for w in ("image", "H100", "T4", "use_shipped", "ship")), said
            assert (f"%env CNET_PRESET={PUBLISHED_PRESET}, then run this cell again" in said) == (preset != PUBLISHED_PRESET)
    assert "their numbers mean nothing" in "\n".join(preset_lines("smoke", False, False))
    assert "Runtime > Change runtime type > GPU" in "\n".join(preset_lines("cpu", False, True))
    first = next(nb for nb in toc_notebooks(ROOT) if CC.CARDS[nb.stem].image_models)
    cells = read_notebook(first)["cells"]
    at = next(i for i, c in enumerate(cells) if c["cell_type"] == "code" and "images.trained_runs(" in cell_source(c))
    assert "use_shipped=True" in cell_source(cells[at]) and "use_shipped=False" in cell_source(cells[at])
    assert "The choice is yours, here." in cell_source(cells[at - 1])
