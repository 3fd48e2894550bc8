"""The checks of the built book's text (tests/book_text.py) see what issue 44 found, and pass a plain paragraph.

Each phrase family of its lists catches the phrase the issue quoted; a deferral next to its number passes; the
reader's own command line (``%env CNET_PRESET=cpu``) passes; the reference pages are held to hashes and machines only.
"""
from __future__ import annotations

import pytest
from book_text import (ALLOWED, DEFERRALS, MACHINERY, blocks, chapter_pages, deferrals, machinery, module_names,
    page_problems)

SEEN = [  # (kind, text): issue 44's examples, from the published book
    ("deferral", "Whether an error-controlled solver tells a continuous model from a discrete one is answered above."),
    ("deferral", "Which tensors it rounds must be said; the size table says what it saves, the verdict the rest."),
    ("deferral", "and the sentence under the table compares it with the ideal, taking the spread of the rounds into account."),
    ("deferral", "see the figure below for what the models do."),
    ("environment variable", "they are stored under the runs folder: CNET_RUNS_DIR, default ~/.cache/cnet_lib/runs."),
    ("file path", "they are stored under the runs folder, default ~/.cache/cnet_lib/runs."),
    ("file path", "Caption: the recipe's run (benchmarks/results/gpu_recipe-h200-e40.json)."),
    ("hash", "with a hash of the run's configuration in the folder name"),
    ("hash", "the studies are cached beside the checkpoints, keyed by a hash of both checkpoint files."),
    ("module name", "the device is chosen in the code (run_loading.study_device)."),
    ("module name", "The runs are listed in cnet_lib.images.IMAGE_PRESETS."),
    ("benchmark script", "whole runs were compared too, by bench_refinement.py."),
    ("commit hash", "One primary test, fixed in the code (commit 88cac11) before its numbers were computed."),
    ("how the machines were obtained", "the GPU machines lent to this project have one GPU each."),
    ("how the machines were obtained", "On the machines the book was developed on (Firecracker VMs, root)."),
]


@pytest.mark.parametrize("kind, text", SEEN)
def test_the_checks_see_what_issue_44_found(kind, text):
    if kind == "deferral":
        assert deferrals(text), text
    else:
        assert kind in {k for k, _ in machinery(text)}, (kind, text, machinery(text))


def test_a_deferral_beside_its_number_and_plain_prose_pass():
    assert deferrals("the sentence under the table compares it with the ideal 1.45×") == []
    assert deferrals("The speed-up is 1.39× against the ideal 1.45×.") == []
    plain = ("In the book's run, halving the step multiplies the Euler-trained model's error by 1,540; RK4 (classic) "
             "and the 3/8 rule, rk4_38, have order 4 on an H100 and on a 2-core CPU. Run images.trained_runs(ctx.settings).")
    assert deferrals(plain) == [] and machinery(plain) == []
    assert machinery("run %env CNET_PRESET=cpu, then this cell again") == []  # the reader's command (ALLOWED)
    assert machinery("after four milestones of 0.1 the rate is 1.0000000000000004e-05") == []
    assert machinery("RK4 (classic), N_t = 5*/4/5* and 8/16/32 in the table") == []


def test_reference_pages_are_held_to_hashes_and_machines_only():
    page = ("<article><p>The cache is keyed by a hash of the checkpoint, in ~/.cache/cnet_lib/runs "
            "(cnet_lib.studies.runner).</p><p>A clean clone of 996482a.</p></article>")
    assert [p.split(":")[0] for p in page_problems(page, chapter=False)] == ["commit hash"]
    assert len(page_problems(page, chapter=True)) >= 4


def test_code_is_not_read_but_outputs_are():
    page = ('<article><div class="cell_input"><pre>x = CNET_RUNS_DIR</pre></div><div class="cell_output">'
            '<div class="output"><pre>stored in ~/.cache/cnet_lib/runs/gpu-rk4</pre></div></div><p>Plain.</p></article>')
    assert blocks(page) == ["stored in ~/.cache/cnet_lib/runs/gpu-rk4", "Plain."]


def test_the_lists_are_the_extension_points():
    """The phrase lists are plain lists and dicts: a new phrase is one more entry, its example one more row above."""
    assert isinstance(DEFERRALS, list) and isinstance(ALLOWED, list) and all(isinstance(v, list) for v in MACHINERY.values())
    assert "run_loading" in module_names() and "trained_runs" not in module_names()
    assert chapter_pages()[0] == "book/intro" and "book/how_to_use" in chapter_pages()
