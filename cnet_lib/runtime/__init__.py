"""The machine and the files, the second layer: the session's settings and the preset names, read once
(:mod:`.settings`, the only module that reads the environment), devices, precision, CPU threads and running out of
memory in one sentence (:mod:`.device`), CUDA graphs (:mod:`.cuda_graphs`), checkpoints and caches
(:mod:`.checkpoint`), shared files, folders and their locks (:mod:`.files`), records read as anyone may have left
them (:mod:`.records`), progress bars (:mod:`.progress`), and rows, text tables and the book's words and colours
(:mod:`.rich_text`).
"""
