"""The machine and the files, the second layer: devices and precision (:mod:`.device`), CPU threads
(:mod:`.threads`), CUDA graphs (:mod:`.cuda_graphs`), checkpoints (:mod:`.checkpoint`), the run-size
preset (:mod:`.presets`), progress bars (:mod:`.progress`), rows and text tables (:mod:`.tables`),
and the book's words and colours (:mod:`.vocabulary`).
"""
