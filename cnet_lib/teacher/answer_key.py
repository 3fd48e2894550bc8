"""The answer key a class export writes for the teacher (``python -m cnet_lib student OUTDIR --key KEYDIR``), and
reads back to grade (``python -m cnet_lib grade SUBMISSIONS --key KEYDIR``).

``KEYDIR/key.json`` holds the class's exercises with their points (as the catalogue said when the copies were
made), the build of the library the students install, the default time limit, and a random secret from which
every submission's hidden cases are drawn (:func:`cnet_lib.teacher.keys.hidden_cases`): keep the folder to
yourself.  ``KEYDIR/answer_key.md`` is the key for people: per exercise its objective, minutes, difficulty and
points, the solution (the chapter's solution cell), the hints, the public cases, what the hidden cases are, the
near misses they catch (in words, with the points each gets and the hint it is given), and what an exercise cell
may not use.
"""
from __future__ import annotations

import inspect
import json
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

from ..book.exercise_cells import exercise_pairs, function_signatures
from ..book.exercises.catalogue import DIFFICULTY, info
from ..book.exercises.registry import chapter_exercises, exercise
from ..book.notebook_cells import SOLUTION_TITLE, cell_source, read_notebook
from ..book.toc import toc_notebooks
from .keys import key
from .scoring import NEAR_MISS_SHARE

__all__ = ["AnswerKey", "write_key", "solution_sources", "KEY_FILE", "DEFAULT_TIME_LIMIT"]

KEY_FILE = "key.json"
FORMAT = "cnet-answer-key/1"
DEFAULT_TIME_LIMIT = 60.0


@dataclass(frozen=True)
class AnswerKey:
    """What grading needs: the ``secret``, the class's ``chapters`` and ``exercises`` (in order) with their
    ``points``, the students' library ``build`` and the default ``time_limit`` per exercise (seconds)."""

    secret: str
    chapters: tuple[str, ...]
    exercises: tuple[str, ...]
    points: Mapping[str, int]
    build: str = ""
    time_limit: float = DEFAULT_TIME_LIMIT

    @classmethod
    def load(cls, path: Path) -> "AnswerKey":
        """The key in folder ``path`` (or the ``key.json`` file ``path``); a clear error for anything else."""
        path = Path(path)
        file = path / KEY_FILE if path.is_dir() else path
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise ValueError(f"no answer key at {file} ({err}); pass the KEYDIR that `python -m cnet_lib student "
                             "... --key KEYDIR` wrote") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            found = data.get("format") if isinstance(data, dict) else type(data).__name__
            raise ValueError(f"{file} is not an answer key of this library (format {found!r})")
        for name in data.get("exercises", []):
            try:
                exercise(name)
            except KeyError as err:  # a key from another version of the book: one sentence, no traceback
                raise ValueError(f"{file} names an exercise this version of the book does not have ({err.args[0]}); "
                                 "grade with the version of cnet_lib the key was written for, or write the key again "
                                 "with `python -m cnet_lib student`") from None
        try:
            return cls(str(data["secret"]), tuple(data["chapters"]), tuple(data["exercises"]),
                       {k: int(v) for k, v in data["points"].items()}, data.get("build", ""),
                       float(data.get("time_limit", DEFAULT_TIME_LIMIT)))
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise ValueError(f"{file} is damaged ({type(err).__name__}: {err}); write the key again with "
                             "`python -m cnet_lib student`") from None

    @classmethod
    def new(cls, chapters: Sequence[str], build: str = "", time_limit: float = DEFAULT_TIME_LIMIT) -> "AnswerKey":
        """A key for ``chapters`` with a fresh secret and the catalogue's points."""
        names = tuple(n for c in chapters for n in chapter_exercises(c))
        if not names:
            raise ValueError(f"the chapters {list(chapters)} have no exercises")
        return cls(secrets.token_hex(16), tuple(chapters), names, {n: info(n).points for n in names}, build, time_limit)

    def data(self) -> dict:
        """The key as ``key.json`` stores it."""
        return {"format": FORMAT, "secret": self.secret, "chapters": list(self.chapters),
                "exercises": list(self.exercises), "points": dict(self.points), "build": self.build,
                "time_limit": self.time_limit}


def write_key(keydir: Path, key_: AnswerKey, solutions: Optional[Mapping[str, str]] = None) -> Path:
    """Write ``key.json`` and ``answer_key.md`` into ``keydir`` (``solutions``: exercise -> solution source);
    returns the folder."""
    keydir = Path(keydir)
    keydir.mkdir(parents=True, exist_ok=True)
    (keydir / KEY_FILE).write_text(json.dumps(key_.data(), indent=1) + "\n", encoding="utf-8")
    try:
        (keydir / KEY_FILE).chmod(0o600)
    except OSError:  # a file system without modes: nothing to do
        pass
    (keydir / "answer_key.md").write_text(_markdown(key_, solutions or {}), encoding="utf-8")
    return keydir


def _markdown(key_: AnswerKey, solutions: Mapping[str, str]) -> str:
    lines = [f"# Answer key (cnet-lib {key_.build or 'working tree'})", "",
             f"Chapters: {', '.join(key_.chapters)}. Total: {sum(key_.points.values())} points. Keep this folder to "
             "yourself: `key.json` holds the secret every submission's hidden cases are drawn from.", "",
             "Grade with `python -m cnet_lib grade SUBMISSIONS --key THIS_FOLDER --out gradebook.csv`.", ""]
    for name in key_.exercises:
        lines += _exercise_section(name, key_.points[name], solutions.get(name))
    return "\n".join(lines) + "\n"


def _exercise_section(name: str, points: int, solution: Optional[str]) -> list[str]:
    row, ex, k = info(name), exercise(name), key(name)
    public = ex.public()
    hidden_doc = inspect.getdoc(k.hidden) or ""
    rules = ex.rules
    most = round(points * NEAR_MISS_SHARE, 2)
    lines = [f"## `{name}` ({row.chapter})", "",
             f"- objective: {row.objective}", f"- about {row.minutes} min; difficulty {row.difficulty} ({DIFFICULTY[row.difficulty]}); "
             f"{points} point{'s' if points != 1 else ''}, in proportion to the hidden cases passed, and at most a third "
             f"({most:g}) for a submission that fails a case built to catch a near miss below",
             f"- public cases ({len(public)}): " + "; ".join(r["label"] for r in public),
             f"- hidden cases, drawn per submission and grading run: {hidden_doc}",
             f"- near misses, each caught by the hidden cases of every draw and getting at most {most:g} of {points}:"]
    lines += [f"  - {m.words} (the hint it gets: \"{m.hint}\")" for m in ex.near_misses] or ["  - none named"]
    lines += [f"- an exercise cell may not use: {', '.join(rules.banned_names + rules.banned_modules) or 'nothing named'}"
              + (f"; of cnet_lib only {', '.join(rules.allowed_imports)}" if rules.allowed_imports else "; nothing of cnet_lib"),
              "- hints: " + " / ".join(ex.hints), ""]
    if solution:
        lines += ["```python", solution.strip(), "```", ""]
    return lines


def solution_sources(root: Optional[Path] = None) -> dict[str, str]:
    """``{exercise: the source of its solution cell}`` from the chapters (without the cell's title line, the
    ``@solution`` decorator and its import): what a right answer in the exercise cell looks like."""
    out = {}
    for path in toc_notebooks(root):
        nb = read_notebook(path)
        for _, sol in exercise_pairs(nb):
            if sol is None:
                continue
            text = cell_source(nb["cells"][sol])
            lines = [ln for ln in text.split("\n") if ln.strip() not in (SOLUTION_TITLE, "@solution",
                                                                          "from cnet_lib.book.exercises import solution")]
            clean = "\n".join(lines).strip("\n")
            while "\n\n\n\n" in clean:
                clean = clean.replace("\n\n\n\n", "\n\n\n")
            for name in function_signatures(text):
                out[name] = clean
    return out
