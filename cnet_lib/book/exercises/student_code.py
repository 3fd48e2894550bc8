"""Cells that use a reader's function after its exercise: ``with student_code("ideal_speedup"): ...``.

A chapter (and every student copy made from it) calls a reader's function again after its check, e.g. on
the trained model's numbers.  Any exception from it must not stop "Run all": :class:`student_code` catches
it, says which function failed, with what and where (the line of the reader's own code), and lets the
notebook go on; an unfinished stub (``NotImplementedError``) only gets a reminder.
"""
from __future__ import annotations

from .framework import student_frame

__all__ = ["student_code"]


class student_code:
    """A context manager for a cell's use of the reader's function ``name``: an exception inside is printed
    in one line (``NotImplementedError``: the exercise is not done yet) and not raised, so the rest of the
    notebook runs; ``KeyboardInterrupt`` and ``SystemExit`` pass through.  ``.failed`` says whether it caught one."""

    def __init__(self, name: str):
        self.name = name
        self.failed = False

    def __enter__(self) -> "student_code":
        return self

    def __exit__(self, exc_type, err, tb) -> bool:
        if err is None or not isinstance(err, Exception):
            return False
        self.failed = True
        if isinstance(err, NotImplementedError):
            print(f"(finish the exercise `{self.name}` above to see this part)")
        else:
            print(f"❌ your {self.name} raised {type(err).__name__}: {err} ({student_frame(err)}). The rest of this "
                  f"cell was skipped; fix {self.name} above, run its cell and its check, then this cell again.")
        return True
