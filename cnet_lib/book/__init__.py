"""The book's machinery, above the drawing layer: the chapters' setup cell (:mod:`.notebook`, which
builds the session's settings, shows faults as one sentence and draws notebook progress bars), the first chapter's worked example (:mod:`.demos`), exercises and their checks
(:mod:`.exercises`), student copies (:mod:`.student_copies`),
notebook files and cells (:mod:`.notebook_cells`, :mod:`.exercise_cells`), the chapters' conventions
(:mod:`.conventions`), the repository's address and table of contents (:mod:`.project`), and the chapters' trained models with the
seed paper's numbers and sentences beside them (:mod:`.paper_claims`).
"""
from ..runtime.settings import require_extra

require_extra("cnet_lib.book")  # plotly, ipywidgets, ...: a clear message on the core install

from .notebook import glue, glue_all, setup
from .paper_claims import cheaper_graphs_table, invariance_claims_table, paper_beside, paper_facts, runs_table

__all__ = ["setup", "glue", "glue_all", "runs_table", "paper_beside", "cheaper_graphs_table", "invariance_claims_table",
           "paper_facts"]
