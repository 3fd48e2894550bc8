"""θ(t) and the graphs of one trained model in tables and sentences: the reports of
:mod:`cnet_lib.images.studies.theta` (how far training moved θ(t), where each stage reads it, a batch through
the layers, the BatchNorm statistics per piece, the gains, a model's Euler graph against its ResNet, and a
refined model against the original)."""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

from ..runtime.rich_text import Rich, join_rich, paragraphs
from ..runtime.rows import format_table
from .run_report import refined_column

__all__ = ["change_from_initial_table", "change_per_epoch_table", "word_resnet_manifestation", "word_refinement_check",
           "manifestation_reads_table", "stage_table", "feature_shapes_table", "bn_statistics_table", "skip_gains_table"]


def change_from_initial_table(rows: Sequence[dict]) -> Rich:
    """The rows of :func:`cnet_lib.images.studies.theta.change_from_initial`, under a line naming the block and its M."""
    r0 = rows[0]
    head = f"OdeBlock {r0['block']}: M = {r0['n_basis_initial']} at the start, M = {r0['n_basis']} after training"
    return join_rich([head, format_table(rows, [("piece", "piece", "{}"), ("t", "t", "{:.3f}"),
                                                ("‖θ_trained(t) − θ_initial(t)‖ / ‖θ_initial(t)‖", "relative_change",
                                                 "{:.3f}")], left=0)])


def change_per_epoch_table(rows: Sequence[dict]) -> Rich:
    """The rows of :func:`cnet_lib.images.studies.theta.change_per_epoch`: per epoch, M before and after and the
    largest change of the recorded θ(t)."""
    return format_table(rows, [
        ("epoch", "epoch", "{}"), ("M before", "n_basis_before", "{}"), ("M after", "n_basis_after", "{}"),
        ("largest change of θ(t)", "largest_change", "{:.4f}"), *refined_column(rows)], left=0)


def _is_euler_nt_m(result: Mapping) -> bool:
    return all(s == "euler" and n == m for (s, n), m in zip(result["manifestation"], result["units_per_stage"]))


def word_resnet_manifestation(result: Mapping, label: str = "the model") -> Rich:
    """The report of :func:`cnet_lib.images.studies.theta.resnet_manifestation`: the model's graph, its ResNet,
    whether they agree bit for bit and, when the model's own graph is another one, how much the
    logits and predicted classes move between the two graphs."""
    n = result["n_images"]
    lines = [f"{label}: own graph (scheme, N_t) per block {[tuple(m) for m in result['manifestation']]}, "
             f"basis {result['basis']}",
             f"its Euler, N_t = M graph as a ResNet: {result['units_per_stage']} residual units per stage, "
             f"step h per stage {result['steps']}",
             f"ResNet against the Euler, N_t = M graph: identical logits on {n} held-out images: {result['identical']} "
             f"(largest difference {result['max_difference']:.1e})"]
    if not _is_euler_nt_m(result):
        lines.append(f"own graph against the Euler, N_t = M graph: largest logit change {result['max_logit_change']:.3f}; "
                     f"same predicted class on {100 * result['same_class']:.1f}% of the {n} images")
    return paragraphs(lines)


def word_refinement_check(result: Mapping) -> Rich:
    """The report of :func:`cnet_lib.images.studies.theta.refinement_check`."""
    (m0, m1), (n0, n1), (p0, p1) = result["n_basis"], result["n_steps"], result["n_parameters"]
    return paragraphs([
        f"M: {m0} -> {m1}, N_t: {n0} -> {n1}; parameters: {p0} -> {p1}",
        f"θ(t) of every weight identical at {result['n_times']} times: {result['theta_identical']}",
        f"refined model on the old graph (N_t = {n0}): same logits bit for bit: {result['old_graph_identical']}",
        f"refined model on the new graph (N_t = {n1}): largest logit change {result['new_graph_max_change']:.2e}"])


def manifestation_reads_table(rows: Sequence[dict]) -> Rich:
    """The rows of :func:`cnet_lib.images.studies.theta.manifestation_reads`: per manifestation, the evaluations of R
    per block and the pieces θ̂_β read (numbered from 1)."""
    return format_table(rows, [
        ("scheme", "scheme", "{}"), ("N_t", "n_steps", "{}"), ("evaluations of R per block", "units", "{}"),
        ("pieces read", lambda r: ", ".join(str(b + 1) for b in r["pieces"]), "{}")], left=1)


def _reads(pieces) -> str:
    """``θ̂_2`` for one piece read whole, ``0.5 θ̂_1 + 0.5 θ̂_2`` for a combination (β from 0 in, from 1 out)."""
    pieces = [(b, float(w)) for b, w in pieces if w != 0]
    if len(pieces) == 1 and pieces[0][1] == 1.0:
        return f"θ̂_{pieces[0][0] + 1}"
    return " + ".join(f"{w:.3g} θ̂_{b + 1}" for b, w in pieces)


def stage_table(rows: Sequence[dict]) -> Rich:
    """The rows of :func:`cnet_lib.images.studies.theta.stage_rows`: per stage evaluation, its step, stage,
    exact time t and the θ̂_β it reads (numbered from 1)."""
    return format_table(rows, [("step", "step", "{}"), ("stage", "stage", "{}"), ("t", lambda r: float(r["tau"]), "{:.3f}"),
                               ("reads", lambda r: _reads(r["pieces"]), "{}")], left=0)


def feature_shapes_table(rows: Sequence[dict]) -> Rich:
    """The rows of :func:`cnet_lib.images.studies.theta.feature_shapes`: each layer's output shape, with each
    OdeBlock's graph and each stitch's ε_stitch."""
    def detail(r):
        if "scheme" in r:
            return f"{r['scheme']}, N_t = {r['n_steps']}"
        return f"ε_stitch = {r['epsilon']}" if "epsilon" in r else ""

    return format_table(rows, [("layer", "layer", "{}"), ("output shape", lambda r: str(tuple(r["shape"])), "{}"),
                               ("graph or scale", detail, "{}")], left=3)


def bn_statistics_table(rows: Sequence[dict]) -> Rich:
    """The rows of :func:`cnet_lib.images.studies.theta.bn_statistics`: per piece, every running statistic
    averaged over the channels; a last line says how many numbers each statistic holds."""
    stats = [k for k in rows[0] if "." in k]
    columns = [("piece", "piece", "{}")] + [(k.replace(".running_", " running "), k, "{:+.4f}" if k.endswith("mean") else "{:.4f}")
                                            for k in stats]
    note = (f"(averages over the {rows[0]['channels']} channels; each statistic is {len(rows)} pieces × "
            f"{rows[0]['channels']} channels)")
    return format_table(rows, columns, note=note)


def skip_gains_table(rows: Sequence[dict], identity: Optional[Sequence[bool]] = None) -> Rich:
    """The rows of :func:`cnet_lib.images.studies.theta.skip_gains` (ε s(t) of each OdeBlock on its pieces), after a
    line saying whether each OdeBlock of the untrained model returns its input exactly (``identity``,
    from :func:`cnet_lib.images.studies.theta.blocks_are_identity`), when given."""
    table = format_table(rows, [
        ("OdeBlock", "block", "{}"), ("M", "n_basis", "{}"),
        ("trained ε s(t) on its pieces", lambda r: None if r["gains"] is None else ", ".join(f"{g:+.4f}" for g in r["gains"]),
         "{}")], left=0)
    if identity is None:
        return table
    return join_rich([f"untrained model: each OdeBlock's output equals its input exactly: {list(identity)}", table])
