"""The grading process's side of the sandboxes: one sandbox per submission and exercise, several at a time.

:class:`Sandbox` (a context manager over a private work folder) writes the students' build of the library
(:mod:`.grading_library`), finds the isolation this machine offers (:mod:`.isolation`) and the cgroups for its
limits (:mod:`.cgroups`), and runs jobs (:meth:`Sandbox.run_many`; :meth:`Sandbox.run` for one): for each job it
writes the job file, starts the runner (:mod:`.sandbox`) in a fresh sandbox with the exercise's absent code taken
out (:mod:`.absent`), and from then on only reads (:mod:`.sandbox_process`): the result pipe, parsed strictly once
the sandbox has ended, and the rate socket of a job whose rate evaluations count.  Nothing of a sandbox outlives
it: its job file and its cgroup are removed as it ends, and the work folder with the context.
"""
from __future__ import annotations

import dataclasses
import json
import os
import secrets
import selectors
import sys
import time
from collections import deque
from pathlib import Path
from typing import Iterable, Iterator, Optional

from ..book.exercises.registry import exercise as public_exercise
from .absent import package_folder, plan
from .cgroups import Cgroups
from .grading_library import GradingLibrary, installed_package
from .isolation import Isolation, SandboxError, bwrap_command, find_isolation
from .limits import Limits, sandbox_environment
from .rate_server import CountedRates
from .seccomp import namespace_filter
from .sandbox_process import Job, Outcome, SandboxProcess
from .stubbing import absent_message

__all__ = ["Sandbox", "Outcome", "Job", "SandboxError", "Limits", "default_jobs"]

RUNNER = Path(__file__).with_name("sandbox.py")
INSIDE = "/grader"


def default_jobs(limits: Limits) -> int:
    """Sandboxes at a time: one per CPU core, as many as the memory holds (at most 8)."""
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        memory = 2 * limits.memory_bytes
    return max(1, min(os.cpu_count() or 1, 8, memory // (2 * limits.memory_bytes)))


SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
"""The search path bwrap starts with (it and setpriv are named by their full paths; nothing of the teacher's
environment reaches a sandbox)."""


def seccomp_file(path: Path) -> Optional[Path]:
    """The sandbox's system call filter (:mod:`.seccomp`) written to ``path`` (None on an architecture it does
    not know: the sandbox then runs without one, and says so)."""
    program = namespace_filter()
    if program is None:
        return None
    path.write_bytes(program)
    return path


class Sandbox:
    """Runs jobs in sandboxes (see the module doc); ``workdir`` must be a private, empty folder; ``unsafe`` runs
    them without one (``--unsafe-no-sandbox``); ``jobs`` sandboxes at a time (default: :func:`default_jobs`)."""

    def __init__(self, workdir: Path, limits: Limits = Limits(), unsafe: bool = False, jobs: Optional[int] = None):
        self.workdir, self.limits = Path(workdir), limits
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.isolation: Isolation = find_isolation(self.workdir, unsafe)
        self.cgroups = Cgroups.find(f"cnet-grade-{os.getpid()}-{secrets.token_hex(4)}")
        self.jobs = jobs or default_jobs(limits)
        if self.cgroups is None and self.isolation.mode == "root":
            self.jobs = 1  # nobody's process count is shared by every sandbox of the machine: one at a time
        self.mount_point = installed_package() if self.isolation.mode != "none" else None
        self.library = GradingLibrary(self.workdir / "library", self.mount_point)
        (self.workdir / "empty").mkdir(mode=0o755)
        (self.workdir / "jobs").mkdir()
        self.filter = seccomp_file(self.workdir / "seccomp.bpf") if self.isolation.mode != "none" else None
        self._n = 0

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.cgroups is not None:
            self.cgroups.remove()
            self.cgroups = None

    def describe(self) -> str:
        """The isolation and the limits, in words (the gradebook's record)."""
        calls = "; system calls filtered (no namespaces, no System V memory, no keyring)" if self.filter else ""
        return f"{self.isolation.describe()}{calls}; limits {self.limits.describe(self.cgroups is not None)}"

    # ------------------------------------------------------------------ one job
    def _job_file(self, job: Job, rates: CountedRates, cgroup: bool) -> Path:
        p = plan(job.exercise)
        self._n += 1
        data = {"exercise": job.exercise, "cell": job.cell, "preamble": job.preamble, "cases": rates.sent,
                "no_grad": bool(public_exercise(job.exercise).no_grad),
                "message": absent_message(job.exercise, "{what}"),
                "outside": dataclasses.asdict(p.outside) | {"packages": list(p.hidden)},
                "limits": self.limits.runner_limits(cgroup)}
        path = self.workdir / "jobs" / f"job{self._n}.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        path.chmod(0o644)  # the runner reads it as uid 65534 (it holds this student's cases, nothing of the key)
        return path

    def _command(self, job: Job, job_file: Path, proc: SandboxProcess) -> tuple[list, dict, str]:
        fds = [str(fd) for fd in proc.child_fds()]
        if self.isolation.mode == "none":
            env = sandbox_environment() | {"PYTHONPATH": str(self.library.folder(job.exercise)),
                                           "HOME": str(self.workdir), "TMPDIR": str(self.workdir)}
            return [sys.executable, "-s", str(RUNNER), str(job_file), *fds], env, str(self.workdir)
        p = plan(job.exercise)
        hidden = [Path(f) for f in (package_folder(m) for m in p.hidden) if f]
        files = [(RUNNER, f"{INSIDE}/run.py"), (job_file, f"{INSIDE}/job.json")]
        cmd = bwrap_command(self.isolation, library=(self.library.folder(job.exercise) / "cnet_lib", self.mount_point),
                            overlays=self.library.overlays(job.exercise), hidden=hidden, files=files,
                            empty=self.workdir / "empty", tmp_bytes=self.limits.tmp_bytes, env=sandbox_environment(),
                            argv=[sys.executable, "-I", f"{INSIDE}/run.py", f"{INSIDE}/job.json", *fds],
                            seccomp_fd=proc.filter_fd)
        return cmd, {"PATH": SYSTEM_PATH}, str(self.workdir)

    def _start(self, job: Job) -> tuple[SandboxProcess, Path]:
        rates = CountedRates(job.recipes)
        try:
            cgroup = self.cgroups.make(self.limits.memory_bytes, self.limits.processes) if self.cgroups else None
        except OSError:  # the hierarchy went away: the per-process limits and the watchdog stand in
            cgroup = None
        job_file = self._job_file(job, rates, cgroup is not None)
        proc = SandboxProcess(job, rates, self.limits.time_limit, self.limits.startup_limit, cgroup,
                              self.limits.memory_bytes, self.limits.processes, self.filter)
        try:
            cmd, env, cwd = self._command(job, job_file, proc)
            proc.start(cmd, env, cwd, own_session=self.isolation.mode == "none")
        except BaseException:
            proc.close()
            job_file.unlink(missing_ok=True)
            raise
        return proc, job_file

    # ------------------------------------------------------------------ many jobs
    def run_many(self, jobs: Iterable[Job]) -> Iterator[tuple[Job, Outcome]]:
        """Run ``jobs``, :attr:`jobs` at a time, in order of submission; yields ``(job, outcome)`` as each ends."""
        pending, running = deque(jobs), []
        selector = selectors.DefaultSelector()
        try:
            while pending or running:
                while pending and len(running) < self.jobs:
                    job = pending.popleft()
                    try:
                        running.append(self._start(job))
                    except Exception as err:  # noqa: BLE001 - a job that cannot start is its own crash, not the run's
                        yield job, Outcome("crashed", detail=f"the sandbox could not start ({type(err).__name__}: {err})")
                        continue
                    for fd in running[-1][0].open_fds:
                        selector.register(fd, selectors.EVENT_READ, running[-1][0])
                for key, _ in selector.select(timeout=0.05):
                    key.data.readable(key.fd)
                    if key.fd not in key.data.open_fds:
                        selector.unregister(key.fd)
                now = time.monotonic()
                for proc, job_file in list(running):
                    proc.tick(now)
                    if proc.finished():
                        running.remove((proc, job_file))
                        yield proc.job, self._end(proc, job_file, selector)
        finally:
            for proc, job_file in running:
                self._end(proc, job_file, selector)
            selector.close()

    def _end(self, proc: SandboxProcess, job_file: Path, selector) -> Outcome:
        for fd in list(proc.open_fds):
            try:
                selector.unregister(fd)
            except (KeyError, ValueError):
                pass
        outcome = proc.outcome()
        proc.close()
        job_file.unlink(missing_ok=True)
        return outcome

    def run(self, exercise: str, cell: str, cases: list, preamble: str = "") -> Outcome:
        """One job: ``cell`` and the function ``exercise`` on the case recipes ``cases``."""
        ((_, outcome),) = list(self.run_many([Job(exercise, cell, cases, preamble)]))
        return outcome
