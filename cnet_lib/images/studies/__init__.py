"""The image study's last wing, what is measured on the trained runs.  The adaptive steps have the parts every
study had, named ``<study>_<part>``:

==============  ===============================
part            adaptive steps
==============  ===============================
``_measure``    :mod:`.adaptive_measure`
``_cached``     :mod:`.adaptive_cached`
``_verdict``    :mod:`.adaptive_verdict`
==============  ===============================

``_measure`` evaluates models and returns rows; ``_cached`` computes it once for the trained runs and caches it
beside their checkpoints, through the one runner :mod:`.study_cache`; ``_verdict`` decides from the numbers
(the words are :mod:`cnet_lib.report`'s ``<study>_report``).  (The robustness study and the manifestation sweeps
each live in one folder, :mod:`cnet_lib.studies.robustness` and :mod:`cnet_lib.studies.manifestation`, on this
wing's runner.)  Over several training seeds: :mod:`.seed_cached` (their numbers, kept in one file); the studies
that ship with the book, read on any machine (:mod:`.shipped_studies`).  Shared: paired statistics
(:mod:`.paired_stats`), checks of a study's inputs (:mod:`.checks`).  (θ(t) and the graphs of one model, and
refinement's training time, are the studies :mod:`cnet_lib.studies.continuousnet` and
:mod:`cnet_lib.studies.refinement`.)  Imports every other wing.
"""
from . import (adaptive_cached, adaptive_measure, adaptive_verdict, checks, paired_stats, seed_cached, shipped_studies,
               study_cache)

__all__ = ["study_cache", "checks", "paired_stats", "shipped_studies", "adaptive_measure", "adaptive_cached",
           "adaptive_verdict", "seed_cached"]
