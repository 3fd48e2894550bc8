"""The prose states what the published book measured, and every number it states is the computed one.

The chapters' prose says what the book's run shows, with its numbers ("halving the step multiplies the
Euler-trained model's error by 1,540"), instead of sending the reader to "the sentences under the table".  The
published book is built in one preset (:data:`cnet_lib.book.project.PUBLISHED_PRESET`) from what ships with it,
so those numbers are known before the build: ``tests/published_numbers.py`` computes them the way the chapters
do.  Two checks hold the prose to them:

* every fragment of :data:`CLAIMS`, its placeholders filled with the computed numbers, is in the page's prose, so
  a stated number that no longer matches its computation fails;
* every number the prose states (decimals, percentages, numbers with thousands separators or an exponent, outside
  formulas, code and the paper's section, figure and table numbers) lies inside one of those fragments or is one of the page's :data:`CONSTANTS` (settings and
  definitions, not results), so no result can be typed without a check.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import published_numbers as P
from cnet_lib.book.chapter_cards import without_card
from cnet_lib.book.notebook_cells import cell_source, read_notebook

pytestmark = pytest.mark.slow  # rolls the shipped ODE-Nets out (a few seconds) and reads the shipped studies

ROOT = Path(__file__).resolve().parents[1]

CLAIMS: dict[str, list[str]] = {
    "book/intro": [
        "{paper_params} million parameters, the whole training set, and reports test accuracies of {paper_euler}% for "
        "the Euler-trained, ResNet-like network and {paper_rk4}% for the RK4-trained one",
        "{params} parameters, {epochs} epochs, three training seeds per method",
        "Those models reach {acc_rk4}% (RK4) and {acc_euler}% (Euler), {below_rk4} and {below_euler} points below the "
        "paper, and a wider probe (widths 64-128-256, {probe_epochs} epochs) reaches {probe_rk4}% and {probe_euler}%",
        "measured on {n_test} images held out",
        "the Euler-trained models lose at worst {seeds_euler_lo} to {seeds_euler_hi} points over the three training "
        "seeds and the RK4-trained ones {seeds_rk4_lo} to {seeds_rk4_hi}",
        "in\none seed ({seeds_euler_lo} points) the Euler-trained model keeps its accuracy by the book's 2-point "
        "threshold",
        "rounding every weight to 4 bits costs the Euler model {w4_diff} points more than the RK4 model",
        "four models of integrator × refinement ({fx_seeds} seeds\neach) the integrator carries more of the difference "
        "({fx_integrator} points against {fx_refinement}; {fx_seeds} seeds establish neither factor)",
    ],
    "book/robustness": [
        "4 bits costs the RK4-trained model {rob_a} points and the Euler-trained model {rob_b}, a difference of "
        "{rob_diff} points with a 95% interval of [{rob_lo}, {rob_hi}]",
        "the drops are {over_a} and {over_b} points on average, difference {over_diff}, interval [{over_lo}, {over_hi}]",
        "costs the Euler model {w4_diff} points more than the RK4 model (Holm p = {w4_holm}), while over the three seeds "
        "that difference is {w4s_diff} points with an interval of [{w4s_lo}, {w4s_hi}]",
        "the first {live_images} in the `gpu` preset, where the study used all {sweep_n}",
        "weight noise of σ = 0.3 costs the RK4-trained models {wn3_a} points and the Euler-trained ones {wn3_b}, and "
        "input noise of τ = 0.3 costs them {in3_a} and {in3_b} points",
        "Every weight in 4 bits stores the book's model in {bytes_w4} bytes instead of {bytes_f32}",
    ],
    "book/manifestation_invariance": [
        "removing them costs the RK4-trained model {gap_rk4} points and the Euler-trained model {gap_euler}",
        "the Euler-trained model of training seed 0 loses up to {drop_euler} points and the RK4-trained model at most "
        "{drop_rk4}",
        "the Euler-trained models lose {seeds_euler_lo} to {seeds_euler_hi} points on their valid graphs "
        "({seeds_euler_mean} on average) and the RK4-trained models {seeds_rk4_lo} to {seeds_rk4_hi}",
        "(Welch's 95% interval [{seeds_ci_lo}, {seeds_ci_hi}] points, p = {seeds_p})",
        "cost the Euler-trained models far more, {x_euler_lo} to {x_euler_hi} points, and the RK4-trained ones "
        "{x_rk4_lo} to {x_rk4_hi}",
        "reported the contrast on seed 0 ({x_euler_seed0} points at $N_t = 6$)",
        "From its best instance ({paper_best}%) the paper's 11-11-11 graph costs {paper_same11_loss} points and its "
        "6-6-6 graph {paper_same6_loss}",
        "the same weights on three steps of the 3/8 rule cost {same3_38} points on average over the three seeds, on two "
        "steps {same2_38} (classic RK4: {same2_c}), and one step is another function altogether ({same1_38} points)",
        "keeps {proj2_acc}% on average ({proj2_delta} points) with {comp2_params} parameters instead of {params}; on "
        "training seed 0 the Euler-trained model compressed the same way falls to {euler_comp2_acc}%",
        "fewer steps cost much ({eu3} points at $N_t = 3$ on average, {eu2} at $N_t = 2$), more steps little ({eu8} "
        "points at $N_t = 8$, {eu16} at $N_t = 16$)",
        "({paper_as_euler}%, at 32 steps per block;",
        "lose {rke4} points on Euler at their trained $N_t = 4$, {rke8} at $N_t = 8$ and {rke16} at $N_t = 16$",
        "the first {live_images} in the `gpu` preset, where the sweep used all {sweep_n}",
        "the Euler-trained models lose {seeds_euler_lo} to {seeds_euler_hi} points on their valid graphs and the "
        "RK4-trained ones {seeds_rk4_lo} to {seeds_rk4_hi}: the paper's direction in every seed, but three seeds per "
        "method do not establish the difference (p = {seeds_p})",
        "The `cpu` preset's four models, {fx_seeds} training seeds each",
        "On their valid graphs the Euler-trained models lose {fx_valid_euler_fixed} points on average (fixed depth) and "
        "{fx_valid_euler_refined} (refined), the RK4-trained ones {fx_valid_rk4_fixed} (fixed depth) and "
        "{fx_valid_rk4_refined} (refined). Averaged over the other factor the integrator accounts for {fx_integrator} of "
        "the main runs' {fx_main} points and refinement for {fx_refinement}, and the two interact: refinement changes "
        "the Euler models' loss by {fx_ref_euler} points and the RK4 models' by {fx_ref_rk4}.",
        "of the four effects' 95% intervals {fx_excluding} excludes zero (the integrator among fixed-depth models, "
        "{fx_int_fixed} [{fx_int_fixed_lo}, {fx_int_fixed_hi}] points, p = {fx_int_fixed_p}), and tested together, "
        "with Holm's correction over the four, {fx_held} holds (that one: p = {fx_int_fixed_p_holm})",
        "(on training seed 0, a mean relative jump between neighbouring pieces of {rough_euler_refined} for the refined "
        "Euler model and {rough_rk4_refined} for the refined RK4 one), where a model trained at its final depth keeps "
        "them apart ({rough_euler_fixed} and {rough_rk4_fixed}, about $\\sqrt 2$, the jump between independent pieces of "
        "equal size: refinement's smoothness is partly by construction), and the graphs that cross $\\theta$'s jumps cost the "
        "rough models more ({fx_cross_euler_fixed} and {fx_cross_rk4_fixed} points on average against "
        "{fx_cross_euler_refined} and {fx_cross_rk4_refined})",
        "the integrator carries more of that contrast than refinement ({fx_integrator} against {fx_refinement} points; "
        "{fx_seeds} seeds establish neither)",
    ],
    "book/refinement_training": [
        "what training them costs: both models in {both_train} on an H100 (measured, training seed 0), the image "
        "chapters in about {t4_chapters} on a T4 (an estimate)",
        "trained with RK4-classic on {bench_train} training images for {bench_epochs} epochs",
        "from a median {rk4_refined_epoch_1} s an epoch at $N_t = 1$ to {rk4_refined_epoch_2} s at $N_t = 2$ and "
        "{rk4_refined_epoch_4} s at $N_t = 4$",
        "{euler_fixed_epoch_4} s an epoch at $N_t = 4$",
        "trained for {rk4_refined_total} s in all against the Euler model's {euler_fixed_total} s, {rk4_over_euler} "
        "times as long",
        "Its median epochs give a speed-up of {rk4_refined_log_speedup}× against the ideal {rk4_refined_log_ideal}×",
        "Refinement trained in {refined_min} min, fixed depth in {fixed_min} min: a speed-up of {speedup} against the "
        "ideal {ideal}.",
        "{paper_min_refined} minutes with refinement against {paper_min_fixed} at fixed depth, a speed-up of "
        "{paper_speedup}, against its own schedule's ideal of {paper_ideal} (refined at epochs 20, 40, 60, 70 and 80, "
        "for the {paper_epochs} epochs that its timings imply",
        "The refined model ended at {refined_acc}% on {bench_test} held-out images, the fixed-depth one at {fixed_acc}%: "
        "a difference of {refined_diff} points with a 95% interval of [{refined_lo}, {refined_hi}]",
    ],
    "book/continuousnet": [
        "both models have {params} parameters and were trained for {epochs} epochs; they reach {acc_rk4}% (RK4) and "
        "{acc_euler}% (Euler) on {n_test} images held out",
        "lie between {gain1_hi} and {gain1_lo} in the first block, {gain2_hi} and {gain2_lo} in the second and {gain3_hi} "
        "and {gain3_lo} in the third",
    ],
    "book/pendulum_integrators": [
        "Euler {slope_euler}, midpoint {slope_midpoint}, classic RK4 {slope_rk4_classic} and the 3/8 rule {slope_rk4_38}",
        "Euler's error at $t = 10$ is between {long_euler_lo} and {long_euler_hi} at every one of these step sizes",
        "its slope ({long_euler})",
        "still small (at most {long_others_max}), but their fitted slopes are {long_midpoint}, {long_rk4_classic} and "
        "{long_rk4_38}, no longer 2 and 4",
    ],
    "book/resnet_euler": [
        "lie between {loss_lo} and {loss_hi}, a factor {loss_factor} apart",
        "halving the step multiplies the Euler-trained model's error by {dip_euler}, while the midpoint-trained "
        "model's error is multiplied by {dip_mid} and the RK4-trained model's by {dip_rk4}",
        "the Euler-trained $G$ is {dist_euler} times closer to the modified rate than to $f$, and the midpoint- and "
        "RK4-trained $G$ are {dist_mid} and {dist_rk4} times closer to $f$",
        "at least {v_worse} times larger at every other step than at its own",
        "flat within a factor {mid_flat} up to $\\Delta t_\\text{{data}}$ and rises {mid_rise} times by $h = {mid_hmax}$",
        "stays between {rk4_lo} and {rk4_hi} from $h = 1/8$ to $h = 4$, where RK4's own truncation error on $f$ (at "
        "most {rk4_f_4})",
        "that truncation error is {rk4_f_8}, larger than the model's own, and the rollout's error is {rk4_last}",
        "both are {floor}, about {floor_above} times RK4's truncation error on $f$ at $\\Delta t_\\text{{data}}$ "
        "({floor_numerical})",
        "makes {swap_euler} times its own error",
        "classic RK4, make {swap_others} times theirs",
        "at $\\Delta t_\\text{{data}} = 0.01$ the swapped models make {control_fine} times their own-scheme error, at "
        "$\\Delta t_\\text{{data}} = {dt_coarse}$ {control_coarse} times",
        "closer* to the exact state than midpoint on $f$: {control_to_f} times its error",
        "gains {gain_learned} in energy over $[0, 10]$, the true $f$ {gain_true}",
        "its period grows by {period_learned} over that energy where the true one grows by {period_true}",
    ],
}
"""Per page (``book/<name>``), fragments of its prose with ``{placeholders}`` for the computed numbers
(:mod:`published_numbers`); whitespace and line breaks do not matter."""

CONSTANTS: dict[str, set] = {
    "book/refinement_training": {"45,000"},  # the training images of the data the models were trained on
    "book/robustness": {"0.05", "0.3", "1.8"},  # the significance level fixed in advance; a noise level of the grid; the
    # noise-draw rule's standard deviation (robustness_verdict.WIDE_SD)
    "book/pendulum_integrators": {"0.01"},
    "book/resnet_euler": {"0.01"},
}
"""Per page, the numbers its prose may state that are settings or definitions, not results."""

EVERYWHERE = {"95%"}
"""Numbers any page may state: the confidence level of every interval."""

NUMBER = re.compile(r"(?<![\w.])[+−-]?(?:\d{1,3}(?:,\d{3})+|\d+\.\d+(?:e[+-]?\d+)?|\d+e[+-]\d+|\d+(?:\.\d+)?%)(?![\w])")
HIDDEN = re.compile(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`|\]\([^)]*\)|<!--.*?-->|(?:Secs?\.|Sections?|Appendix|Figures?|Tables?) "
                    r"[A-Z]?\d+(?:\.\d+)*(?:\([a-z]\))?", re.S)


def _prose(page: str) -> str:
    path = ROOT / f"{page}.ipynb"
    text = ("\n".join(cell_source(c) for c in read_notebook(path)["cells"] if c["cell_type"] == "markdown")
            if path.is_file() else (ROOT / f"{page}.md").read_text(encoding="utf-8"))
    text = without_card(text)  # the card's times are measured and checked by tests/test_chapter_cards.py
    return re.sub(r"\s+", " ", text)


@pytest.fixture(scope="module")
def numbers(tmp_path_factory) -> dict:
    runs = str(tmp_path_factory.mktemp("runs"))
    return {**P.integrator_numbers(), **P.pendulum_numbers(runs), **P.image_numbers(runs), **P.paper_numbers(),
            **P.refinement_numbers(), **P.history_numbers(), **P.training_numbers(), **P.factorial_numbers()}


@pytest.mark.parametrize("page", sorted(CLAIMS))
def test_the_prose_states_the_computed_numbers(page, numbers):
    text = _prose(page)
    missing = [f for f in (re.sub(r"\s+", " ", c.format(**numbers)) for c in CLAIMS[page]) if f not in text]
    assert not missing, f"{page}: the prose does not say (with today's numbers):\n" + "\n".join(missing)


@pytest.mark.parametrize("page", sorted(CLAIMS))
def test_every_number_the_prose_states_is_checked(page, numbers):
    text = _prose(page)
    covered = []
    for c in CLAIMS[page]:
        f = re.sub(r"\s+", " ", c.format(**numbers))
        covered += [(m.start(), m.end()) for m in re.finditer(re.escape(f), text)]
    visible = HIDDEN.sub(lambda m: " " * len(m.group(0)), text)
    loose = [m.group(0) for m in NUMBER.finditer(visible)
             if not any(a <= m.start() < b for a, b in covered)
             and m.group(0).lstrip("+−-") not in CONSTANTS.get(page, set()) | EVERYWHERE]
    assert not loose, f"{page}: numbers in the prose that no check computes: {loose}"
