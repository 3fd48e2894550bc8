"""The image study's third wing, the trained runs: what each preset means (:mod:`.image_presets`, where
calibration edits numbers), where runs live and the hashes that name them (:mod:`.run_folders`), the models
that ship with the book (:mod:`.shipped`), loading a finished run (:mod:`.run_loading`), θ(t) recorded while
it trains, its curves and roughness (:mod:`.theta_record`), one run as the chapters use it (:mod:`.study_run`), the data its studies
read (:mod:`.study_inputs`), and the preset's runs trained once, reloaded everywhere (:mod:`.run_store`).
Imports the data and training wings."""
from . import image_presets, run_folders, run_loading, run_store, shipped, study_inputs, study_run, theta_record

__all__ = ["image_presets", "run_folders", "shipped", "run_loading", "theta_record", "study_run", "study_inputs",
           "run_store"]
