"""The book's machinery, the top layer: the chapters' setup cell (:mod:`.notebook`), live apps
(:mod:`.widgets`), figure helpers (:mod:`.plotting`), exercises and their checks
(:mod:`.exercises`), student copies (:mod:`.student`), notebook conventions
(:mod:`.notebook_tools`) and the repository's address (:mod:`.project`).  The only package that
displays anything (IPython, ipywidgets).
"""
from .notebook import setup

__all__ = ["setup"]
