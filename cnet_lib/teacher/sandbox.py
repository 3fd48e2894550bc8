"""The grading process's side of the sandboxes: one sandbox per submission and exercise, several at a time, and
nothing that comes out of one trusted.

:class:`Sandbox` (a context manager over a private work folder) writes the students' build of the library
(:class:`.absent.GradingLibrary`), finds the isolation this machine offers and the cgroups for its limits
(:mod:`.isolation`), and runs jobs (:meth:`Sandbox.run_many`; :meth:`Sandbox.run` for one): for each job it writes
the job file, starts the runner (:mod:`.runner`) in a fresh sandbox with the exercise's absent code taken out, and
from then on only reads (:class:`SandboxProcess`).  Nothing of a sandbox outlives it: its job file and its cgroup
are removed as it ends, and the work folder with the context.

**Reading one sandbox** (:class:`SandboxProcess`).  The grading process keeps three read ends: the result pipe (the
one way out, read up to :data:`MAX_RESULT_BYTES`), the rate socket of a job with counted rates, and bwrap's own
messages (the first 4 kB kept, for a sandbox that cannot start).  The clock of the time limit starts when the
runner says it starts the student's code; before that, the start-up limit applies.  A sandbox past its time, or
whose pipe carries more than the cap, is killed: bwrap with SIGKILL (its PID namespace dies with it) and every
process in its cgroup.  Where no cgroup caps its memory, the grading process sums what its processes hold
(:func:`.isolation.sandbox_bytes`) and counts them, five times a second, and kills it above either budget.

**The one way out** (:func:`parse_channel`): exactly two JSON lines, ``{"started": true}`` and the result, checked
field by field (:class:`ResultError` for an unknown key, a wrong type, a string or a list too long, a value nested
too deep, a tensor whose data do not fill its shape, more elements than the grader decodes):

* ``{"kind": "cases", "cases": [case, ...], "failed_imports": [str], "output": str}`` with one case per case
  asked for, each ``{"value": value}`` or ``{"error": str, "where": str}``;
* ``{"kind": "cell_error", "error": str, "where": str, "failed_imports": [str], "output": str}``;
* ``{"kind": "not_done", "output": str}``;

each may hold ``"second_copies": [str]`` (:class:`.runner.LoadWatch`).  A ``value`` is what
:func:`cnet_lib.book.exercises.recipes.encode` writes: JSON scalars, or ``{"$": "tensor" | "array", "dtype",
"shape", "data"}``, ``{"$": "list" | "tuple", "items": [...]}``, ``{"$": "dict", "items": {str: value}}``,
``{"$": "unsupported", "type": str}``.

**Rates counted outside** (:class:`CountedRates`): an exercise that counts a rate's evaluations (an embedded pair
takes s of them, not 2s) has them evaluated and counted here, where the student's code cannot reach the counter.
Each counted rate of a job's recipes stays here and the sandbox gets a stand-in (``{"$": "counted_rate", "ident",
"label"}``: :class:`.runner.CountedRate`) with no copy of the function and no parameter of the rate in its label;
each evaluation is a request ``{"id", "t", "x"}`` on the rate socket, checked (its keys, its rate, a finite ``t``,
a floating-point tensor of at most 4 dimensions and a million elements, none empty) before anything of it is used,
and a request that fails a check is refused, never an error of the grading process.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import secrets
import selectors
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Optional

import torch

from ..book.exercises.catalogue import exercise as public_exercise
from ..book.exercises.recipes import DTYPES, MAX_ELEMENTS, Rate, build, decode, encode
from .absent import GradingLibrary, absent_message, installed_package, package_folder, plan
from .isolation import (Cgroup, Cgroups, Isolation, Limits, SandboxError, bwrap_command, descendants, find_isolation,
    namespace_filter, sandbox_bytes, sandbox_environment)

__all__ = ["Sandbox", "SandboxProcess", "Job", "Outcome", "SandboxError", "Limits", "Cgroups", "default_jobs",
           "CountedRates", "ResultError", "check_value", "parse_result", "parse_channel", "MAX_RESULT_BYTES", "STARTED"]

RUNNER = Path(__file__).with_name("runner.py")
INSIDE = "/grader"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
"""The search path bwrap starts with (it and setpriv are named by their full paths; nothing of the teacher's
environment reaches a sandbox)."""
MAX_RESULT_BYTES = 32 * 2**20
MAX_TEXT = 8000
MAX_DEPTH = 32
STARTED = b'{"started": true}\n'
MAX_DIAGNOSTIC = 4096
JOIN = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
"""The shell that writes its own pid into each cgroup's ``cgroup.procs``, then execs the command."""
WATCH_EVERY = 0.2  # seconds between two sums of a sandbox's memory (without a cgroup)
MAX_REQUEST_BYTES = 1 << 20
MAX_EVALUATIONS = 20_000
RATE_LABEL = "f (a rate the grader evaluates and counts)"


# ----------------------------------------------------------------------------- the one way out
class ResultError(ValueError):
    """The sandbox's output is not a result of the schema; the message says what is wrong."""


def _text(value, where: str, limit: int = MAX_TEXT) -> str:
    if not isinstance(value, str) or len(value) > limit:
        raise ResultError(f"{where} is not a string of at most {limit} characters")
    return value


def _keys(data, allowed: set, required: set, where: str) -> dict:
    if not isinstance(data, dict) or not required <= set(data) <= allowed:
        raise ResultError(f"{where} must have the keys {sorted(required)} (and may have {sorted(allowed - required)})")
    return data


def _number(x) -> bool:
    return type(x) in (float, bool) or (type(x) is int and -2**63 <= x < 2**64)


def _check_array(data: dict, where: str, budget: list) -> None:
    _keys(data, {"$", "dtype", "shape", "data"}, {"$", "dtype", "shape", "data"}, where)
    if data["dtype"] not in DTYPES:
        raise ResultError(f"{where}: dtype {str(data['dtype'])[:40]!r} is not one of {', '.join(DTYPES)}")
    shape, flat = data["shape"], data["data"]
    if not isinstance(shape, list) or len(shape) > MAX_DEPTH or not all(type(n) is int and 0 <= n <= MAX_ELEMENTS
                                                                           for n in shape):
        raise ResultError(f"{where}: the shape is not a list of at most {MAX_DEPTH} sizes of at most {MAX_ELEMENTS}")
    if not isinstance(flat, list) or math.prod(shape) != len(flat) or not all(_number(x) for x in flat):
        raise ResultError(f"{where}: the data are not {math.prod(shape)} numbers")
    budget[0] -= len(flat)


def check_value(value, where: str = "value", depth: int = 0, budget: list = None) -> None:
    """Raise ResultError unless ``value`` is an encoded value (see the module doc)."""
    budget = [MAX_ELEMENTS] if budget is None else budget
    if depth > MAX_DEPTH:
        raise ResultError(f"{where} is nested deeper than {MAX_DEPTH}")
    if value is None or _number(value):
        return
    if isinstance(value, str):
        _text(value, where)
        return
    if not isinstance(value, dict) or value.get("$") not in ("tensor", "array", "list", "tuple", "dict", "unsupported"):
        raise ResultError(f"{where} is not an encoded value")
    kind = value["$"]
    if kind in ("tensor", "array"):
        _check_array(value, where, budget)
    elif kind == "unsupported":
        _text(_keys(value, {"$", "type"}, {"$", "type"}, where)["type"], where, 200)
    else:
        items = _keys(value, {"$", "items"}, {"$", "items"}, where)["items"]
        if not isinstance(items, dict if kind == "dict" else list):
            raise ResultError(f"{where}: the items of a {kind} are not a {'dict' if kind == 'dict' else 'list'}")
        budget[0] -= len(items)
        for key, item in (items.items() if kind == "dict" else enumerate(items)):
            if kind == "dict":
                _text(key, f"{where}: a key", 200)
            check_value(item, f"{where}[{key!r}]", depth + 1, budget)
    if budget[0] < 0:
        raise ResultError(f"{where} holds more than {MAX_ELEMENTS} elements")


def _check_case(case, i: int) -> None:
    if isinstance(case, dict) and set(case) == {"value"}:
        check_value(case["value"], f"case {i + 1}")
        return
    _keys(case, {"error", "where"}, {"error", "where"}, f"case {i + 1}")
    _text(case["error"], f"case {i + 1}'s error")
    _text(case["where"], f"case {i + 1}'s line")


def parse_result(line: bytes, n_cases: int) -> dict:
    """The result in ``line`` (one JSON line), checked against the schema for ``n_cases`` cases."""
    try:
        data = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise ResultError(f"the result is not JSON ({type(err).__name__})") from None
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind == "cases":
        _keys(data, {"kind", "cases", "failed_imports", "output", "second_copies"},
              {"kind", "cases", "failed_imports", "output"}, "result")
        if not isinstance(data["cases"], list) or len(data["cases"]) != n_cases:
            raise ResultError(f"the result holds other cases than the {n_cases} asked for")
        for i, case in enumerate(data["cases"]):
            _check_case(case, i)
    elif kind == "cell_error":
        _keys(data, {"kind", "error", "where", "failed_imports", "output", "second_copies"},
              {"kind", "error", "where", "failed_imports", "output"}, "result")
        _text(data["error"], "the cell's error")
        _text(data["where"], "the cell's line")
    elif kind == "not_done":
        _keys(data, {"kind", "output", "second_copies"}, {"kind", "output"}, "result")
    else:
        raise ResultError("the result has no known kind")
    for name, limit in (("failed_imports", 200), ("second_copies", 20)):
        if not isinstance(data.get(name, []), list) or len(data.get(name, [])) > limit:
            raise ResultError(f"{name} is not a short list")
        for item in data.get(name, []):
            _text(item, f"an item of {name}")
    _text(data["output"], "the output")
    return data


def parse_channel(data: bytes, n_cases: int) -> dict:
    """The result from everything the sandbox wrote to its pipe: exactly :data:`STARTED` and one result line."""
    if not data.startswith(STARTED):
        raise ResultError("the sandbox did not start the student's code" if not data else
                          "the pipe carried something before the start line")
    rest = data[len(STARTED):]
    if not rest:
        raise ResultError("no result came back")
    if rest.count(b"\n") != 1 or not rest.endswith(b"\n"):
        raise ResultError("the pipe carried more (or less) than one result line")
    return parse_result(rest[:-1], n_cases)


# ----------------------------------------------------------------------------- rates counted outside
class CountedRates:
    """The counted rates of one job's cases (see the module doc); ``sent`` are the recipes the sandbox gets."""

    def __init__(self, recipes: list):
        self.rates: dict[int, Rate] = {}
        self.by_case: dict[int, int] = {}
        self.sent = [self._swap(i, r) for i, r in enumerate(recipes)]
        self.refused = 0

    def __bool__(self) -> bool:
        return bool(self.rates)

    def _swap(self, case: int, recipe: dict) -> dict:
        def swap(value):
            if isinstance(value, dict) and value.get("$") == "rate" and value.get("counted"):
                ident = len(self.rates)
                self.rates[ident] = build(value)
                self.by_case[case] = ident  # as recipes.observed: the counted rate of a case
                return {"$": "counted_rate", "ident": ident, "label": RATE_LABEL}
            return value

        return {**recipe, "args": [swap(a) for a in recipe.get("args", [])],
                "kwargs": {k: swap(v) for k, v in recipe.get("kwargs", {}).items()}}

    def evaluations(self, case: int) -> Optional[int]:
        """How often the sandbox evaluated case ``case``'s counted rate (None: the case has none)."""
        ident = self.by_case.get(case)
        return None if ident is None else self.rates[ident].calls

    def answer(self, line: bytes) -> bytes:
        """The reply (one JSON line) to one request line of the sandbox; never raises (a request the grader does
        not accept, however it fails, is answered with an error and counted as refused, not as an evaluation)."""
        try:
            ident, t, x = self._request(line)
        except Exception as err:  # noqa: BLE001 - any malformed request: refused, whatever it is
            self.refused += 1
            return (json.dumps({"error": f"a request the grader does not accept ({err})"[:300]}) + "\n").encode()
        rate = self.rates[ident]
        try:
            with torch.no_grad():
                value = rate(x) if t is None else rate(t, x)
            reply = {"value": encode(value)}
        except Exception as err:  # noqa: BLE001 - the student's state of a wrong shape: said, and counted
            reply = {"error": f"{type(err).__name__}: {err}"[:300]}
        return (json.dumps(reply) + "\n").encode()

    def _request(self, line: bytes) -> tuple:
        data = json.loads(line.decode("utf-8"))
        if not isinstance(data, dict) or set(data) != {"id", "t", "x"}:
            raise ResultError("a request is {id, t, x}")
        ident, t = data["id"], data["t"]
        if type(ident) is not int or ident not in self.rates:
            raise ResultError(f"no counted rate {str(ident)[:20]}")
        if t is not None and (type(t) not in (int, float) or not math.isfinite(float(t))):
            raise ResultError("t is not a finite number")
        if sum(r.calls for r in self.rates.values()) >= MAX_EVALUATIONS:
            raise ResultError(f"more than {MAX_EVALUATIONS} evaluations")
        check_value(data["x"], "x")
        if not isinstance(data["x"], dict) or data["x"].get("$") != "tensor":
            raise ResultError("x is not a tensor")
        if math.prod(data["x"]["shape"]) == 0 or len(data["x"]["shape"]) > 4:
            raise ResultError("x is an empty tensor or has more than 4 dimensions")
        x = decode(data["x"])
        if not x.is_floating_point():
            raise ResultError("x is not a floating-point tensor")
        return ident, t, x.to(torch.float64)


# ----------------------------------------------------------------------------- one sandbox
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
    """One running sandbox of ``job``, seen from the grading process (see the module doc): started by
    :meth:`start`, read, timed, killed, and turned into an :class:`Outcome`."""

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

    def readable(self, fd: int) -> None:
        """Read what is there on ``fd`` (one of :attr:`open_fds`)."""
        if self.rate_sock is not None and fd == self.rate_sock.fileno():
            return self._serve()
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return None
        if not chunk:
            return self.open_fds.discard(fd)
        if fd != self.result_r:
            self.diagnostic = (self.diagnostic + chunk)[:MAX_DIAGNOSTIC]
            return None
        self.chunks.append(chunk)
        self.size += len(chunk)
        if not self.started and b"".join(self.chunks[:2]).startswith(STARTED):
            self.started = time.monotonic()
        if self.size > MAX_RESULT_BYTES:
            self.kill(f"its result is larger than the grader reads ({MAX_RESULT_BYTES // 2**20} MiB)")
            self.open_fds.discard(fd)

    def _serve(self) -> None:
        try:
            chunk = self.rate_sock.recv(1 << 16)
        except OSError:
            chunk = b""
        if not chunk:
            return self.open_fds.discard(self.rate_sock.fileno())
        self.requests += chunk
        while b"\n" in self.requests:
            line, self.requests = self.requests.split(b"\n", 1)
            try:
                self.rate_sock.sendall(self.rates.answer(line))
            except OSError:
                return self.open_fds.discard(self.rate_sock.fileno())
        if len(self.requests) > MAX_REQUEST_BYTES:
            self.requests = b""
            self.open_fds.discard(self.rate_sock.fileno())  # a request too long: the rate stops answering

    def tick(self, now: float) -> None:
        """Kill the sandbox when it is past its time, or (without a cgroup) over its memory or processes."""
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


# ----------------------------------------------------------------------------- many sandboxes
def default_jobs(limits: Limits) -> int:
    """Sandboxes at a time: one per CPU core, as many as the memory holds (at most 8)."""
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        memory = 2 * limits.memory_bytes
    return max(1, min(os.cpu_count() or 1, 8, memory // (2 * limits.memory_bytes)))


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
        self.filter = None
        if self.isolation.mode != "none" and (program := namespace_filter()) is not None:
            self.filter = self.workdir / "seccomp.bpf"
            self.filter.write_bytes(program)
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
        hidden = [Path(f) for f in (package_folder(m) for m in plan(job.exercise).hidden) if f]
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
