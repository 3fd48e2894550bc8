"""The machine and the files, the second layer: the session's settings, read once (:mod:`.settings`, the
only module that reads the environment), the preset names (:mod:`.preset_names`), devices and precision
(:mod:`.device`), CPU threads (:mod:`.threads`), CUDA graphs (:mod:`.cuda_graphs`), checkpoints
(:mod:`.checkpoint`), shared files and folders (:mod:`.files`, :mod:`.locks`, :mod:`.json_cache`), out of
memory in one sentence (:mod:`.memory`), progress bars (:mod:`.progress`), rows and text tables
(:mod:`.rows`), and the book's words and colours (:mod:`.vocabulary`).
"""
