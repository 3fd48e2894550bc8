"""The image study's last wing, what is measured on the trained runs.  The adaptive steps have the parts every
study had, named ``<study>_<part>``:

==============  ===============================
part
==============  ===============================
==============  ===============================

Over several training seeds: :mod:`.seed_cached` (their numbers, kept in one file); the studies that ship with the
book, read on any machine (:mod:`.shipped_studies`).  Shared: paired statistics (:mod:`.paired_stats`), checks of a
study's inputs (:mod:`.checks`).  Imports every other wing.
"""
from . import checks, paired_stats, seed_cached, shipped_studies, study_cache

__all__ = ["study_cache", "checks", "paired_stats", "shipped_studies", "seed_cached"]
