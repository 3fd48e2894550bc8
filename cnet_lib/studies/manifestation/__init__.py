"""The manifestation study: one trained ContinuousNet evaluated on many graphs (schemes, N_t, θ(t) compressed, no
blocks), which graphs judge it, and what the numbers say, for one pair of models, over training seeds and for
integrator × refinement.  Its numbers are :mod:`.study`'s, their tables, sentences, figures and live app :mod:`.show`'s.

A chapter writes ``from cnet_lib.studies import manifestation`` and then ``sweeps = manifestation.run(runs)``,
``manifestation.fig_accuracy_vs_nt(sweeps)``, ``manifestation.word_verdict(manifestation.judge(sweeps))``.
"""
from .show import (KIND_WORDS, contrast_table, facts, factorial_table, fig_accuracy_vs_nt, fig_sweep_explorer, live_app,
                   summary_table, sweep_table, sweeps_table, swept_images, table1_table, word_contrast, word_factorial,
                   word_verdict)
from .study import (BF16_NOTE, CELLS, EFFECTS, GRAPH_KINDS, KEEP_POINTS, SWEEP_PREFIX, Factorial, SeedContrast, Verdict,
                    factorial_over_seeds, graph_kind, graphs_of_kind, judge, over_seeds, run, seed_sweeps,
                    shipped_factorial, shipped_roughness, sweep_cache, sweep_checkpoint, sweep_images, table1_rows,
                    trained_row, worst_loss, write_sweep)

__all__ = [
    # the sweeps
    "run", "sweep_cache", "SWEEP_PREFIX", "BF16_NOTE", "sweep_checkpoint", "write_sweep", "sweep_images", "table1_rows",
    "seed_sweeps",
    # the graph rule and the verdicts
    "KEEP_POINTS", "GRAPH_KINDS", "graph_kind", "graphs_of_kind", "trained_row", "Verdict", "worst_loss", "judge",
    "SeedContrast", "over_seeds",
    # integrator x refinement
    "CELLS", "EFFECTS", "Factorial", "factorial_over_seeds", "shipped_factorial", "shipped_roughness",
    # shown
    "KIND_WORDS", "summary_table", "sweep_table", "sweeps_table", "table1_table", "word_verdict", "contrast_table",
    "word_contrast", "factorial_table", "word_factorial", "fig_accuracy_vs_nt", "fig_sweep_explorer", "live_app",
    "swept_images", "facts",
]
