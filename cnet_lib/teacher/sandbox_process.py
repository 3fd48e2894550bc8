"""One running sandbox, seen from the grading process: started, read, timed, killed, and turned into an
:class:`Outcome` (:class:`SandboxProcess`; :mod:`.sandbox_client` runs several at a time).

The grading process keeps three read ends: the result pipe (the one way out, read up to
:data:`.result_schema.MAX_RESULT_BYTES`), the rate socket of a job with counted rates (:mod:`.rate_server`), and
bwrap's own messages (its standard output and error until the runner takes them over, the first 4 kB kept, for a
sandbox that cannot start).  The clock of the time limit starts when the runner says it starts the student's
code; before that, the start-up limit applies.  A sandbox past its time, or whose pipe carries more than the cap,
is killed: bwrap with SIGKILL (its PID namespace dies with it) and every process in its cgroup.  Where no cgroup
caps the sandbox's memory, the grading process adds up the memory all the sandbox's processes hold, whatever its
kind (:mod:`.sandbox_memory`: private and shared, memfds, the sandbox's tmpfs), and counts them, five times a
second, and kills the sandbox above either budget.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .cgroups import Cgroup
from .rate_server import MAX_REQUEST_BYTES, CountedRates
from .sandbox_memory import descendants, sandbox_bytes
from .result_schema import MAX_RESULT_BYTES, STARTED, ResultError, parse_channel

__all__ = ["Job", "Outcome", "SandboxProcess"]

MAX_DIAGNOSTIC = 4096
JOIN = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
"""The shell that writes its own pid into each cgroup's ``cgroup.procs``, then execs the command."""
WATCH_EVERY = 0.2  # seconds between two sums of a sandbox's memory (without a cgroup)


@dataclass
class Job:
    """One exercise of one submission: run ``cell`` (after the notebook's imports ``preamble``) and the function
    ``exercise`` on the case ``recipes``; ``key`` identifies it to the caller."""

    exercise: str
    cell: str
    recipes: list
    preamble: str = ""
    key: object = None


@dataclass
class Outcome:
    """How a job ended: ``status`` ``"ok"`` (``result``: the parsed result), ``"timeout"`` or ``"crashed"``
    (``detail`` says how); ``output``: the end of what the student's code printed; ``evaluations``: the counted
    rate evaluations per case index; ``seconds``: the student's code's time."""

    status: str
    result: Optional[dict] = None
    detail: str = ""
    output: str = ""
    seconds: float = 0.0
    evaluations: dict = field(default_factory=dict)


class SandboxProcess:
    """One sandbox of ``job``, started by :meth:`start` with ``command`` (a bwrap command line or, without a
    sandbox, the runner itself), ``result_w`` and ``rate_w`` being the ends it inherits."""

    def __init__(self, job: Job, rates: CountedRates, time_limit: float, startup_limit: float,
                 cgroup: Optional[Cgroup] = None, memory_bytes: int = 0, processes: int = 0,
                 seccomp: Optional[Path] = None):
        self.job, self.rates, self.cgroup = job, rates, cgroup
        self.filter_fd = os.open(seccomp, os.O_RDONLY | os.O_CLOEXEC) if seccomp is not None else None
        self.time_limit, self.startup_limit, self.memory_bytes = time_limit, startup_limit, memory_bytes
        self.processes = processes or 1 << 30
        self.result_r, self.result_w = os.pipe()
        pair = socket.socketpair() if rates else (None, None)
        self.rate_sock, self.rate_child = pair
        self.chunks, self.size, self.diagnostic, self.requests = [], 0, b"", b""
        self.proc: Optional[subprocess.Popen] = None
        self.spawned = self.started = self.ended = 0.0
        self.killed_for = ""
        self.open_fds = {self.result_r}
        self._watched = 0.0

    def child_fds(self) -> tuple[int, ...]:
        """The descriptors the sandbox inherits (the result pipe, and the rate socket if any)."""
        return (self.result_w,) + ((self.rate_child.fileno(),) if self.rate_child else ())

    def _bwrap_fds(self) -> tuple[int, ...]:
        """The descriptors bwrap itself reads (the system call filter)."""
        return (self.filter_fd,) if self.filter_fd is not None else ()

    def start(self, command: list, env: dict, cwd: str, own_session: bool) -> None:
        """Start ``command``, inside the sandbox's cgroup when it has one (a shell enters it, then becomes the
        command: everything the command starts stays in the cgroup)."""
        if self.cgroup is not None:
            command = ["/bin/sh", "-c", JOIN, "cnet-grade-join", *map(str, self.cgroup.join_files()), "--", *command]
        self.proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     pass_fds=self.child_fds() + self._bwrap_fds(), env=env, cwd=cwd,
                                     start_new_session=own_session)
        self.spawned = time.monotonic()
        os.close(self.result_w)
        if self.filter_fd is not None:
            os.close(self.filter_fd)
            self.filter_fd = None
        if self.rate_child:
            self.rate_child.close()
            self.rate_sock.settimeout(0.5)  # a sandbox that sends requests and reads no reply stalls no one long
            self.open_fds.add(self.rate_sock.fileno())
        os.set_blocking(self.result_r, False)
        os.set_blocking(self.proc.stdout.fileno(), False)
        self.open_fds.add(self.proc.stdout.fileno())

    # ------------------------------------------------------------------ reading
    def readable(self, fd: int) -> None:
        """Read what is there on ``fd`` (one of :attr:`open_fds`)."""
        if self.rate_sock is not None and fd == self.rate_sock.fileno():
            return self._serve()
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return None
        if not chunk:
            return self._closed(fd)
        if fd != self.result_r:
            self.diagnostic = (self.diagnostic + chunk)[:MAX_DIAGNOSTIC]
            return None
        self.chunks.append(chunk)
        self.size += len(chunk)
        if not self.started and b"".join(self.chunks[:2]).startswith(STARTED):
            self.started = time.monotonic()
        if self.size > MAX_RESULT_BYTES:
            self.kill(f"its result is larger than the grader reads ({MAX_RESULT_BYTES // 2**20} MiB)")
            self._closed(fd)

    def _closed(self, fd: int) -> None:
        self.open_fds.discard(fd)

    def _serve(self) -> None:
        try:
            chunk = self.rate_sock.recv(1 << 16)
        except OSError:
            chunk = b""
        if not chunk:
            return self._closed(self.rate_sock.fileno())
        self.requests += chunk
        while b"\n" in self.requests:
            line, self.requests = self.requests.split(b"\n", 1)
            try:
                self.rate_sock.sendall(self.rates.answer(line))
            except OSError:
                return self._closed(self.rate_sock.fileno())
        if len(self.requests) > MAX_REQUEST_BYTES:
            self.requests = b""
            self._closed(self.rate_sock.fileno())  # a request too long: the rate stops answering

    # ------------------------------------------------------------------ time and the end
    def tick(self, now: float) -> None:
        """Kill the sandbox when it is past its time, or (without a cgroup) over its memory."""
        if self.proc is None or self.killed_for or self.proc.poll() is not None:
            return
        if self.cgroup is None and self.memory_bytes and now > self._watched + WATCH_EVERY:
            self._watched = now
            pids = descendants(self.proc.pid)
            if sandbox_bytes(pids) > self.memory_bytes:
                return self.kill(f"out of memory: the sandbox's processes held more than "
                                 f"{self.memory_bytes / 2**30:g} GiB together (the grader stopped it)")
            if len(pids) > self.processes + 3:  # bwrap's own two and setpriv's, besides the sandbox's
                return self.kill(f"more than {self.processes} processes (the grader stopped the sandbox)")
        if self.started and now > self.started + self.time_limit:
            self.kill(f"still running after the time limit of {self.time_limit:g} s (the sandbox was stopped)")
        elif not self.started and now > self.spawned + self.startup_limit:
            self.kill(f"the sandbox did not start the student's code within {self.startup_limit:g} s")

    def kill(self, why: str) -> None:
        """Stop the whole sandbox (bwrap and its PID namespace, every process of its cgroup)."""
        self.killed_for = self.killed_for or why
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL) if self._own_group() else self.proc.kill()
            except (ProcessLookupError, PermissionError):
                pass
        if self.cgroup is not None:
            self.cgroup.kill()

    def _own_group(self) -> bool:
        try:
            return os.getpgid(self.proc.pid) == self.proc.pid
        except OSError:
            return False

    def finished(self) -> bool:
        """Whether the sandbox has ended and its pipes are drained (or it was killed)."""
        if self.proc is None or self.proc.poll() is None:
            return False
        if not self.ended:
            self.ended = time.monotonic()
        drained = self.result_r not in self.open_fds
        return drained or time.monotonic() > self.ended + 5.0  # a pipe held open by nothing more of it

    def outcome(self) -> Outcome:
        """What the job came to (call once :meth:`finished`)."""
        seconds = (self.ended or time.monotonic()) - (self.started or self.ended or time.monotonic())
        evaluations = {i: self.rates.evaluations(i) for i in self.rates.by_case} if self.rates else {}
        oom = self.cgroup is not None and self.cgroup.oom_killed()
        memory = f"out of memory: the sandbox's {self.memory_bytes / 2**30:g} GiB were used up (the kernel stopped a process)"
        if self.killed_for and not oom:
            status = "timeout" if "time limit" in self.killed_for else "crashed"
            return Outcome(status, detail=self.killed_for, seconds=seconds)
        try:
            result = parse_channel(b"".join(self.chunks), len(self.job.recipes))
        except ResultError as err:
            return Outcome("crashed", detail=memory if oom else self._no_result(str(err)), seconds=seconds)
        return Outcome("ok", result=result, output=result.get("output", ""), seconds=seconds, evaluations=evaluations,
                       detail=memory if oom else "")

    def _no_result(self, why: str) -> str:
        code = self.proc.returncode if self.proc is not None else None
        how = f"signal {-code}" if isinstance(code, int) and code < 0 else f"exit status {code}"
        text = f"the sandbox ended without a result it could read ({why}; {how})"
        if not self.started and self.diagnostic:
            text += ": " + self.diagnostic.decode("utf-8", errors="replace").strip()[-600:]
        return text

    def close(self) -> None:
        """Kill what is left, close the descriptors and remove the cgroup."""
        if self.proc is not None and self.proc.poll() is None:
            self.kill("the grader stopped")
            self.proc.wait()
        for fd in (self.result_r,) + self._bwrap_fds():
            try:
                os.close(fd)
            except OSError:
                pass
        for sock in (self.rate_sock, self.rate_child):
            if sock is not None:
                sock.close()
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()
        if self.cgroup is not None:
            self.cgroup.remove()
