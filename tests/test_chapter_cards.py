"""A clear way in: the reading order the introduction announces is the table of contents, and every
chapter opens with a card (what it assumes, what the reader will learn, how long it takes to read and to
run) generated from one table whose running times are measured (``benchmarks/bench_book.py``)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cnet_lib.book import chapter_cards as CC
from cnet_lib.book import measurements as M
from cnet_lib.book.notebook_cells import cell_source, read_notebook
from cnet_lib.book.project import colab_badge
from cnet_lib.book.toc import toc_files, toc_notebooks
from cnet_lib.runtime.progress import duration

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
    """The cards read their times from benchmarks/bench_book.py's files (nothing is copied): every chapter's card
    quotes the cpu time its build measured, or says it was not measured."""
    builds = M.book_builds(ROOT)
    for preset, build in builds.items():
        measured = json.loads((RESULTS / f"bench_book-{preset}.json").read_text(encoding="utf-8"))
        assert build["build_seconds"] == measured["build_seconds"] and build["seconds"] == measured["chapter_seconds"]
        assert f"{measured['machine']['cpu_count']}-core" in build["machine"], preset
    cpu = builds["cpu"]
    chapters = {nb.stem for nb in toc_notebooks(ROOT)}
    skipped = set(cpu["not_executed"])
    assert set(cpu["seconds"]) | skipped == chapters and not set(cpu["seconds"]) & skipped, \
        "every chapter has a measured cpu running time, or is listed as not executed in the measured build"
    nbs = {nb.stem: read_notebook(nb) for nb in toc_notebooks(ROOT)}
    for name in chapters:
        card = CC.card_markdown(name, nbs[name])
        said = "`cpu` preset: not measured" if name in skipped else f"{duration(cpu['seconds'][name])} in the `cpu` preset"
        assert said in card and f"measured on {cpu['machine']}" in card or name in skipped, name


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
    """The chapters timed on a GPU are those of scripts/gpu_session.py's chapter log, in the ``gpu`` preset, on
    the machine its session file names; their cards quote them."""
    chapters = json.loads((RESULTS / "gpu_chapters-gpu-check.json").read_text(encoding="utf-8"))["chapters"]
    measured = {name: c["seconds"] for name, c in chapters.items() if c["preset"] == "gpu" and c["status"] == "passed"}
    gpu = M.gpu_chapters(ROOT)
    assert gpu["seconds"] == measured and measured
    session = json.loads((RESULTS / "gpu_session-gpu-check.json").read_text(encoding="utf-8"))
    assert gpu["machine"].split()[-1] in session["machine"]["device_name"]
    nbs = {nb.stem: read_notebook(nb) for nb in toc_notebooks(ROOT)}
    for name, seconds in measured.items():
        assert f"at most {duration(seconds)} in the `gpu` preset" in CC.card_markdown(name, nbs[name]), name


def test_gpu_preset_times_on_a_cpu_come_from_their_run():
    """The pendulum chapters' gpu preset, timed on a CPU alone (scripts/run_chapters.py --pendulum-preset gpu):
    the card quotes that file and says that what it times runs on the CPU."""
    path = RESULTS / "gpu_preset_chapters-cpu.json"
    chapters = json.loads(path.read_text(encoding="utf-8"))["chapters"]
    measured = {name: c["seconds"] for name, c in chapters.items() if c["preset"] == "gpu" and c["status"] == "passed"}
    on_cpu = M.gpu_preset_on_cpu(ROOT)
    assert on_cpu["seconds"] == measured and measured
    bench = json.loads((RESULTS / "adaptive_pendulum-gpu.json").read_text(encoding="utf-8"))
    assert bench["preset"] == "gpu" and on_cpu["parts"]["adaptive"][1] == bench["total_seconds"]
    assert bench["machine"]["cpu_count"] == 2 == json.loads(path.read_text(encoding="utf-8"))["machine"]["cpu_count"]
    nb = {"cells": [{"cell_type": "markdown", "source": "# T", "metadata": {}}]}
    for name in [*measured, *on_cpu["parts"]]:
        assert CC.ON_CPU in CC.card_markdown(name, nb)


def test_the_pendulum_training_times_on_the_cards_come_from_their_runs():
    """Every benchmarks/bench_pendulum_batched.py record of the gpu preset (the batched training as the chapters run
    it: with CUDA graphs on a GPU) is read by measurements.pendulum_training and quoted on the pendulum cards."""
    files = sorted(RESULTS.glob("pendulum_batched-gpu-*.json"))
    assert files, f"no {RESULTS}/pendulum_batched-gpu-cpu.json: python benchmarks/bench_pendulum_batched.py --preset gpu"
    t = M.pendulum_training()
    runs = {r["device"]: r for r in t["runs"]}
    assert len(runs) == len(files)
    nb = {"cells": [{"cell_type": "markdown", "source": "# T", "metadata": {}}]}
    for path in files:
        record = json.loads(path.read_text(encoding="utf-8"))
        device = record["device"].split(":")[0]
        assert record["preset"] == t["preset"] and not record["dry_run"] and len(record["jobs"]) == t["models"]
        full = record["full_preset_seconds"]
        assert runs[device]["batched"] == full["batched_graph" if device == "cuda" else "batched"]
        assert runs[device]["one_after_another"] == full["train_odenet"]
        for name, card in CC.CARDS.items():
            text = CC.card_markdown(name, nb)
            quoted = (f"{duration(runs[device]['batched'])} on" in text
                      and f"{duration(runs[device]['one_after_another'])} one after another" in text)
            assert quoted == card.pendulum_models, name
    for name, card in CC.CARDS.items():
        assert ("all of a study's ODE-Nets train at once" in CC.card_markdown(name, nb)) == card.pendulum_models


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
