"""The grader object of a student copy, with otter-grader's notebook API (``grader.check``, ``check_all``,
``export``), so that a class works as otter's classes do, without installing otter in Colab.

In a student copy (``python -m cnet_lib student``)::

    from cnet_lib.book.exercises import Notebook
    grader = Notebook("how_to_use")
    ...
    passed = grader.check("observed_order")     # the public check of the function defined in the notebook
    grader.check_all()                          # every exercise of the chapter
    grader.export()                             # a submission zip: <chapter>_<time>.zip holding <chapter>.ipynb

The public checks are the book's own (:func:`cnet_lib.book.exercises.public_checks.check_exercise`): they help
the student and decide nothing.  The grade comes from the teacher's ``python -m cnet_lib grade``, which runs the
exercise cells of the exported notebook again, on hidden cases drawn for each submission.

On Colab the export reads the notebook from the browser (Colab keeps no file of it in the runtime) and downloads
the zip; elsewhere it reads the saved ``.ipynb`` (save first).
"""
from __future__ import annotations

import datetime as _dt
import inspect
import json
import sys
import zipfile
from pathlib import Path
from typing import Any, Optional

from .catalogue import chapter_exercises, exercise, info
from .public_checks import check_exercise

__all__ = ["Notebook", "CheckResult", "ZIP_NAME_FILE"]

ZIP_NAME_FILE = "__zip_filename__"  # as otter's export writes it


class CheckResult:
    """The verdict of one public check: truthy when it passed."""

    def __init__(self, exercise: str, passed: bool):
        self.exercise, self.passed = exercise, passed

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return f"{self.exercise}: {'passed' if self.passed else 'not passed yet'}"


class Notebook:
    """The grader of one chapter's student copy (``chapter``: the notebook's name without ``.ipynb``)."""

    def __init__(self, chapter: str, nb_path: Optional[str] = None):
        self.chapter = chapter
        self.nb_path = nb_path
        self.exercises = chapter_exercises(chapter)
        if not self.exercises:
            raise ValueError(f"the chapter {chapter!r} has no exercises; use the chapter's own name, e.g. "
                             f"Notebook({info('observed_order').chapter!r})")

    def check(self, name: str, hint: Optional[int] = None, global_env: Optional[dict] = None) -> CheckResult:
        """The public check of exercise ``name`` on the function of that name in the notebook (the caller's
        globals, or ``global_env``); prints the verdict, with a graded hint when it fails; never raises."""
        env = global_env if global_env is not None else inspect.currentframe().f_back.f_globals
        if name not in env:
            print(f"❌ {name} is not defined yet: run the cell of the exercise {name} first")
            return CheckResult(name, False)
        return CheckResult(name, check_exercise(exercise(name), env[name], hint, ask=self.asker(name)))

    @staticmethod
    def asker(name: str):
        """How a student copy asks for hint k of exercise ``name``: ``grader.check("name", hint=k)``."""
        return lambda k: f'grader.check("{name}", hint={k})'

    def check_all(self, global_env: Optional[dict] = None) -> list[CheckResult]:
        """The public check of every exercise of the chapter; prints a summary line."""
        env = global_env if global_env is not None else inspect.currentframe().f_back.f_globals
        results = [self.check(name, global_env=env) for name in self.exercises]
        print(f"\n{sum(map(bool, results))} of {len(results)} public checks pass in {self.chapter}. "
              "Your grade comes from the teacher's hidden tests, on other cases.")
        return results

    def export(self, nb_path: Optional[str] = None, export_path: Optional[str] = None) -> Optional[Path]:
        """Write the submission zip (``<chapter>_<time>.zip`` holding ``<chapter>.ipynb``), download it on Colab,
        and return its path; says what to do and returns None when the notebook cannot be read (never raises)."""
        try:
            nb = _colab_notebook() if "google.colab" in sys.modules else self._saved_notebook(nb_path)
        except Exception as err:  # noqa: BLE001 - said to the student, never raised into "Run all"
            print(f"❌ could not read the notebook: {err}")
            return None
        stamp = _dt.datetime.now().strftime("%Y_%m_%dT%H_%M_%S")
        zip_path = Path(export_path or f"{self.chapter}_{stamp}.zip")
        with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(f"{self.chapter}.ipynb", json.dumps(nb, indent=1, ensure_ascii=False))
            zf.writestr(ZIP_NAME_FILE, zip_path.name)
        state = ("as it is now in your browser" if "google.colab" in sys.modules
                 else "as it was last saved: save it first (File → Save) whenever you changed it")
        print(f"Your submission: {zip_path.resolve()}. Hand in this file as your teacher asked. It holds the notebook "
              f"{state}; finish your exercises and run this cell again to update it.")
        if "google.colab" in sys.modules:
            _colab_download(zip_path)
        return zip_path

    def _saved_notebook(self, nb_path: Optional[str]) -> Any:
        """The saved notebook file: ``nb_path``, else ``<chapter>.ipynb`` in the working folder, else its only ``.ipynb``."""
        path = Path(nb_path or self.nb_path or f"{self.chapter}.ipynb")
        if not path.is_file():
            found = sorted(Path.cwd().glob("*.ipynb"))
            if len(found) != 1:
                raise FileNotFoundError(f"no {path} here: save the notebook (File → Save) and run this cell again, or "
                                        f'name it: grader.export("path/to/{self.chapter}.ipynb")')
            path = found[0]
        print(f"(exporting {path})")
        return json.loads(path.read_text(encoding="utf-8"))


def _colab_notebook() -> Any:
    """The notebook as the Colab front end holds it (Colab keeps no copy in the runtime's files)."""
    from google.colab import _message

    reply = _message.blocking_request("get_ipynb", request="", timeout_sec=120)
    if not reply or "ipynb" not in reply:
        raise RuntimeError("Colab did not send the notebook; save it (File → Save) and run this cell again")
    return reply["ipynb"]


def _colab_download(path: Path) -> None:
    """Ask the browser to download ``path`` (on Colab)."""
    try:
        from google.colab import files

        files.download(str(path))
    except Exception as err:  # noqa: BLE001 - the file is there anyway
        print(f"(the download did not start: {err}; find {path.name} in the Files pane on the left)")
