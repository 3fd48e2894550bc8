"""The study of the chapter *ContinuousNet*: the weight functions θ(t) of the two trained image models, the graphs
their parameters have (the ResNet manifestation, where the stages of other schemes read θ(t)), a batch through the
stitches, the BatchNorm statistics per piece and the skip gains: its numbers (:mod:`.study`) and how they are shown
(:mod:`.show`: tables, sentences, figures, and the numbers the prose quotes).  The trained models themselves are
:mod:`cnet_lib.images`'s.

A chapter writes ``from cnet_lib.studies import continuousnet`` and calls the names below, e.g.
``continuousnet.skip_gains_table(continuousnet.skip_gains(model))``.
"""
from .show import (bn_statistics_table, change_from_initial_table, facts, feature_shapes_table, fig_basis_functions,
                   fig_manifestations, fig_theta_bases, manifestation_reads_table, skip_gains_table, stage_table,
                   word_resnet_manifestation)
from .study import (blocks_are_identity, bn_statistics, change_from_initial, feature_shapes, manifestation_reads,
                    model_numbers, resnet_manifestation, skip_gains, stage_rows, theta_by_basis)

__all__ = [
    # weight functions and their bases
    "fig_basis_functions", "theta_by_basis", "fig_theta_bases", "change_from_initial", "change_from_initial_table",
    # an OdeBlock is a ResNet block; manifestations
    "resnet_manifestation", "word_resnet_manifestation", "manifestation_reads", "manifestation_reads_table",
    "fig_manifestations", "stage_rows", "stage_table",
    # stitches, BatchNorm, skip-init
    "feature_shapes", "feature_shapes_table", "bn_statistics", "bn_statistics_table", "skip_gains",
    "blocks_are_identity", "skip_gains_table",
    # the numbers the prose quotes
    "model_numbers", "facts",
]
