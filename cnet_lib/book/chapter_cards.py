"""The card at the top of every chapter: what it assumes, what the reader will learn, how long it takes to
read and to run.

One table, :data:`CARDS` (by chapter name), says what each chapter assumes and teaches; the times are not
typed into the chapters:

* **time** is computed from the chapter itself (:func:`reading_minutes`): its prose at
  :data:`WORDS_PER_MINUTE` words and its code at :data:`CODE_LINES_PER_MINUTE` lines a minute, rounded up
  to 5 minutes, plus the minutes of its exercises by the catalogue's estimates (:func:`exercise_minutes`), so
  the card never promises less time than its exercises take;
* **running** says the way in first (Colab, *Run all*), then the chapter's execution time in the measured build
  of the published preset (:data:`cnet_lib.book.project.PUBLISHED_PRESET`), read from
  ``benchmarks/results/bench_book-<preset>.json`` (written by ``benchmarks/bench_book.py``;
  :func:`cnet_lib.book.measurements.book_builds`), and on a GPU where measured
  (:func:`cnet_lib.book.measurements.gpu_chapters`).  The other presets and what training costs are on the
  book's pages *How this book works* and *Measurements*, not on every card.  Nothing is copied: the card changes
  when a measurement is written again (``python -m cnet_lib notebook_tools fix`` writes it, ``check`` fails a
  stale one).

``python -m cnet_lib notebook_tools fix`` writes the card into the chapter's first cell, between
:data:`CARD_START` and :data:`CARD_END` (HTML comments: invisible in Jupyter, Colab and the book), right
after the Colab badge; ``notebook_tools check`` fails a chapter whose card is missing or stale.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Mapping, Optional

from ..runtime.progress import duration
from .exercises.catalogue import CATALOGUE
from .measurements import book_builds, gpu_chapters
from .notebook_cells import EXERCISE_TAG, cell_source, cell_tags
from .project import PUBLISHED_PRESET

__all__ = ["Card", "CARDS", "WORDS_PER_MINUTE", "exercise_minutes",
           "CODE_LINES_PER_MINUTE", "CARD_START", "CARD_END", "reading_minutes", "card_markdown", "without_card",
           "with_card", "COLAB_WAY_IN", "COPY_WAY_IN"]

COLAB_WAY_IN = "open it in Colab (the badge above)"
"""How a card says to open the chapter; a student copy, which has no badge, says :data:`COPY_WAY_IN`."""
COPY_WAY_IN = "open it in Colab (File → Upload notebook)"

WORDS_PER_MINUTE = 150
"""Reading speed for the chapters' prose (technical text with formulas)."""
CODE_LINES_PER_MINUTE = 15
"""Reading speed for the chapters' code cells."""

CARD_START = "<!-- chapter card: written by `python -m cnet_lib notebook_tools fix` from cnet_lib/book/chapter_cards.py -->"
CARD_END = "<!-- end of the chapter card -->"


@dataclass(frozen=True)
class Card:
    """What a chapter assumes (``assumes``), what the reader will learn (``learn``), and whether it uses
    the two trained image models (``image_models``: the card says how to train them instead) or the pendulum's
    trained ODE-Nets (``pendulum_models``: the card says that they ship, and that no GPU is needed)."""

    assumes: str
    learn: str
    image_models: bool = False
    pendulum_models: bool = False


CARDS: dict[str, Card] = {
    "how_to_use": Card(
        assumes="Python and a little calculus; nothing about neural networks or numerical methods.",
        learn="how every chapter works: presets, figures with sliders, live apps, exercises with checks, "
              "and the order of convergence of an integrator, on a one-line differential equation."),
    "pendulum_integrators": Card(
        assumes="*How this book works*; derivatives and Taylor series; no numerical analysis.",
        learn="what a Runge–Kutta integrator and its Butcher tableau are, how the global error falls with the "
              "step Δt, and how to read a scheme's order off a log–log plot, on the pendulum's exact solution."),
    "resnet_euler": Card(
        assumes="*Numerical integrators* (order, Butcher tableaux); what training a small network by gradient "
                "descent means.",
        learn="whether a trained residual network is an integrator: the dip of the Euler-trained ODE-Net, the "
              "modified rate it learns, swapping schemes between trained models, and what limits them.",
        pendulum_models=True),
    "continuousnet": Card(
        assumes="*Is a ResNet a forward-Euler integrator?*; convolutional networks and ResNets in outline.",
        learn="how a ContinuousNet's weights θ(t) are a function of depth, why its Euler, N_t = M graph is a "
              "ResNet, and where the stages of other graphs read θ(t).", image_models=True),
    "refinement_training": Card(
        assumes="*ContinuousNet*; SGD with momentum.",
        learn="how refinement (M → 2M, N_t → 2N_t) keeps θ(t) exactly, how the two image models were trained, "
              "what refinement saves in training time, measured fairly against its ideal, and what a confidence "
              "interval for a difference of two accuracies says.",
        image_models=True),
    "manifestation_invariance": Card(
        assumes="*Refinement training*; accuracy on a test set and its sampling error.",
        learn="whether a trained model keeps its accuracy on other graphs (schemes, N_t, compressed θ), whether the "
              "integrator or refinement decides it, and how to judge that over several trained models: a confidence "
              "interval for a difference of means, Welch's test with the training seed as the unit, Holm's "
              "correction for several tests at once, and the power that sets how many seeds a question needs.",
        image_models=True),
    "robustness": Card(
        assumes="*Manifestation invariance*; accuracy on a test set and its sampling error.",
        learn="how to test a robustness claim (weight noise, quantization, input noise) with the statistics it needs: "
              "a paired confidence interval for a difference of drops and McNemar's test, one primary test fixed in "
              "advance, Holm's correction for the secondary tests, the Monte-Carlo error of random draws, and "
              "Welch's t-test over training seeds.", image_models=True),
    "adaptive": Card(
        assumes="*Numerical integrators* (Butcher tableaux, order) and *Is a ResNet a forward-Euler integrator?* (the "
                "pendulum's ODE-Nets); accuracy on a test set.",
        learn="how an embedded Runge–Kutta pair controls its own steps, why no step may cross a jump of θ(t), and "
              "whether an error-controlled solver tells a continuous model from a discrete one, on the pendulum's "
              "ODE-Nets and the two image models (a paired 95% interval for a difference of accuracies).",
        image_models=True,
        pendulum_models=True),
}
"""Every chapter of ``_toc.yml`` has a card (``tests/test_chapter_cards.py`` checks it)."""

def reading_minutes(nb: Mapping) -> int:
    """Minutes to read a chapter: its markdown words (the card left out) / :data:`WORDS_PER_MINUTE` plus
    its code lines / :data:`CODE_LINES_PER_MINUTE`, rounded up to a multiple of 5."""
    words = lines = 0
    for cell in nb["cells"]:
        text = cell_source(cell)
        if cell.get("cell_type") == "markdown":
            words += len(re.findall(r"\S+", without_card(text)))
        elif cell.get("cell_type") == "code":
            lines += sum(1 for ln in text.splitlines() if ln.strip())
    minutes = words / WORDS_PER_MINUTE + lines / CODE_LINES_PER_MINUTE
    return max(5, 5 * math.ceil(minutes / 5))


def exercise_minutes(name: str) -> int:
    """The minutes the exercises of chapter ``name`` take, by the catalogue's estimates
    (:data:`cnet_lib.book.exercises.catalogue.CATALOGUE`)."""
    return sum(row.minutes for row in CATALOGUE if row.chapter == name)


def _time(name: str, nb: Mapping) -> str:
    """The card's time: reading, the exercises (the catalogue's minutes), and their sum."""
    read, n_ex = reading_minutes(nb), sum(1 for c in nb["cells"] if EXERCISE_TAG in cell_tags(c))
    if not n_ex:
        return f"about {read} min to read."
    work = exercise_minutes(name)
    things = f"{n_ex} exercises" if n_ex != 1 else "exercise"
    return f"about {duration(60 * (read + work))} in all: {read} min to read, about {work} min for its {things}."


def _running(name: str, card: Card) -> str:
    """The card's running line: the way in (Colab, Run all), then how long the chapter ran where measured: in the
    published preset's build of the book (:func:`cnet_lib.book.measurements.book_builds`) and on a GPU."""
    builds, gpu_run = book_builds(), gpu_chapters()
    text = f"{COLAB_WAY_IN}, then *Runtime → Run all*"
    text += (": with a GPU runtime it loads the trained models that ship with the book." if card.image_models
             else "; no GPU needed." if not card.pendulum_models else
             ": it loads the trained ODE-Nets that ship with the book; no GPU needed.")
    published = builds.get(PUBLISHED_PRESET) or {}
    seconds = (published.get("seconds") or {}).get(name)
    measured = []
    if seconds is not None:
        measured.append(f"{duration(seconds)} on {published['machine']}")
    gpu = gpu_run["seconds"].get(name)
    if gpu is not None:
        measured.append(f"at most {duration(gpu)} on {gpu_run['machine']}")
    if measured:
        text += f" Run all takes {' and '.join(measured)}."
    if card.image_models:
        text += " To train the models yourself: `use_shipped=False` in *ContinuousNet*."
    return text


def card_markdown(name: str, nb: Mapping, cards: Optional[Mapping[str, Card]] = None) -> str:
    """The card of chapter ``name`` (the notebook's stem) for the notebook ``nb``, between
    :data:`CARD_START` and :data:`CARD_END`.  Raises KeyError, saying what to add, for a chapter
    without a card."""
    cards = CARDS if cards is None else cards
    if name not in cards:
        raise KeyError(f"chapter {name!r} has no card: add Card(assumes=..., learn=...) for it to CARDS in "
                       "cnet_lib/book/chapter_cards.py, then run `python -m cnet_lib notebook_tools fix`")
    card = cards[name]
    return "\n".join([
        CARD_START,
        f"**Assumes:** {card.assumes}  ",
        f"**You will learn:** {card.learn}  ",
        f"**Time:** {_time(name, nb)}  ",
        f"**Running:** {_running(name, card)}",
        CARD_END,
    ])


def without_card(text: str) -> str:
    """``text`` (a markdown cell) without its card."""
    return re.sub(re.escape(CARD_START) + r".*?" + re.escape(CARD_END) + r"\n*", "", text, flags=re.S)


def with_card(text: str, badge: str, card: str) -> str:
    """``text`` (a chapter's first cell, holding ``badge``) with ``card`` right after the badge, in place
    of any card it held."""
    text = without_card(text)
    at = text.index(badge) + len(badge)
    return text[:at] + "\n\n" + card + "\n\n" + text[at:].lstrip("\n")
