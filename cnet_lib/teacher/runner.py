"""The grader's runner, the one program a sandbox starts: ``python -I runner.py JOB RESULT_FD [RATE_FD]``.

It runs inside the sandbox (:mod:`.isolation`), where this file and the job are mounted read-only and the library
is the students' build of cnet_lib for the exercise (:mod:`.absent`); it imports nothing of the teacher's.  In order:

1. reads the job (the exercise, its cell and the imports above it, the cases as recipes, the limits, what is
   taken out outside the library), builds the cases' arguments, and starts the rates whose evaluations count
   (:class:`CountedRate`: each evaluation is a request to the grading process, which computes and counts it);
2. takes out what the exercise asks for beyond the library's files: torch operators get a kernel that raises,
   in the dispatcher, for every dispatch key that has one (fake quantization in every form, upsampling), C
   functions leave their modules (numpy's ``interp``), hidden packages cannot be imported;
3. lowers its resource limits (processes, file size, CPU time, core dumps; address space where no cgroup caps
   the sandbox's memory), sends its output to a file of its private ``/tmp`` and says ``{"started": true}``;
4. runs the cell and the student's function on every case (each on a deep copy of its arguments), noting every
   code file run as a module under another name than its own (:class:`LoadWatch`: a second copy of a package);
5. writes one JSON line, the result (``{"kind": "cases" | "cell_error" | "not_done", ...}``, values as data), to
   ``RESULT_FD``, and exits.

Nothing the student's code does here is trusted: the grading process reads the result pipe with a size cap,
parses it strictly (:func:`.sandbox.parse_channel`), counts the rates' evaluations itself and compares with its
own references.
"""
from __future__ import annotations

import ast
import copy
import ctypes
import importlib
import json
import linecache
import os
import re
import resource
import signal
import sys
import tempfile
import warnings
from typing import Any

import torch

from cnet_lib.book.exercises.framework import is_stub, student_frame
from cnet_lib.book.exercises.recipes import BUILDERS, build_call, decode, encode, observed

__all__ = ["main", "run_job", "CountedRate", "remove_operators", "LoadWatch"]

MAX_TEXT = 2000  # characters of an error message kept
MAX_OUTPUT = 4000  # characters of the student's output sent back
CELL = "<exercise cell>"  # the file name of the exercise cell in tracebacks
DISPATCH_KEYS = ("CPU", "CUDA", "QuantizedCPU", "QuantizedCUDA", "SparseCPU", "CompositeImplicitAutograd",
                 "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional", "Autograd", "AutogradCPU",
                 "AutogradCUDA", "AutogradOther", "Tracer", "ADInplaceOrView", "BackendSelect", "Functionalize")


class CountedRate:
    """A rate ``f(t, x)`` computed by the grading process, which counts every evaluation (the student's code has
    no copy of the function to call instead)."""

    def __init__(self, ident: int, label: str, fd: int):
        self.ident, self.label, self.fd = int(ident), str(label), int(fd)

    def __call__(self, *args):
        t, x = (None, args[0]) if len(args) == 1 else args
        request = {"id": self.ident, "t": None if t is None else float(t), "x": encode(torch.as_tensor(x))}
        _send(self.fd, (json.dumps(request) + "\n").encode())
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                raise RuntimeError("the rate is gone (the grader stopped answering)")
            reply += chunk
        data = json.loads(reply)
        if "error" in data:
            raise ValueError(f"the rate could not be evaluated: {data['error']}")
        value = decode(data["value"])
        return value.to(dtype=x.dtype) if isinstance(x, torch.Tensor) and value.is_floating_point() else value

    def __repr__(self) -> str:
        return self.label


def _raiser(message: str):
    def absent(*args, **kwargs):
        raise NotImplementedError(message)
    return absent


def remove_operators(pattern: str, message: str) -> int:
    """Give every torch operator whose name matches ``pattern`` a kernel that raises ``message`` for every dispatch
    key that has one; the registrations are kept alive and out of the Python heap's reach.  Returns how many."""
    rx, libraries, n = re.compile(pattern), {}, 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Overriding a previously registered kernel": that is the point
        for full in torch._C._dispatch_get_all_op_names():
            if not rx.search(full):
                continue
            namespace, name = full.split("::", 1)
            for key in DISPATCH_KEYS:
                if torch._C._dispatch_has_kernel_for_dispatch_key(full, key):
                    lib = libraries.setdefault(namespace, torch._C._dispatch_library("IMPL", namespace, ""))
                    lib.impl(name, key, _raiser(message.format(what=f"torch's {full}")))
                    n += 1
    for lib in libraries.values():  # never freed (freeing would undo the registrations), never reachable
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(lib))
    return n


class _Hidden:
    """A meta-path finder that says, for a package taken out for the exercise, why it cannot be imported."""

    def __init__(self, names: list, message: str):
        self.names, self.message = tuple(names), message

    def find_spec(self, name, path=None, target=None):
        if any(name == n or name.startswith(n + ".") for n in self.names):
            raise ModuleNotFoundError(self.message.format(what=name), name=name)
        return None


def take_out(outside: dict, message: str) -> None:
    """Step 2 of the module doc, for ``outside`` (:class:`.absent.Outside` as data)."""
    if outside.get("operators"):
        remove_operators(outside["operators"], message)
    for item in outside.get("attributes", ()):
        module, name = item.split(":")
        mod = sys.modules.get(module) or importlib.import_module(module)
        if hasattr(mod, name):
            delattr(mod, name)
    if outside.get("packages"):
        for name in [m for m in sys.modules if any(m == p or m.startswith(p + ".") for p in outside["packages"])]:
            del sys.modules[name]
        sys.meta_path.insert(0, _Hidden(list(outside["packages"]), message))


def _limit(limits: dict) -> None:
    """Step 3's limits (hard and soft alike, so the student's code cannot raise them again)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the cap raises OSError instead of killing
    for name, value in (("RLIMIT_NPROC", limits.get("processes")), ("RLIMIT_FSIZE", limits.get("file_bytes")),
                        ("RLIMIT_CPU", limits.get("cpu_seconds")), ("RLIMIT_AS", limits.get("address_space")),
                        ("RLIMIT_CORE", 0), ("RLIMIT_NOFILE", limits.get("files"))):
        if value is not None and hasattr(resource, name):
            resource.setrlimit(getattr(resource, name), (int(value), int(value)))


def _preamble(source: str, ns: dict) -> list[str]:
    """Run the notebook's imports (one statement at a time); the ones that fail are listed, not fatal."""
    failed = []
    try:
        statements = ast.parse(source).body
    except SyntaxError:
        return ["the imports above the exercise do not parse"]
    for stmt in statements:
        try:
            exec(compile(ast.Module([stmt], []), "<imports of the cells above>", "exec"), ns)
        except Exception as err:  # noqa: BLE001 - reported in the feedback
            failed.append(f"{ast.unparse(stmt)}: {type(err).__name__}: {err}"[:MAX_TEXT])
    return failed


class LoadWatch:
    """Which code files were run as a module under another name than the import system gives them (a second copy of
    a package, loaded from a file path: ``spec_from_file_location``, a package of its own name over another's
    folder), seen by an audit hook that the student's code cannot remove.  A file's own name is its path below the
    folders imports come from (``sys.path``, and where the packages already loaded live)."""

    MAX = 20

    def __init__(self):
        roots = {os.path.abspath(p) for p in sys.path if p}
        for name, module in list(sys.modules.items()):
            folders = getattr(module, "__path__", None) if "." not in name else None
            if isinstance(folders, list):  # a package's folders (torch's namespaces of operators hold none)
                roots |= {os.path.dirname(os.path.abspath(f)) for f in folders if isinstance(f, str)}
        self.roots = sorted(roots, key=len, reverse=True)
        self.found: list = []
        self._asked: set = set()

    def own_name(self, path: str):
        """The module name the import system gives the file ``path`` (None outside every root)."""
        for root in self.roots:
            if path.startswith(root + os.sep):
                parts = path[len(root) + 1:].split(os.sep)
                parts[-1] = parts[-1].split(".", 1)[0]
                return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        return None

    def __call__(self, event: str, args: tuple) -> None:
        if event == "import":
            if args[1] is None:  # a name the import system is asked for
                self._asked.add(args[0])
            elif self.own_name(os.path.abspath(args[1])) != args[0]:  # an extension module and its file
                self._note(f"{args[1]} loaded as {args[0]}")
        elif event == "exec" and getattr(args[0], "co_name", "") == "<module>":
            path = getattr(args[0], "co_filename", "")
            if os.path.isabs(path) and path.endswith(".py"):
                name = self.own_name(path)
                if name in self._asked:
                    self._asked.discard(name)
                else:  # run as a module, and never asked for by its own name
                    self._note(f"{path} run as a module (its own name, {name or 'none'}, was never imported)")

    def _note(self, what: str) -> None:
        if len(self.found) < self.MAX:
            self.found.append(what[:MAX_TEXT])


class _NoIPython:
    """``get_ipython()`` for a cell with a magic (``%time``, ``!ls``): every call does nothing."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def _case(fn, args, kwargs, no_grad: bool) -> dict:
    a, k = copy.deepcopy((args, kwargs))
    try:
        if no_grad:
            with torch.no_grad():
                out = fn(*a, **k)
        else:
            out = fn(*a, **k)
        return {"value": encode(observed(out, a, k))}
    except BaseException as err:  # noqa: BLE001 - SystemExit and KeyboardInterrupt too: a failed case
        return {"error": f"{type(err).__name__}: {err}"[:MAX_TEXT], "where": student_frame(err)}


def run_job(job: dict, calls: list) -> dict:
    """Step 4: the cell and the student's function on ``calls`` (built arguments); the result as data."""
    ns: dict[str, Any] = {"__name__": "__main__", "get_ipython": _NoIPython}
    failed = _preamble(job.get("preamble", ""), ns)
    linecache.cache[CELL] = (len(job["cell"]), None, job["cell"].splitlines(True), CELL)  # lines in tracebacks
    try:
        exec(compile(job["cell"], CELL, "exec"), ns)
    except BaseException as err:  # noqa: BLE001
        where = f"line {err.lineno}: {(err.text or '').strip()}" if isinstance(err, SyntaxError) else student_frame(err)
        return {"kind": "cell_error", "error": f"{type(err).__name__}: {err}"[:MAX_TEXT], "where": where,
                "failed_imports": failed}
    fn = ns.get(job["exercise"])
    if not callable(fn):
        return {"kind": "cell_error", "error": f"the cell defines no function {job['exercise']}", "where": "",
                "failed_imports": failed}
    if is_stub(fn):
        return {"kind": "not_done"}
    cases = [_case(fn, args, kwargs, bool(job.get("no_grad"))) for args, kwargs in calls]
    return {"kind": "cases", "cases": cases, "failed_imports": failed}


def _send(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


def _output_tail(fd: int) -> str:
    try:
        size = os.fstat(fd).st_size
        data = os.pread(fd, 4 * MAX_OUTPUT, max(0, size - 4 * MAX_OUTPUT))
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace")[-MAX_OUTPUT:]


def main(argv: list[str]) -> int:
    """Steps 1 to 5 of the module doc."""
    with open(argv[0], encoding="utf-8") as f:
        job = json.load(f)
    result_fd = int(argv[1])
    rate_fd = int(argv[2]) if len(argv) > 2 else -1
    torch.set_num_threads(1)
    BUILDERS["counted_rate"] = lambda ident, label: CountedRate(ident, label, rate_fd)
    calls = [build_call(r) for r in job["cases"]]  # built before any student code runs
    take_out(job.get("outside", {}), job["message"])
    output = os.path.join(tempfile.gettempdir(), f".output-{os.getpid()}")  # the sandbox's own /tmp
    out = os.open(output, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    devnull = os.open(os.devnull, os.O_RDONLY)
    for target, source in ((0, devnull), (1, out), (2, out)):
        os.dup2(source, target)
    _limit(job.get("limits", {}))
    watch = LoadWatch()
    sys.addaudithook(watch)
    _send(result_fd, b'{"started": true}\n')
    result = run_job(job, calls)
    result["second_copies"] = list(watch.found)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a stream the student replaced or closed
            pass
    result["output"] = _output_tail(out)
    _send(result_fd, (json.dumps(result) + "\n").encode())
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
