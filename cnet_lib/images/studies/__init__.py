"""The image study's last wing, what is measured on the trained runs.  Every study has the same parts,
named ``<study>_<part>``:

==============  ================================  ===============================
part            robustness                        adaptive steps
==============  ================================  ===============================
``_measure``    :mod:`.robustness_measure`        :mod:`.adaptive_measure`
``_cached``     :mod:`.robustness_cached`         :mod:`.adaptive_cached`
``_verdict``    :mod:`.robustness_verdict`        :mod:`.adaptive_verdict`
==============  ================================  ===============================

``_measure`` evaluates models and returns rows; ``_cached`` computes it once for the trained runs and caches it
beside their checkpoints, through the one runner :mod:`.study_cache`; ``_verdict`` decides from the numbers
(the words are :mod:`cnet_lib.report`'s ``<study>_report``).  The robustness study's perturbations are
:mod:`.robustness_perturbations`.  Over several training seeds: :mod:`.seed_cached` (their numbers, kept in one
file) and :mod:`.seed_verdict`; the studies that ship with the book, read on any machine (:mod:`.shipped_studies`).
The manifestation sweeps are :mod:`cnet_lib.studies.manifestation`.  Shared: paired statistics (:mod:`.paired_stats`), checks of a study's inputs
(:mod:`.checks`), θ(t) and the graphs of one model (:mod:`.theta`), and refinement's training time measured
fairly (:mod:`.refinement_timing`).  Imports every other wing.
"""
from . import (adaptive_cached, adaptive_measure, adaptive_verdict, checks, paired_stats, refinement_timing,
               robustness_cached, robustness_measure, robustness_perturbations, robustness_verdict, seed_cached,
               seed_verdict, shipped_studies, study_cache, theta)

__all__ = ["study_cache", "checks", "paired_stats", "theta", "refinement_timing",
           "shipped_studies",
           "robustness_perturbations", "robustness_measure", "robustness_cached", "robustness_verdict",
           "adaptive_measure", "adaptive_cached", "adaptive_verdict",
           "seed_cached", "seed_verdict"]
