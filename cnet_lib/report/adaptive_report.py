"""The adaptive-step study in tables and sentences: accuracy, changed predictions and rate evaluations per
tolerance (:func:`adaptive_table`), the fixed-step graphs of equal cost (:func:`equal_cost_table`), and the
verdict (:func:`word_adaptive`).  The numbers are the study's (:mod:`cnet_lib.images.studies.adaptive_measure`,
:mod:`cnet_lib.images.studies.adaptive_verdict`); nothing here computes a measurement."""
from __future__ import annotations

from typing import Any, Mapping, Optional

from ..images.studies.adaptive_measure import adaptive_rows, equal_cost_rows
from ..images.studies.adaptive_verdict import AdaptiveRule, AdaptiveVerdict, ModelClass
from ..images.studies.study_cache import as_trained_note
from ..runtime.rich_text import Rich, paragraphs
from ..runtime.rows import format_table
from ..runtime.vocabulary import run_label, scheme_label

__all__ = ["adaptive_table", "equal_cost_table", "word_adaptive"]


def adaptive_table(study: Mapping, as_trained: Optional[Mapping[str, Any]] = None) -> Rich:
    """:func:`cnet_lib.images.studies.adaptive_measure.adaptive_rows` as a table; with ``as_trained`` (the runs), the
    note says why a model's accuracy on its own graph here differs from its accuracy as trained."""
    def graph(r):
        if r["pair"] is None:
            return "own: " + ", ".join(f"{scheme_label(s)} N_t = {n}" for s, n in dict.fromkeys(map(tuple, r["graph"])))
        return f"{r['pair']}, tol {r['tol']:g}"

    cols = [("model", lambda r: run_label(r["run"]), "{}"), ("graph", graph, "{}"), ("accuracy", "accuracy", "{:.4f}"),
            ("own − this (points)", "drop", "{:+.2f}"), ("changed (%)", "changed", "{:.1f}"),
            ("NFE per image", "nfe", "{:.1f}"), ("NFE per block", lambda r: " / ".join(f"{v:.1f}" for v in r["nfe_blocks"]), "{}"),
            ("rejected per batch", "rejected", "{:.1f}")]
    g = study["grid"]
    rows = adaptive_rows(study)
    own = {r["run"]: 100 * r["accuracy"] for r in rows if r["pair"] is None}
    note = as_trained_note(own, as_trained, f"the study's {study['n']:,} held-out images, in float32")
    return format_table(rows, cols, left=2,
                        note=f"{study['n']:,} held-out images in batches of {g['batch_size']}; tol = rtol = atol; NFE = rate "
                             "evaluations of a block (R(x, θ(t)) calls), per image's forward pass; changed = predicted "
                             "class differs from the model's own graph" + (f"; the own graphs' accuracy {note}" if note else ""))


def _fixed_steps(r: Mapping, study: Mapping) -> str:
    """``RK4 (classic), N_t = 9*/9*/9*``: a block's N_t marked when it is not a multiple of its M, so that its steps
    straddle the jumps of θ(t)."""
    m = (study["runs"].get(r["run"]) or {}).get("n_basis") or []
    marks = [f"{n}{'*' if i < len(m) and n % m[i] else ''}" for i, n in enumerate(r["n_steps"])]
    return f"{scheme_label(r['scheme'])}, N_t = {'/'.join(marks)}"


def equal_cost_table(study: Mapping) -> Rich:
    """:func:`cnet_lib.images.studies.adaptive_measure.equal_cost_rows` as a table."""
    cols = [("model", lambda r: run_label(r["run"]), "{}"), ("adaptive", lambda r: f"{r['pair']}, tol {r['tol']:g}", "{}"),
            ("accuracy", "accuracy", "{:.4f}"), ("NFE", "nfe", "{:.1f}"),
            ("fixed steps", lambda r: _fixed_steps(r, study), "{}"),
            ("accuracy ", "fixed_accuracy", "{:.4f}"), ("NFE ", "fixed_nfe", "{:.0f}"), ("same class (%)", "agree", "{:.1f}")]
    return format_table(equal_cost_rows(study), cols, left=2,
                        note="fixed steps of equal cost: per block N_t = round(NFE / 4) of RK4-classic, the adaptive "
                             "solve's mean rate evaluations; * an N_t that is not a multiple of the block's M: its steps "
                             "straddle jumps of θ(t), where a step loses its order (the adaptive solve stops at every "
                             "jump); same class = both graphs predict the same class")


def _class_sentence(c: ModelClass, rule: AdaptiveRule, label: str, note: str = "") -> str:
    head = (f"{label}: {c.acc_own:.1f}% on its own graph ({c.nfe_own:.0f} rate evaluations per image"
            f"{'; ' + note if note else ''}), "
            f"{c.acc_adaptive:.1f}% with {rule.pair} at rtol = atol = {c.tol:g} ({c.nfe_adaptive:.1f}); drop "
            f"{c.drop:+.2f} points, 95% interval [{c.ci95[0]:+.2f}, {c.ci95[1]:+.2f}]; the adaptive solve changes "
            f"the predicted class of {c.changed:.1f}% of the images")
    if c.klass == "not converged":
        return (head + f". Its predictions at the two tightest tolerances agree on only {100 * c.agreement:.1f}% of "
                f"the images (the rule asks {100 * rule.agreement:g}%): not converged, no class.")
    why = {"continuous": f"the whole interval lies within ±{rule.min_effect:g}: continuous",
           "discrete": f"the interval excludes 0 and the drop is at least {rule.min_effect:g} point: discrete",
           "undecided": "neither within the equivalence bounds nor clearly beyond them: undecided"}[c.klass]
    return head + f"; converged ({100 * c.agreement:.1f}% agreement between the two tightest tolerances); {why}."


def word_adaptive(v: AdaptiveVerdict, labels: Optional[Mapping[str, str]] = None, width: int = 92,
                  as_trained: Optional[Mapping[str, Any]] = None) -> Rich:
    """Sentences that state what :func:`cnet_lib.images.studies.adaptive_verdict.judge_adaptive` found, quoting the
    numbers, as paragraphs (the text wrapped to ``width`` characters); the last one, ``VERDICT:``, rests on the
    rule alone, is set apart in a notebook, and says that one trained model per method stands behind it.  With
    ``as_trained`` (the runs), a model's accuracy on its own graph that differs from its accuracy as trained says why
    in its sentence."""
    lab = {v.a: run_label(v.a), v.b: run_label(v.b), **(labels or {})}
    r, ca, cb = v.rule, v.classes[v.a], v.classes[v.b]
    s = [f"Both models on the same {ca.n:,} held-out images. Rule, fixed before the numbers: a model is continuous when "
         f"its trained graph and {r.pair} at the tightest tolerance agree in accuracy within ±{r.min_effect:g} point "
         "(95% interval, paired), discrete when they differ by at least that much, significantly."]
    how = f"the study's {ca.n:,} images, in float32"
    s += [_class_sentence(c, r, lab[name], as_trained_note({name: c.acc_own}, as_trained, how))
          for name, c in ((v.a, ca), (v.b, cb))]
    ratio = v.nfe_ratio
    more = ("more" if ratio >= r.nfe_ratio else "fewer" if ratio <= 1 / r.nfe_ratio else "about as many")
    s.append(f"Secondary: at rtol = atol = {ca.tol:g} {lab[v.b]} takes {ratio:.2f}× the rate evaluations of "
             f"{lab[v.a]} ({cb.nfe_adaptive:.1f} against {ca.nfe_adaptive:.1f} per image): {more} "
             f"(the rule's threshold: {r.nfe_ratio:g}×).")
    body = {"tells them apart": f"the error-controlled solver tells them apart: {lab[v.a]} is continuous and {lab[v.b]} "
                                "discrete.",
            "the other way round": f"the solver tells them apart the other way round: {lab[v.a]} is discrete and "
                                   f"{lab[v.b]} continuous.",
            "does not tell them apart": f"the solver does not tell them apart: both models are {ca.klass}.",
            "inconclusive": f"inconclusive ({lab[v.a]}: {ca.klass}; {lab[v.b]}: {cb.klass})."}[v.outcome]
    s.append(f"VERDICT (one trained model per method, so this is about these two models; rule: {r.pair}, minimum "
             f"effect {r.min_effect:g} point, convergence {100 * r.agreement:g}% agreement): {body}")
    return paragraphs(s, width=width)
