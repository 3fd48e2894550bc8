"""The image study behind the chapters "ContinuousNet", "Refinement training", "Manifestation
invariance" and "Beyond the paper": CIFAR data (:mod:`.data`), the presets (:mod:`.presets`),
training (:mod:`.training`), evaluation (:mod:`.evaluation`), manifestation sweeps (:mod:`.sweep`),
the robustness study (:mod:`.robustness`), trained runs (:mod:`.runs`), θ(t) (:mod:`.theta`), the
cached studies of the runs (:mod:`.study`), the verdict (:mod:`.verdict`), the tables
(:mod:`.tables`), and the figures and live apps (:mod:`.figures`, which imports plotly; import it
yourself).
"""
from .presets import IMAGE_PRESETS, image_runs, robustness_grid, sweep_grid
from .runs import StudyRun, study_data, trained_runs
from .study import robustness_runs, sweep_runs
from .tables import format_table1, refinement_cost, table1
from .theta import stage_table, theta_by_basis, theta_curve
from .training import TrainConfig, build_model, load_model, train
from .verdict import honest_verdict

__all__ = ["IMAGE_PRESETS", "image_runs", "robustness_grid", "sweep_grid", "StudyRun", "study_data", "trained_runs",
           "robustness_runs", "sweep_runs", "format_table1", "refinement_cost", "table1", "stage_table",
           "theta_by_basis", "theta_curve", "TrainConfig", "build_model", "load_model", "train", "honest_verdict"]
