"""The image study's third wing, the trained runs: what each preset means, where runs live and the hashes that name
them (:mod:`.image_presets`, where calibration edits numbers), the models that ship with the book (:mod:`.shipped`),
a finished run loaded and used by the chapters (:mod:`.run_loading`), θ(t) recorded while it trains, its curves and
roughness (:mod:`.theta_record`), the data its studies read (:mod:`.study_inputs`), and the preset's runs trained
once, reloaded everywhere (:mod:`.run_store`).  Imports the data and training wings."""
from . import image_presets, run_loading, run_store, shipped, study_inputs, theta_record

__all__ = ["image_presets", "shipped", "run_loading", "theta_record", "study_inputs", "run_store"]
