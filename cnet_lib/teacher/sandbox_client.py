"""The grading process's side of :mod:`.sandbox`: start the worker in a clean environment, hand it one exercise at
a time, enforce the time limit, and read back what the student's function returned.

:class:`Sandbox` (a context manager) starts ``python -I -m cnet_lib.teacher.sandbox`` in a folder of its own,
with an environment that holds nothing of the teacher's (one thread, no GPU), in a session of its own.  :meth:`Sandbox.run` sends one job and waits at most ``time_limit`` seconds: a child still running then is
killed with its process group (an infinite loop, a thread that never ends), a child that dies is reported with
its exit status, and a worker that stops answering is killed and started again for the next job.  Linux and macOS
only (it forks); on Windows use WSL, or grade in Colab.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

__all__ = ["Sandbox", "Outcome", "SandboxError"]

MAX_RESULT_BYTES = 64 * 1024 * 1024
MAX_OUTPUT_CHARS = 4000


class SandboxError(RuntimeError):
    """The worker cannot be started; the message says why and what to do."""


@dataclass
class Outcome:
    """How one job ended: ``status`` ``"ok"`` (``result`` holds the child's data), ``"timeout"`` or ``"crashed"``
    (``detail`` says how); ``output``: the end of what the student's code printed."""

    status: str
    result: Optional[dict] = None
    detail: str = ""
    output: str = ""
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)


def _clean_environment(home: Path) -> dict:
    """Nothing of the teacher's environment: the system's ``PATH``, one thread, no GPU, a home of its own."""
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), "TMPDIR": str(home),
            "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
            "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE",
            "CUDA_VISIBLE_DEVICES": ""}


class Sandbox:
    """The worker that runs submissions' exercise cells (see the module doc); ``workdir`` must be a private, empty
    folder (the results and the students' output go there)."""

    def __init__(self, workdir: Path, time_limit: float = 60.0, startup_limit: float = 300.0):
        if not hasattr(os, "fork"):
            raise SandboxError("grading forks a fresh process per exercise, which this system cannot: grade on Linux or "
                               "macOS (on Windows in WSL), or in a Colab notebook")
        if time_limit <= 0:
            raise SandboxError(f"the time limit must be > 0 seconds, got {time_limit}")
        self.workdir, self.time_limit, self.startup_limit = Path(workdir), float(time_limit), float(startup_limit)
        self._proc: Optional[subprocess.Popen] = None
        self._events: Optional[int] = None
        self._buf = b""
        self._jobs = 0
        self.restarts = 0

    def __enter__(self) -> "Sandbox":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        """Start the worker and wait until it has loaded the library."""
        home = self.workdir / "home"
        home.mkdir(parents=True, exist_ok=True)
        read, write = os.pipe()
        with open(self.workdir / "worker.log", "ab") as log:
            self._proc = subprocess.Popen([sys.executable, "-I", "-m", "cnet_lib.teacher.sandbox", str(write)],
                                          stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=log, pass_fds=(write,),
                                          cwd=home, env=_clean_environment(home), start_new_session=True)
        os.close(write)
        self._events, self._buf = read, b""
        try:
            event = self._event(time.monotonic() + self.startup_limit)
        except EOFError:  # it died while loading: its log says why
            event = None
        if not event or not event.get("ready"):
            log = (self.workdir / "worker.log").read_text(errors="replace")[-2000:]
            self.close()
            raise SandboxError(f"the grading worker did not start within {self.startup_limit:.0f} s (python -I -m "
                               f"cnet_lib.teacher.sandbox; is cnet_lib installed in {sys.executable}?):\n{log}")

    def close(self) -> None:
        """Stop the worker and everything it started."""
        if self._proc is not None:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self._proc.wait()
            if self._proc.stdin:
                self._proc.stdin.close()
            self._proc = None
        if self._events is not None:
            os.close(self._events)
            self._events = None

    def _event(self, deadline: float) -> Optional[dict]:
        """The next event of the worker, None at ``deadline``; raises EOFError when the worker is gone."""
        while b"\n" not in self._buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self._events], [], [], remaining)
            if not ready:
                return None
            chunk = os.read(self._events, 65536)
            if not chunk:
                raise EOFError("the grading worker stopped")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def run(self, exercise: str, cell: str, cases: list, preamble: str = "") -> Outcome:
        """Run ``cell`` (an exercise cell's source, after the notebook's imports ``preamble``) and the function
        ``exercise`` on the case recipes ``cases``; the outcome within the time limit."""
        if self._proc is None:
            self.start()
        self._jobs += 1
        stem = self.workdir / f"job{self._jobs}"
        job = {"id": self._jobs, "exercise": exercise, "cell": cell, "preamble": preamble, "cases": cases,
               "result": str(stem) + ".json", "stdout": str(stem) + ".out"}
        started = time.monotonic()
        try:
            self._proc.stdin.write((json.dumps(job) + "\n").encode())
            self._proc.stdin.flush()
            outcome = self._wait(job, started + self.time_limit)
        except (EOFError, BrokenPipeError, OSError, ValueError) as err:
            self._restart()
            outcome = Outcome("crashed", detail=f"the grading worker stopped ({err}); it was started again")
        outcome.seconds = time.monotonic() - started
        outcome.output = _tail(Path(job["stdout"]))
        return outcome

    def _wait(self, job: dict, deadline: float) -> Outcome:
        forked = self._event(deadline)
        if forked is None or "forked" not in forked:
            self._restart()
            return Outcome("timeout", detail=f"no result within the time limit of {self.time_limit:g} s")
        done = self._event(deadline)
        if done is None:  # still running: kill the child's process group, the worker reaps it
            try:
                os.killpg(int(forked["forked"]), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            if self._event(time.monotonic() + 30) is None:
                self._restart()
            return Outcome("timeout", detail=f"still running after the time limit of {self.time_limit:g} s (stopped)")
        path = Path(job["result"])
        if done.get("exit") != 0 or not path.is_file():
            how = f"signal {-done['exit']}" if isinstance(done.get("exit"), int) and done["exit"] < 0 else f"exit status {done.get('exit')}"
            return Outcome("crashed", detail=f"the process running it ended without a result ({how})")
        if path.stat().st_size > MAX_RESULT_BYTES:
            return Outcome("crashed", detail="its result is larger than the grader accepts")
        try:
            return Outcome("ok", result=json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, RecursionError) as err:
            return Outcome("crashed", detail=f"its result cannot be read ({type(err).__name__})")

    def _restart(self) -> None:
        self.close()
        self.restarts += 1
        self.start()


def _tail(path: Path) -> str:
    """The end of what a child printed (read from the end: a child may print up to its file cap)."""
    if not path.is_file():
        return ""
    size = path.stat().st_size
    with open(path, "rb") as f:
        f.seek(max(0, size - 4 * MAX_OUTPUT_CHARS))
        text = f.read().decode("utf-8", errors="replace")
    return text if len(text) <= MAX_OUTPUT_CHARS and size <= 4 * MAX_OUTPUT_CHARS else "…" + text[-MAX_OUTPUT_CHARS:]
