"""Faults a reader can meet in a chapter, shown as the one sentence that says what to do.

The library's fault errors carry a message that names what went wrong and what to do: running out
of memory (with the batch size to try), a damaged data file, a damaged, foreign or mismatched
checkpoint or shipped file, a save that failed, a folder in use by another process or one that
cannot be written, data that cannot be had.  In a notebook a traceback of library frames would
bury that sentence.  :func:`show_faults_briefly` (called by ``setup()``) makes IPython show such an
error as ``ErrorName: the sentence`` alone; the cell still fails, so "Run all" stops there.  Every
other error keeps its full traceback.
"""
from __future__ import annotations

from typing import Any

from ..images.data.cifar_files import CifarFileError
from ..images.data.datasets import DatasetNotFoundError
from ..runtime.checkpoint import CheckpointError, CheckpointSaveError
from ..runtime.files import FolderNotWritable
from ..runtime.locks import FolderBusy, LockFileError
from ..runtime.memory import OutOfMemory

__all__ = ["FAULTS", "fault_lines", "show_faults_briefly"]

FAULTS = (OutOfMemory, CifarFileError, CheckpointError, CheckpointSaveError, FolderNotWritable, FolderBusy,
          LockFileError, DatasetNotFoundError)
"""The errors whose message is the whole story (:class:`CheckpointError` includes the shipped files')."""


def fault_lines(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None) -> list[str]:
    """IPython's custom exception handler: shows (and returns) the error's name and message as the
    whole traceback.  Should showing fail, IPython drops this handler and shows the full traceback."""
    lines = [f"{etype.__name__}: {value}"]
    shell._showtraceback(etype, value, lines)  # how IPython and ipykernel show a structured traceback
    return lines


def show_faults_briefly(shell: Any) -> None:
    """Make the IPython ``shell`` show the errors of :data:`FAULTS` as their one sentence."""
    shell.set_custom_exc(FAULTS, fault_lines)
