"""The image study's last wing, what is measured on the trained runs.  Every study has the same parts,
named ``<study>_<part>``:

==============  ================================  ================================
part            sweeps                            robustness
==============  ================================  ================================
``_measure``    :mod:`.sweep_measure`             :mod:`.robustness_measure`
``_cached``     :mod:`.sweep_cached`              :mod:`.robustness_cached`
``_verdict``    :mod:`.sweep_verdict`             :mod:`.robustness_verdict`
==============  ================================  ================================

``_measure`` evaluates models and returns rows; ``_cached`` computes it once for the trained runs and caches it
beside their checkpoints, through the one runner :mod:`.study_cache`; ``_verdict`` decides from the numbers
(the words are :mod:`cnet_lib.report`'s ``<study>_report``; the adaptive-step study is
:mod:`cnet_lib.studies.adaptive`).  The robustness study's perturbations are
:mod:`.robustness_perturbations`.  Over several training seeds: :mod:`.seed_cached` (their numbers, kept in one
file) and :mod:`.seed_verdict`; which graphs judge a model (:mod:`.graph_rule`, the manifestation verdict's rule);
integrator x refinement, the main runs with their controls (:mod:`.factorial`); the studies that ship with the book,
read on any machine (:mod:`.shipped_studies`).  Shared: paired statistics (:mod:`.paired_stats`), checks of a study's inputs
(:mod:`.checks`), θ(t) and the graphs of one model (:mod:`.theta`), and refinement's training time measured
fairly (:mod:`.refinement_timing`).  Imports every other wing.
"""
from . import (checks, factorial, graph_rule, paired_stats,
               refinement_timing, robustness_cached, robustness_measure, robustness_perturbations, robustness_verdict,
               seed_cached, seed_verdict, shipped_studies, study_cache, sweep_cached, sweep_measure, sweep_verdict, theta)

__all__ = ["study_cache", "checks", "paired_stats", "theta", "refinement_timing",
           "sweep_measure", "sweep_cached", "graph_rule", "sweep_verdict", "shipped_studies",
           "robustness_perturbations", "robustness_measure", "robustness_cached", "robustness_verdict",
           "seed_cached", "seed_verdict", "factorial"]
